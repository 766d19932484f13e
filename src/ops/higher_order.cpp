// The op table's entries for the higher-order ops that a graph can hold (Note [Subgraphs of a
// higher-order op] in src/graph/graph.h). An entry gives the op its name, schema and tag, so a
// graph node can name it and passes can ask what it reads; it has no kernel, because what it
// computes is its subgraphs': the graph interpreter runs it (src/graph/higher_order.cpp), and
// eager code calls kiln::cond and friends (src/ops/control_flow.cpp), which run C++ bodies.
#include "src/ops/registry.h"

namespace kiln {
namespace {

void meta_higher_order(OpCall& call) {
  throw NotImplementedError(fmt::format(
      "{}: a higher-order op runs only from a graph, which holds its bodies as subgraphs; call "
      "kiln::{} with C++ callables instead",
      call.op().name, call.op().name));
}

OpDef higher_order_op(const char* name, const char* schema) {
  return {.name = name,
          .schema = schema,
          .family = "control_flow",
          .meta = meta_higher_order,
          .tags = kTagHigherOrder};
}

}  // namespace

void register_higher_order_ops(OpRegistry& r) {
  r.add(higher_order_op("cond", "cond(Tensor pred, Tensor[] operands) -> Tensor[]"));
  r.add(higher_order_op("while_loop",
                        "while_loop(Tensor[] carried, Tensor[] additional_inputs) -> Tensor[]"));
  r.add(higher_order_op(
      "while_loop_with_history",
      "while_loop_with_history(Tensor[] carried, Tensor[] additional_inputs) -> Tensor[]"));
  r.add(higher_order_op(
      "scan",
      "scan(Tensor[] init, Tensor[] xs, Tensor[] additional_inputs, bool reverse) -> "
      "Tensor[]"));
}

}  // namespace kiln
