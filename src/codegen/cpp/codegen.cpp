#include "src/codegen/cpp/codegen.h"

#include "src/lower/handlers/value_range_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "kiln/error.h"
#include "src/codegen/cpp/common_statements.h"
#include "src/codegen/cpp/prelude.h"
#include "src/codegen/cpp/printer.h"
#include "src/graph/graph.h"
#include "src/util/streaming_threshold.h"

namespace kiln::codegen {
namespace {

using lower::Buffer;
using lower::ExprPtr;
using lower::VarRanges;
using sched::Kernel;
using sched::SchedNode;

constexpr int kLanes = 8;
// Note [Lane blocks] (in emit_lane_reduction's note): vector accumulators per lane block, shared
// by the kernel's nodes.
constexpr int kMaxLaneBlockVectors = 8;

// kiln_lane0, kiln_lane1, ...: one per vector of a lane block (Note [Lane blocks]).
std::vector<ExprPtr> lane_vars(size_t n) {
  std::vector<ExprPtr> v;
  for (size_t d = 0; d < n; ++d) v.push_back(sym::symbol(fmt::format("kiln_lane{}", d)));
  return v;
}

ExprPtr product(const std::vector<ExprPtr>& sizes) {
  ExprPtr p = sym::integer(1);
  for (ExprPtr s : sizes) p = sym::mul(p, s);
  return p;
}

std::string indent(int depth) { return std::string(2 * depth, ' '); }

void append(std::string& out, const std::vector<std::string>& lines, int depth) {
  for (const std::string& l : lines) out += indent(depth) + l + "\n";
}

// The body of one node printed for the loop variables `index_vars` (+ `rvars`), scalar and, when
// `vector_var` is set and the body allows it, vector.
struct PrintedNode {
  CppPrinter scalar;
  std::optional<CppPrinter> vector;
  std::optional<CppPrinter> masked;  // the vector body for a masked tail, when asked for
};

PrintedNode print_node(const SchedNode& node, const std::string& prefix, const VarRanges& ranges,
                       const std::vector<ExprPtr>& index_vars, const std::vector<ExprPtr>& rvars,
                       ExprPtr vector_var, const std::string& rlinear,
                       const std::map<std::string, std::string>& streaming,
                       const LocalBuffers& local, bool masked_tail = false) {
  // Note [Casts the value ranges prove] (printer.h): the body's value ranges first, over its loops.
  std::vector<lower::ValueRangeHandler::CastVerdict> proven_casts;
  {
    lower::ValueRangeHandler value_ranges({});
    for (const auto& [var, size] : ranges) value_ranges.set_loop_range(var, size);
    try {
      node.run_body(value_ranges, index_vars, rvars);
      proven_casts = value_ranges.casts();
    } catch (const std::exception&) {
      proven_casts.clear();  // no proof: every cast keeps Kiln's total semantics
    }
  }
  PrintedNode p{CppPrinter(prefix, ranges, nullptr), std::nullopt, std::nullopt};
  p.scalar.set_proven_casts(proven_casts);
  p.scalar.set_reduction_linear_index(rlinear);
  p.scalar.set_local_buffers(local);
  node.run_body(p.scalar, index_vars, rvars);
  if (!proven_casts.empty() && p.scalar.casts_seen() != proven_casts.size()) {
    // The two runs of the body diverged: print it again with no cast proven.
    proven_casts.clear();
    p.scalar = CppPrinter(prefix, ranges, nullptr);
    p.scalar.set_reduction_linear_index(rlinear);
    p.scalar.set_local_buffers(local);
    node.run_body(p.scalar, index_vars, rvars);
  }
  if (vector_var != nullptr) {
    CppPrinter v(prefix, ranges, vector_var);
    v.set_proven_casts(proven_casts);
    v.set_reduction_linear_index(rlinear);
    v.set_streaming(streaming);
    v.set_local_buffers(local);
    try {
      node.run_body(v, index_vars, rvars);
      p.vector = std::move(v);
    } catch (const NotVectorizable&) {
    }
  }
  if (p.vector && masked_tail) {
    // The same body with masked loads and stores: its values are numbered as the vector
    // body's, so it uses the invariants that body hoisted.
    CppPrinter m(prefix, ranges, vector_var);
    m.set_proven_casts(proven_casts);
    m.set_reduction_linear_index(rlinear);
    m.set_local_buffers(local);
    m.set_masked_tail(true);
    node.run_body(m, index_vars, rvars);
    p.masked = std::move(m);
  }
  return p;
}

// Loops `for (v = 0; v < size; ++v)` around `inner`, innermost last; the innermost as a vector
// loop plus a scalar tail when `vec_body` is given.
// The loop nest over `loop_vars`: the innermost loop runs `vec_body` (after `vec_invariant`)
// kLanes at a time when given, then `scalar_body` for the tail (or the whole loop).
void emit_loops(std::string& out, const std::vector<ExprPtr>& loop_vars,
                const std::vector<ExprPtr>& sizes, const VarRanges& ranges,
                std::vector<std::string> scalar_body, const std::vector<std::string>* vec_invariant,
                const std::vector<std::string>* vec_body_in, int depth) {
  // Note [Common statements of a fused body].
  merge_common_statements(scalar_body);
  std::optional<std::vector<std::string>> merged_vec_body;
  if (vec_body_in != nullptr) {
    merged_vec_body = *vec_body_in;
    merge_common_statements(*merged_vec_body, *vec_invariant);
  }
  const std::vector<std::string>* vec_body = merged_vec_body ? &*merged_vec_body : nullptr;
  const size_t n = loop_vars.size();
  if (n == 0) {
    out += indent(depth) + "{\n";
    append(out, scalar_body, depth + 1);
    out += indent(depth) + "}\n";
    return;
  }
  for (size_t d = 0; d + 1 < n; ++d) {
    out += indent(depth + static_cast<int>(d)) +
           fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n", loop_vars[d]->name(),
                       cpp_expr(sizes[d], ranges));
  }
  const int in = depth + static_cast<int>(n) - 1;
  const std::string v = loop_vars[n - 1]->name(), size = cpp_expr(sizes[n - 1], ranges);
  if (vec_body != nullptr) {
    append(out, *vec_invariant, in);
    out += indent(in) + fmt::format("int64_t {} = 0;\n", v);
    out += indent(in) + fmt::format("for (; {0} + {1} <= {2}; {0} += {1}) {{\n", v, kLanes, size);
    append(out, *vec_body, in + 1);
    out += indent(in) + "}\n";
    out += indent(in) + fmt::format("for (; {0} < {1}; ++{0}) {{\n", v, size);
  } else {
    out += indent(in) + fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n", v, size);
  }
  append(out, scalar_body, in + 1);
  out += indent(in) + "}\n";
  for (size_t d = n - 1; d-- > 0;) out += indent(depth + static_cast<int>(d)) + "}\n";
}

void emit_loops(std::string& out, const std::vector<ExprPtr>& loop_vars,
                const std::vector<ExprPtr>& sizes, const VarRanges& ranges,
                const std::vector<std::string>& scalar_body, const CppPrinter* vec, int depth) {
  emit_loops(out, loop_vars, sizes, ranges, scalar_body,
             vec != nullptr ? &vec->invariant() : nullptr, vec != nullptr ? &vec->body() : nullptr,
             depth);
}

class ProgramBuilder {
 public:
  ProgramBuilder(const lower::GraphLowering& lowering, const CodegenOptions& options,
                 const BodyGenerator& bodies)
      : lowering_(lowering), options_(options), bodies_(bodies) {}

  GeneratedCode build(const sched::Schedule& schedule) {
    add_symbols();
    local_ = schedule.local_buffers;
    add_buffers();
    std::string kernels;
    for (const sched::Step& step : schedule.steps) {
      if (const auto* k = std::get_if<Kernel>(&step)) {
        kernels += emit_kernel(*k);
      } else {
        add_extern(std::get<sched::ExternCall>(step));
      }
    }
    for (const lower::StridedView& v : lowering_.outputs()) {
      runtime::OutputDesc o;
      o.buffer = index_of(v.buffer->name());
      o.view = {v.sizes, v.strides, v.offset};
      program_.outputs.push_back(o);
    }
    apply_memory_plan(schedule.memory);
    GeneratedCode g;
    kernels += body_kernels_;
    g.source = "// Generated by Kiln (src/codegen/cpp). One graph, one translation unit.\n" +
               prelude(options_.vectorize) + "\n" + kernels;
    g.kernels = kernels;
    g.program = std::move(program_);
    g.loop_ir = loop_ir_;
    for (const std::string& line : schedule.fusion_log) g.loop_ir += "# fusion: " + line + "\n";
    return g;
  }

 private:
  void add_symbols() {
    for (const lower::SymbolSource& s : lowering_.symbol_sources()) {
      program_.symbols.push_back(s.symbol);
      program_.symbol_sources.push_back({s.symbol,
                                         s.is_stride ? runtime::SymbolSource::From::InputStride
                                                     : runtime::SymbolSource::From::InputSize,
                                         s.input, s.dim});
    }
    program_.num_inputs = static_cast<int>(lowering_.graph().placeholders().size());
  }

  void add_buffers() {
    for (const auto& b : lowering_.buffers()) {
      runtime::BufferDesc d;
      d.name = b->name();
      d.dtype = b->dtype();
      d.layout = {b->layout().sizes, b->layout().strides, b->layout().offset};
      switch (b->kind()) {
        case Buffer::Kind::Input:
          d.kind = runtime::BufferDesc::Kind::Input;
          d.input = static_cast<const lower::InputBuffer*>(b.get())->input_index();
          break;
        case Buffer::Kind::Computed:
          if (static_cast<const lower::ComputedBuffer*>(b.get())->store_target() != nullptr ||
              local_.count(b->name())) {
            loop_ir_ += describe(*b);
            continue;
          }
          d.kind = runtime::BufferDesc::Kind::Intermediate;
          break;
        case Buffer::Kind::Extern:
          d.kind = runtime::BufferDesc::Kind::Extern;
          break;
      }
      index_[b->name()] = static_cast<int>(program_.buffers.size());
      program_.buffers.push_back(std::move(d));
      loop_ir_ += describe(*b);
    }
  }

  // The loop IR's line for `b` (lower::describe), marking buffers this schedule keeps local.
  std::string describe(const Buffer& b) const {
    return lower::describe(b, local_.count(b.name()) ? " (kernel-local)" : "");
  }

  int index_of(const std::string& name) const {
    auto it = index_.find(name);
    KILN_CHECK(it != index_.end(), ValueError, "codegen: unknown buffer {}", name);
    return it->second;
  }

  using NodeAccesses = sched::NodeAccesses;
  const std::vector<NodeAccesses>& accesses(const Kernel& k) const { return k.accesses; }

  std::string emit_kernel(const Kernel& k) {
    // Which buffers the kernel touches, in first-use order.
    std::vector<std::string> used;
    std::set<std::string> seen, read, written;
    for (const NodeAccesses& deps : accesses(k)) {
      for (const auto& a : deps.reads) {
        if (!local_.count(a.buffer) && seen.insert(a.buffer).second) used.push_back(a.buffer);
        read.insert(a.buffer);
      }
      for (const auto& a : deps.writes) {
        if (!local_.count(a.buffer) && seen.insert(a.buffer).second) used.push_back(a.buffer);
        written.insert(a.buffer);
      }
    }
    runtime::KernelStep step;
    step.name = options_.kernel_prefix + k.name;
    std::string out = fmt::format(
        "extern \"C\" void {}(void* const* kiln_buffers, const int64_t* kiln_symbols) {{\n",
        step.name);
    for (size_t s = 0; s < program_.symbols.size(); ++s) {
      out +=
          fmt::format("  const int64_t {} = kiln_symbols[{}];\n", program_.symbols[s]->name(), s);
    }
    out += "  (void)kiln_symbols;\n";
    out += plan_streaming(read, written);
    for (size_t b = 0; b < used.size(); ++b) {
      const runtime::BufferDesc& d = program_.buffers[index_of(used[b])];
      out +=
          fmt::format("  {0}* {1} = ({0}*)kiln_buffers[{2}];\n", memory_type(d.dtype), d.name, b);
      step.buffers.push_back(index_of(used[b]));
    }
    // A kernel whose outer loops are empty (a zero size) does nothing; its index arithmetic could
    // divide by that zero. (A node whose own inner loops are empty is skipped in emit_nested.)
    bool empty = false;
    for (ExprPtr s : k.outer) empty |= s == sym::integer(0);
    if (empty) {
      out += "}\n\n";
      program_.steps.push_back(std::move(step));
      return out;
    }
    const size_t outer = k.outer.size();
    const std::vector<ExprPtr> ivars = lower::loop_vars('i', outer);
    VarRanges ranges;
    for (size_t d = 0; d < outer; ++d) ranges[ivars[d]] = k.outer[d];
    bool flat = true;
    for (const SchedNode& n : k.nodes) flat &= !n.is_reduction() && n.ranges.size() == outer;
    if (flat && outer > 0) {
      out += emit_flat_pointwise(k, ivars);
    } else if (std::optional<std::string> lanes = emit_lane_reduction(k, ivars, ranges)) {
      out += *lanes;
    } else {
      out += emit_nested(k, ivars, ranges);
    }
    out += "}\n\n";
    program_.steps.push_back(std::move(step));
    return out;
  }

  // Note [Streaming stores in generated code]
  // As in the eager kernels (Note [Streaming stores] in src/kernels/cpu/streaming_store.h), a
  // store to a line that is not in cache first reads the line, so a kernel whose output is far
  // larger than the caches moves that output through memory twice. The vector stores of a
  // float32 buffer of at least kStreamingBytes that the kernel does not read back are
  // non-temporal (where the address is 32-byte aligned; the others are normal stores), and each
  // parallel work item ends with an sfence. With symbolic sizes the size test is made when the
  // kernel starts. The threshold is the eager kernels' (util::kStreamingBytes).

  std::string plan_streaming(const std::set<std::string>& read,
                             const std::set<std::string>& written) {
    streaming_.clear();
    std::string out;
    for (const std::string& name : written) {
      if (read.count(name) || !options_.vectorize) continue;
      const runtime::BufferDesc& d = program_.buffers[index_of(name)];
      if (d.dtype != kFloat32) continue;
      const ExprPtr bytes = sym::mul(product(d.layout.sizes), sym::integer(4));
      const ExprPtr large = sym::le(sym::integer(util::kStreamingBytes), bytes);
      if (large == sym::boolean(false)) continue;
      if (large == sym::boolean(true)) {
        streaming_[name] = "true";
        continue;
      }
      const std::string flag = "kiln_stream_" + name;
      out += fmt::format("  const bool {} = {};\n", flag, cpp_expr(large, {}));
      streaming_[name] = flag;
    }
    return out;
  }

  std::string sfence(int depth) const {
    return streaming_.empty() ? "" : indent(depth) + "kiln_sfence();\n";
  }

  std::string parallel_pragma(size_t collapse, ExprPtr work, const VarRanges& ranges) const {
    if (collapse == 0) return "";
    return fmt::format("  #pragma omp parallel for collapse({}) if ({} >= {})\n", collapse,
                       cpp_expr(work, ranges), options_.parallel_threshold);
  }

  // The loops over `groups` of the original dims (sizes `sizes`) as the variables `merged`:
  // fills `index` (each original dim as (v // inner) % size of its group's variable) and
  // `ranges`, and returns the merged loops' sizes.
  static std::vector<ExprPtr> merged_loops(const std::vector<std::vector<size_t>>& groups,
                                           const std::vector<ExprPtr>& merged,
                                           const std::vector<ExprPtr>& sizes,
                                           std::vector<ExprPtr>& index, VarRanges& ranges) {
    std::vector<ExprPtr> merged_sizes(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      ExprPtr inner = sym::integer(1);
      for (size_t j = groups[g].size(); j-- > 0;) {
        const size_t d = groups[g][j];
        ExprPtr q = sym::floordiv(merged[g], inner);
        index[d] = j == 0 ? q : sym::mod(q, sizes[d]);
        inner = sym::mul(inner, sizes[d]);
      }
      merged_sizes[g] = inner;
      ranges[merged[g]] = inner;
    }
    return merged_sizes;
  }

  // Every node is pointwise over exactly the outer loops: after merging loops, the innermost loop
  // is cut into chunks that are the parallel work items, each a vector loop and a tail.
  //
  // Note [Masked vector tails]
  // The last 1-7 elements of a vectorized pointwise loop run as one more vector iteration whose
  // loads and stores touch only the first kiln_rem lanes (vmaskmovps, or a gather of kiln_rem
  // elements), instead of a scalar loop. Short rows are common (a CNN's 28-, 14- and 7-wide
  // planes: a 7-wide plane had no vector lane at all), and the scalar tail recomputed every
  // invariant per element; with the masked iteration the tail reuses the vector loop's hoisted
  // invariants. The lanes past kiln_rem compute on zeros and are never stored. Reductions keep
  // their scalar tail (their accumulators would need the mask too).
  std::string emit_flat_pointwise(const Kernel& k, const std::vector<ExprPtr>& original_vars) {
    KILN_CHECK(options_.chunk > 0 && options_.chunk % kLanes == 0, ValueError,
               "codegen: the pointwise chunk ({}) must be a positive multiple of {}",
               options_.chunk, kLanes);
    // Note [Merging loops] (src/sched/loop_plan.cpp): the schedule chose the merged loops.
    const sched::LoopGroups& groups = k.outer_loops;
    const size_t outer = groups.size();
    const std::vector<ExprPtr> ivars = lower::loop_vars('i', outer);
    std::vector<ExprPtr> index(original_vars.size());
    VarRanges ranges;
    const std::vector<ExprPtr> sizes = merged_loops(groups, ivars, k.outer, index, ranges);
    ExprPtr vv = options_.vectorize ? ivars.back() : nullptr;
    std::vector<PrintedNode> printed;
    bool vectorized = vv != nullptr;
    for (size_t n = 0; n < k.nodes.size(); ++n) {
      printed.push_back(print_node(k.nodes[n], fmt::format("n{}_", n), ranges, index, {}, vv, "0",
                                   streaming_, {}, /*masked_tail=*/true));
      vectorized &= printed.back().vector.has_value();
    }
    std::vector<std::string> scalar, vector, invariant, masked;
    for (const PrintedNode& p : printed) {
      scalar.insert(scalar.end(), p.scalar.body().begin(), p.scalar.body().end());
      if (!vectorized) continue;
      vector.insert(vector.end(), p.vector->body().begin(), p.vector->body().end());
      invariant.insert(invariant.end(), p.vector->invariant().begin(), p.vector->invariant().end());
      masked.insert(masked.end(), p.masked->body().begin(), p.masked->body().end());
    }
    // Note [Common statements of a fused body].
    merge_common_statements(scalar);
    merge_common_statements(vector, invariant);
    merge_common_statements(masked, invariant);
    std::string out = parallel_pragma(outer, product(k.outer), ranges);
    int depth = 1;
    for (size_t d = 0; d + 1 < outer; ++d, ++depth) {
      out += indent(depth) + fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n",
                                         ivars[d]->name(), cpp_expr(sizes[d], ranges));
    }
    const std::string v = ivars.back()->name(), size = cpp_expr(sizes.back(), ranges);
    out += indent(depth) +
           fmt::format("for (int64_t kiln_chunk = 0; kiln_chunk < {0}; kiln_chunk += {1}) {{\n",
                       size, options_.chunk);
    out += indent(depth + 1) +
           fmt::format("const int64_t kiln_end = kiln_min<int64_t>(kiln_chunk + {}, {});\n",
                       options_.chunk, size);
    out += indent(depth + 1) + fmt::format("int64_t {} = kiln_chunk;\n", v);
    if (vectorized) {
      append(out, invariant, depth + 1);
      out += indent(depth + 1) +
             fmt::format("for (; {0} + {1} <= kiln_end; {0} += {1}) {{\n", v, kLanes);
      append(out, vector, depth + 2);
      out += indent(depth + 1) + "}\n";
      // Note [Masked vector tails]
      out += indent(depth + 1) + fmt::format("if ({} < kiln_end) {{\n", v);
      out += indent(depth + 2) + fmt::format("const int64_t kiln_rem = kiln_end - {};\n", v);
      append(out, masked, depth + 2);
      out += indent(depth + 1) + "}\n";
    } else {
      out += indent(depth + 1) + fmt::format("for (; {0} < kiln_end; ++{0}) {{\n", v);
      append(out, scalar, depth + 2);
      out += indent(depth + 1) + "}\n";
    }
    out += sfence(depth + 1);
    out += indent(depth) + "}\n";
    for (size_t d = 0; d + 1 < outer; ++d) out += indent(static_cast<int>(outer - 1 - d)) + "}\n";
    return out;
  }

  // Note [Reductions across lanes]
  // A reduction over outer dims of its input, keeping a contiguous inner one (a bias gradient:
  // the sum over rows of a (rows, cols) tensor), reads with a large stride along the reduction
  // and unit stride along the output. Vectorized over the reduction it would gather; instead
  // each of 8 lanes accumulates one output element while the reduction loops run outside them:
  // unit-stride vector loads, no horizontal fold, one vector store per 8 outputs. Used for a
  // kernel of float32 sum/max/min nodes over the same reduction loops (siblings such as a layer
  // norm's weight and bias gradients share one pass over the rows), none reading another's
  // output, whose reads all move by 0 or 1 along the last output dim and, for at least one, by
  // more than 1 along the innermost reduction dim; a scalar loop handles the last (size % 8)
  // outputs.
  //
  // Note [Lane blocks]
  // Eight lanes read 32 bytes of each row, half a cache line, and the next eight lanes come back
  // for the other half only after the whole column: a [2048, 1024] bias gradient summed 8 lanes
  // at a time ran at 7 GB/s, the same sum 64 lanes (8 vectors) at a time at 41 GB/s (each row
  // visit reads four whole lines, and the loads of a row overlap). So a block is up to
  // kMaxLaneBlockVectors vectors of lanes, divided among the kernel's nodes (each vector of each
  // node holds an accumulator in a register), and no wider than an eighth of the lanes, so that
  // small outputs still give the threads several blocks. The last partial block runs 8-lane
  // vectors, then scalars.
  std::optional<std::string> emit_lane_reduction(const Kernel& k, const std::vector<ExprPtr>& ivars,
                                                 const VarRanges& base) {
    if (!options_.vectorize || k.nodes.empty() || ivars.empty()) return std::nullopt;
    const std::vector<ExprPtr>& reduction_ranges = k.nodes[0].reduction_ranges;
    std::set<std::string> written;
    for (const SchedNode& node : k.nodes) {
      if (!node.is_reduction() || node.ranges.size() != ivars.size() ||
          node.reduction_ranges != reduction_ranges || reduction_ranges.empty() ||
          local_.count(node.buffer->name()))
        return std::nullopt;
      written.insert(node.buffer->name());
    }
    for (ExprPtr r : reduction_ranges)
      if (r == sym::integer(0)) return std::nullopt;
    const std::vector<ExprPtr> rvars = lower::loop_vars('r', reduction_ranges.size());
    VarRanges ranges = base;
    for (size_t d = 0; d < rvars.size(); ++d) ranges[rvars[d]] = reduction_ranges[d];
    ExprPtr lane = ivars.back();
    bool strided_reduction = false;
    for (const SchedNode& node : k.nodes) {
      lower::DependencyHandler deps;
      node.run_body(deps, ivars, rvars);
      for (const auto& a : deps.reads()) {
        if (written.contains(a.buffer)) return std::nullopt;
        // A read through a reshape indexes with // and % until the loop ranges simplify them.
        const ExprPtr index = lower::simplify_index(a.index, ranges);
        auto along_lane = lower::linear_coefficient(index, lane);
        if (!along_lane || (*along_lane != sym::integer(0) && *along_lane != sym::integer(1)))
          return std::nullopt;
        auto along_r = lower::linear_coefficient(index, rvars.back());
        strided_reduction |= along_r && *along_r != sym::integer(0) && *along_r != sym::integer(1);
      }
    }
    if (!strided_reduction) return std::nullopt;
    const size_t outer = ivars.size();
    const ExprPtr lanes_extent = k.outer.back();
    // Note [Lane blocks]: how many 8-lane vectors one block accumulates side by side.
    int vectors = kMaxLaneBlockVectors / static_cast<int>(k.nodes.size());
    if (lanes_extent->is_integer())
      vectors = std::min<int64_t>(vectors, lanes_extent->value() / (kLanes * 8));
    vectors = std::max(vectors, 1);
    const std::vector<ExprPtr> block_lanes = lane_vars(static_cast<size_t>(vectors));
    // Printers: the scalar tail, one 8-lane vector (the tail's vectors) and the block's vectors.
    auto printers = [&](ExprPtr lane, const std::string& tag, bool vector) {
      VarRanges r = ranges;
      r[lane] = lanes_extent;
      std::vector<ExprPtr> index = ivars;
      index.back() = lane;
      std::vector<CppPrinter> out;
      out.reserve(k.nodes.size());
      for (size_t n = 0; n < k.nodes.size(); ++n) {
        out.emplace_back(fmt::format("n{}_{}", n, tag), r, vector ? lane : nullptr);
        out.back().set_lane_reduction(vector);
        out.back().set_reduction_linear_index("0");
        k.nodes[n].run_body(out.back(), index, rvars);
      }
      return out;
    };
    std::vector<CppPrinter> scalars = printers(lane, "", false), lanes;
    std::vector<std::vector<CppPrinter>> block;
    try {
      lanes = printers(lane, "", true);
      for (int v = 0; v < vectors; ++v)
        block.push_back(printers(block_lanes[v], fmt::format("v{}_", v), true));
    } catch (const NotVectorizable&) {
      return std::nullopt;
    }
    // One r loop nest whose body runs every printer of `group`, between their before and after.
    auto emit_group = [&](std::string& out, const std::vector<const CppPrinter*>& group,
                          int depth) {
      std::vector<std::string> body;
      for (const CppPrinter* p : group) {
        append(out, p->before(), depth);
        body.insert(body.end(), p->invariant().begin(), p->invariant().end());
      }
      for (const CppPrinter* p : group) body.insert(body.end(), p->body().begin(), p->body().end());
      emit_loops(out, rvars, reduction_ranges, ranges, body, nullptr, depth);
      for (const CppPrinter* p : group) append(out, p->after(), depth);
    };
    auto pointers = [](const std::vector<CppPrinter>& v) {
      std::vector<const CppPrinter*> out;
      for (const CppPrinter& p : v) out.push_back(&p);
      return out;
    };
    const std::string n = cpp_expr(lanes_extent, base);
    const int width = kLanes * vectors;
    // The work is every element read, not the outputs: a bias gradient sums millions of values
    // into a thousand.
    std::string out =
        parallel_pragma(outer, sym::mul(product(k.outer), product(reduction_ranges)), base);
    for (size_t d = 0; d + 1 < outer; ++d)
      out += indent(1 + static_cast<int>(d)) +
             fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n", ivars[d]->name(),
                         cpp_expr(k.outer[d], base));
    int depth = static_cast<int>(outer);
    out += indent(depth) +
           fmt::format(
               "for (int64_t kiln_block = 0; kiln_block < (({} + {}) / {}); ++kiln_block) "
               "{{\n",
               n, width - 1, width);
    out += indent(depth + 1) + fmt::format("const int64_t kiln_start = kiln_block * {};\n", width);
    out += indent(depth + 1) + fmt::format("if (kiln_start + {} <= {}) {{\n", width, n);
    std::vector<const CppPrinter*> whole_block;
    for (int v = 0; v < vectors; ++v) {
      out += indent(depth + 2) + fmt::format("const int64_t {} = kiln_start + {};\n",
                                             block_lanes[v]->name(), kLanes * v);
      for (const CppPrinter& p : block[v]) whole_block.push_back(&p);
    }
    emit_group(out, whole_block, depth + 2);
    out += indent(depth + 1) + "} else {\n";
    out += indent(depth + 2) + "int64_t kiln_lane = kiln_start;\n";
    if (vectors > 1) {
      out += indent(depth + 2) +
             fmt::format("for (; kiln_lane + {} <= {}; kiln_lane += {}) {{\n", kLanes, n, kLanes);
      out += indent(depth + 3) + fmt::format("const int64_t {} = kiln_lane;\n", lane->name());
      emit_group(out, pointers(lanes), depth + 3);
      out += indent(depth + 2) + "}\n";
    }
    out += indent(depth + 2) +
           fmt::format("for (int64_t {0} = kiln_lane; {0} < {1}; ++{0}) {{\n", lane->name(), n);
    emit_group(out, pointers(scalars), depth + 3);
    out += indent(depth + 2) + "}\n";
    out += indent(depth + 1) + "}\n";
    out += indent(depth) + "}\n";
    for (size_t d = outer - 1; d-- > 0;) out += indent(1 + static_cast<int>(d)) + "}\n";
    return out;
  }

  // Nodes [first, end) of `k` as one loop nest (Note [Sibling reductions share their loops]).
  std::string emit_sibling_reductions(const Kernel& k, const sched::NodeGroup& group,
                                      const std::vector<ExprPtr>& ivars, const VarRanges& base,
                                      int depth) {
    const size_t first = group.first, end = group.end;
    // Note [A row's producer shares its reductions' loop]: a pointwise first node is indexed by
    // the outer and the reduction variables.
    auto is_producer = [&](size_t n) { return !k.nodes[n].is_reduction(); };
    auto concat = [](std::vector<ExprPtr> a, const std::vector<ExprPtr>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    const std::vector<ExprPtr>& sizes =
        k.nodes[is_producer(first) ? first + 1 : first].reduction_ranges;
    VarRanges ranges = base;
    const std::vector<ExprPtr> rvars = lower::loop_vars('r', sizes.size());
    for (size_t d = 0; d < rvars.size(); ++d) ranges[rvars[d]] = sizes[d];
    // Note [Merging loops], as the schedule decided over every sibling's accesses.
    std::vector<ExprPtr> loop_vars = rvars, loop_sizes = sizes, rindex = rvars;
    if (!group.reduction_loops.empty()) {
      loop_vars = lower::loop_vars('q', group.reduction_loops.size());
      loop_sizes = merged_loops(group.reduction_loops, loop_vars, sizes, rindex, ranges);
    }
    ExprPtr rlin = sym::integer(0);
    for (size_t d = 0; d < loop_vars.size(); ++d)
      rlin = sym::add(sym::mul(rlin, loop_sizes[d]), loop_vars[d]);
    ExprPtr vv = options_.vectorize && !loop_vars.empty() ? loop_vars.back() : nullptr;
    std::vector<PrintedNode> printed;
    bool vector = vv != nullptr;
    for (size_t n = first; n < end; ++n) {
      if (is_producer(n)) {
        printed.push_back(print_node(k.nodes[n], fmt::format("n{}_", n), ranges,
                                     concat(ivars, rindex), {}, vv, "0", streaming_,
                                     kernel_local_));
      } else {
        printed.push_back(print_node(k.nodes[n], fmt::format("n{}_", n), ranges, ivars, rindex, vv,
                                     cpp_expr(rlin, ranges), streaming_, kernel_local_));
      }
      vector &= printed.back().vector.has_value();
    }
    std::string out = indent(depth) + "{\n";
    std::vector<std::string> scalar_body, vec_invariant, vec_body;
    for (const PrintedNode& p : printed) {
      append(out, p.scalar.before(), depth + 1);
      scalar_body.insert(scalar_body.end(), p.scalar.body().begin(), p.scalar.body().end());
      if (!vector) continue;
      append(out, p.vector->before(), depth + 1);
      vec_invariant.insert(vec_invariant.end(), p.vector->invariant().begin(),
                           p.vector->invariant().end());
      vec_body.insert(vec_body.end(), p.vector->body().begin(), p.vector->body().end());
    }
    emit_loops(out, loop_vars, loop_sizes, ranges, scalar_body, vector ? &vec_invariant : nullptr,
               vector ? &vec_body : nullptr, depth + 1);
    for (const PrintedNode& p : printed) {
      if (vector) append(out, p.vector->fold(), depth + 1);
      append(out, p.scalar.after(), depth + 1);
    }
    out += indent(depth) + "}\n";
    return out;
  }

  // Outer loops shared by all nodes; inside, each node runs its own inner (pointwise) or
  // reduction loops.
  std::string emit_nested(const Kernel& k, const std::vector<ExprPtr>& ivars,
                          const VarRanges& base) {
    const size_t outer = ivars.size();
    ExprPtr work = product(k.outer);
    ExprPtr inner_max = sym::integer(1);
    for (const SchedNode& n : k.nodes) {
      std::vector<ExprPtr> rest(n.ranges.begin() + static_cast<long>(outer), n.ranges.end());
      rest.insert(rest.end(), n.reduction_ranges.begin(), n.reduction_ranges.end());
      inner_max = sym::max(inner_max, product(rest));
    }
    std::string out = parallel_pragma(outer, sym::mul(work, inner_max), base);
    for (size_t d = 0; d < outer; ++d) {
      out += indent(1 + static_cast<int>(d)) +
             fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n", ivars[d]->name(),
                         cpp_expr(k.outer[d], base));
    }
    const int depth = 1 + static_cast<int>(outer);
    kernel_local_ = {{}, ivars};
    for (const SchedNode& node : k.nodes) {
      auto it = local_.find(node.buffer->name());
      if (it == local_.end()) continue;
      kernel_local_.names.insert(it->first);
      out += indent(depth) + fmt::format("{} {}[{}] __attribute__((aligned(32)));\n",
                                         memory_type(node.buffer->dtype()), it->first, it->second);
    }
    // The schedule grouped the nodes into loop nests (Note [Sibling reductions share their
    // loops] in src/sched/loop_plan.cpp).
    for (const sched::NodeGroup& group : k.groups) {
      const size_t n = group.first;
      const SchedNode& node = k.nodes[n];
      if (std::find(node.ranges.begin(), node.ranges.end(), sym::integer(0)) != node.ranges.end())
        continue;
      if (group.end > group.first + 1) {
        out += emit_sibling_reductions(k, group, ivars, base, depth);
        continue;
      }
      VarRanges ranges = base;
      const std::vector<ExprPtr> jvars = lower::loop_vars('j', node.ranges.size() - outer);
      const std::vector<ExprPtr> rvars = lower::loop_vars('r', node.reduction_ranges.size());
      std::vector<ExprPtr> index_vars = ivars;
      index_vars.insert(index_vars.end(), jvars.begin(), jvars.end());
      for (size_t d = 0; d < jvars.size(); ++d) ranges[jvars[d]] = node.ranges[outer + d];
      for (size_t d = 0; d < rvars.size(); ++d) ranges[rvars[d]] = node.reduction_ranges[d];
      const std::string prefix = fmt::format("n{}_", n);
      out += indent(depth) + "{\n";
      if (node.is_reduction()) {
        // Note [Merging loops], for the reduction loops, as the schedule decided.
        std::vector<ExprPtr> loop_vars = rvars, loop_sizes = node.reduction_ranges;
        std::vector<ExprPtr> rindex = rvars;
        if (!group.reduction_loops.empty()) {
          loop_vars = lower::loop_vars('q', group.reduction_loops.size());
          loop_sizes =
              merged_loops(group.reduction_loops, loop_vars, node.reduction_ranges, rindex, ranges);
        }
        // Row-major linear index over the reduction loops (argmax/argmin report it).
        ExprPtr rlin = sym::integer(0);
        for (size_t d = 0; d < loop_vars.size(); ++d)
          rlin = sym::add(sym::mul(rlin, loop_sizes[d]), loop_vars[d]);
        ExprPtr vv = options_.vectorize && !loop_vars.empty() ? loop_vars.back() : nullptr;
        PrintedNode p = print_node(node, prefix, ranges, index_vars, rindex, vv,
                                   cpp_expr(rlin, ranges), streaming_, kernel_local_);
        append(out, p.scalar.before(), depth + 1);
        if (p.vector) append(out, p.vector->before(), depth + 1);
        // Vector accumulators are folded into the scalar ones after all loops.
        if (p.vector) {
          emit_loops(out, loop_vars, loop_sizes, ranges, p.scalar.body(), &*p.vector, depth + 1);
          append(out, p.vector->fold(), depth + 1);
        } else {
          emit_loops(out, loop_vars, loop_sizes, ranges, p.scalar.body(), nullptr, depth + 1);
        }
        append(out, p.scalar.after(), depth + 1);
      } else {
        ExprPtr vv = options_.vectorize && !jvars.empty() ? jvars.back() : nullptr;
        PrintedNode p =
            print_node(node, prefix, ranges, index_vars, {}, vv, "0", streaming_, kernel_local_);
        std::vector<ExprPtr> inner_sizes(node.ranges.begin() + static_cast<long>(outer),
                                         node.ranges.end());
        emit_loops(out, jvars, inner_sizes, ranges, p.scalar.body(),
                   p.vector ? &*p.vector : nullptr, depth + 1);
      }
      out += indent(depth) + "}\n";
    }
    out += sfence(depth);
    kernel_local_ = {};
    for (size_t d = outer; d-- > 0;) out += indent(1 + static_cast<int>(d)) + "}\n";
    return out;
  }

  void add_extern(const sched::ExternCall& call) {
    const lower::ExternBuffer* first = call.outputs.front();
    const graph::Node& node = *first->node();
    // A one-node graph: a placeholder per tensor the call reads, the call, its outputs.
    graph::Graph g;
    std::unordered_map<const graph::Value*, graph::Value*> map;
    runtime::ExternStep step;
    const std::vector<graph::Value*> inputs = node.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      map[inputs[i]] = g.add_placeholder(fmt::format("arg{}", i), inputs[i]->meta());
      const lower::StridedView& v = first->inputs()[i];
      step.args.push_back(index_of(v.buffer->name()));
      step.arg_views.push_back({v.sizes, v.strides, v.offset});
    }
    std::vector<graph::Arg> args;
    for (const graph::Arg& a : node.args()) {
      if (a.is_value()) {
        args.push_back(graph::Arg::value(map.at(a.as_value())));
      } else if (a.is_list()) {
        std::vector<graph::Value*> list;
        for (graph::Value* v : a.as_list()) list.push_back(v == nullptr ? nullptr : map.at(v));
        args.push_back(graph::Arg::list(std::move(list)));
      } else {
        args.push_back(a);
      }
    }
    std::vector<graph::TensorMeta> metas;
    for (const graph::Value* o : node.outputs()) metas.push_back(o->meta());
    std::vector<graph::Value*> outs = g.add_call(node.op(), std::move(args), std::move(metas));
    g.calls().back()->set_subgraphs(node.subgraphs());
    g.set_outputs(outs);
    step.call = graph::to_string(g);
    if (!node.subgraphs().empty()) add_bodies(node, step);
    for (const lower::ExternBuffer* b : call.outputs) {
      while (step.outputs.size() <= static_cast<size_t>(b->output_index()))
        step.outputs.push_back(-1);
      step.outputs[b->output_index()] = index_of(b->name());
      // Unbacked sizes of data-dependent outputs are bound from the output itself.
      for (size_t d = 0; d < b->layout().sizes.size(); ++d) {
        ExprPtr s = b->layout().sizes[d];
        if (!s->is_symbol()) continue;
        bool known = false;
        for (ExprPtr k : program_.symbols) known |= k == s;
        if (known) continue;
        program_.symbols.push_back(s);
        program_.symbol_sources.push_back({s, runtime::SymbolSource::From::ExternOutputSize,
                                           static_cast<int>(program_.steps.size()),
                                           static_cast<int>(d), b->output_index()});
      }
    }
    // Note [Scalar outputs in a graph]: the symbol the node defines is bound from its value.
    if (node.op_def().has_tag(kTagDefinesSymbol)) {
      const SymInt symbol = node.args().at(1).as_constant().to_sym_int();
      KILN_CHECK(
          symbol.is_symbolic() && symbol.expr()->is_symbol(), ValueError,
          "codegen: {} defines {}, which is not a symbol", node.op_def().name,
          symbol.is_symbolic() ? sym::to_string(symbol.expr()) : std::to_string(symbol.raw()));
      program_.symbols.push_back(symbol.expr());
      program_.symbol_sources.push_back({symbol.expr(),
                                         runtime::SymbolSource::From::ExternOutputValue,
                                         static_cast<int>(program_.steps.size()), 0, 0});
    }
    program_.steps.push_back(std::move(step));
  }

  // Note [Higher-order ops in a program] (src/runtime/program.h): each subgraph becomes a Program
  // whose kernels join this translation unit, named after the call's first output and the role.
  void add_bodies(const graph::Node& node, runtime::ExternStep& step) {
    KILN_CHECK(bodies_ != nullptr, NotImplementedError,
               "codegen: {} is a higher-order op, and no body generator was given for its "
               "subgraphs",
               node.op_def().name);
    for (const graph::Subgraph& sub : node.subgraphs()) {
      CodegenOptions body_options = options_;
      body_options.kernel_prefix = fmt::format(
          "{}{}_{}_", options_.kernel_prefix,
          node.outputs().empty() ? std::string("call") : "v" + node.outputs()[0]->name().substr(1),
          sub.name);
      GeneratedCode body = bodies_(*sub.graph, body_options);
      step.bodies.push_back(std::move(body.program));
      body_kernels_ += body.kernels;
      loop_ir_ += fmt::format("# {} of {}:\n{}", sub.name, graph::to_string(node), body.loop_ir);
    }
  }

  // Note [Buffer reuse] (src/sched/memory_plan.cpp): the schedule chose the slots.
  void apply_memory_plan(const sched::MemoryPlan& plan) {
    for (runtime::BufferDesc& d : program_.buffers)
      if (d.kind == runtime::BufferDesc::Kind::Intermediate) d.slot = plan.slot_of.at(d.name);
    program_.slot_bytes = plan.slot_bytes;
  }

  const lower::GraphLowering& lowering_;
  const CodegenOptions& options_;
  const BodyGenerator& bodies_;
  std::string body_kernels_;  // the kernels of higher-order ops' bodies
  runtime::Program program_;
  std::map<std::string, int> index_;
  std::map<std::string, std::string> streaming_;  // of the kernel being emitted
  std::map<std::string, int64_t> local_;  // the schedule's Note [Local buffers]: name -> row size
  LocalBuffers kernel_local_;             // those of the kernel being emitted
  std::string loop_ir_;
};

}  // namespace

GeneratedCode generate(const lower::GraphLowering& lowering, const sched::Schedule& schedule,
                       const CodegenOptions& options, const BodyGenerator& bodies) {
  return ProgramBuilder(lowering, options, bodies).build(schedule);
}

}  // namespace kiln::codegen
