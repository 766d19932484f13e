// Decompositions of the shape composites (which only hand-built graphs contain; kiln::compile
// records the ops they call): stack -> unsqueeze + cat; split, split_with_sizes, chunk -> one
// slice per piece. The pieces' sizes are read from the node's own output metas, so symbolic
// sizes and the eager rules for the last and for empty pieces come along unchanged.
#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

int64_t wrap(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

// stack(tensors, dim) = cat([t.unsqueeze(dim) for t in tensors], dim).
std::vector<Value*> stack(DecompBuilder& b) {
  const std::vector<Value*>& tensors = b.node().args()[0].as_list();
  const int64_t rank = static_cast<int64_t>(tensors.at(0)->meta().sizes.size()) + 1;
  const int64_t dim = wrap(b.constant(1).to_int(), rank);
  std::vector<Value*> parts;
  for (Value* t : tensors) parts.push_back(b.unsqueeze(t, dim));
  return {b.call1("cat", {graph::Arg::list(parts), DecompBuilder::C(IValue(dim))})};
}

// split / split_with_sizes / chunk(self, _, dim): output i is self[offset_i : offset_i + size_i]
// along dim.
std::vector<Value*> split_pieces(DecompBuilder& b) {
  Value* self = b.input(0);
  const int64_t dim = wrap(b.constant(2).to_int(), static_cast<int64_t>(self->meta().sizes.size()));
  std::vector<Value*> out;
  SymInt offset = 0;
  for (size_t i = 0; i < b.node().outputs().size(); ++i) {
    const SymInt size = b.output_meta(i).sizes[static_cast<size_t>(dim)];
    out.push_back(b.call1(
        "slice",
        {DecompBuilder::V(self), DecompBuilder::C(IValue(dim)), DecompBuilder::C(IValue(offset)),
         DecompBuilder::C(IValue(offset + size)), DecompBuilder::C(IValue(int64_t{1}))}));
    offset = offset + size;
  }
  return out;
}

}  // namespace

void register_shape_decompositions(DecompositionTable& t) {
  t.add("stack", stack);
  t.add("split", split_pieces);
  t.add("split_with_sizes", split_pieces);
  t.add("chunk", split_pieces);
}

}  // namespace kiln::lower
