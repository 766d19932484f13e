#include "src/aot/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "src/aot/max_flow.h"
#include "src/dispatch/dispatcher.h"
#include "src/sym/shape_env.h"

namespace kiln::aot {

using graph::Node;
using graph::Value;

Partitioner parse_partitioner(const std::string& name) {
  if (name == "min_cut") return Partitioner::MinCut;
  if (name == "default") return Partitioner::Default;
  throw ValueError(fmt::format(
      "partitioner: unknown partitioner '{}'; use \"min_cut\" (the default) or \"default\"", name));
}

// Symbolic sizes count at their hints, the sizes of the call being compiled (Note [AOT autograd
// with symbolic sizes] in aot_autograd.h).
namespace {

// What the cost model takes a data-dependent size (an unbacked symbol: a while_loop's iteration
// count, nonzero's length) to be, having no hint; PyTorch's partitioner uses a fallback too.
constexpr int64_t kUnbackedSizeEstimate = 64;

int64_t size_estimate(SymInt s) {
  if (!s.is_symbolic()) return s.raw();
  const sym::ShapeEnv* env = sym::ShapeEnv::current();
  const std::optional<int64_t> hint = env != nullptr ? env->hint(s.expr()) : std::nullopt;
  return hint ? *hint : (env != nullptr ? kUnbackedSizeEstimate : s.hint());
}

int64_t numel(const graph::TensorMeta& meta) {
  int64_t n = 1;
  for (const SymInt& s : meta.sizes) n *= size_estimate(s);
  return n;
}

}  // namespace

int64_t value_bytes(const graph::TensorMeta& meta) {
  return numel(meta) * static_cast<int64_t>(element_size(meta.dtype));
}

namespace {

// Note [Min-cut partitioner]
// Which forward ops the backward may compute again instead of loading their result: cheap ones
// whose inputs it can get. Never matrix products, convolutions or attention (recomputing them
// costs more than the bytes save), never random ops (a dropout mask drawn again would differ:
// masks are saved), and never reductions that shrink their input more than 4x (the input is
// what recomputing would need, so saving the output is the cheaper cut anyway, and the reduction
// is not cheap). These rules are about forward ops: an op that only the backward formulas
// introduced (not needed by any forward output) is computed in the backward whatever it is.
bool recomputable(const Node& node) {
  const OpDef& op = node.op_def();
  if (op.has_tag(kTagRandom) || node.has_side_effects()) return false;
  if (op.has_tag(kTagPointwise) || op.has_tag(kTagView) || op.has_tag(kTagFactory)) return true;
  if (op.has_tag(kTagReduction)) {
    int64_t in = 0, out = 0;
    for (const Value* v : node.inputs()) in = std::max(in, numel(v->meta()));
    for (const Value* v : node.outputs()) out = std::max(out, numel(v->meta()));
    return in <= 4 * std::max<int64_t>(out, 1);
  }
  // Copies and rearrangements that read each element once (pointwise ops and views are tagged).
  static const std::unordered_set<std::string_view> kCheapShapeOps = {"cat", "clone", "_to_copy",
                                                                      "stack", "pad"};
  return kCheapShapeOps.contains(op.name);
}

// What the joint graph's structure says about each value (Note [Partitioning the joint graph]).
struct Classes {
  std::unordered_set<const Value*> tangent;  // depends on a tangent
  std::unordered_set<const Value*> primal;   // depends on a primal
  std::unordered_set<const Value*> forward;  // needed by a forward output
};

Classes classify(const JointGraph& joint) {
  const graph::Graph& g = joint.graph;
  Classes c;
  const auto placeholders = g.placeholders();
  for (int i = 0; i < joint.num_primals; ++i) c.primal.insert(placeholders[i]);
  for (int i = 0; i < joint.num_tangents; ++i)
    c.tangent.insert(placeholders[joint.num_primals + i]);
  for (const Node* node : g.calls()) {
    bool tan = false, prim = false;
    for (const Value* v : node->inputs()) {
      tan |= c.tangent.contains(v);
      prim |= c.primal.contains(v);
    }
    // A random op's draw counts as a forward value even without inputs: it is computed once,
    // in the forward, and saved if the backward needs it (never drawn again).
    prim |= node->op_def().has_tag(kTagRandom) && !tan;
    for (const Value* v : node->outputs()) {
      if (tan) c.tangent.insert(v);
      if (prim) c.primal.insert(v);
    }
  }
  std::vector<const Value*> work;
  for (int j = 0; j < joint.num_forward_outputs; ++j) work.push_back(g.outputs()[j]);
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    if (!c.forward.insert(v).second) continue;
    if (v->producer()->kind() != graph::NodeKind::Call) continue;
    // A call runs once, so all its outputs are forward values when one is: the histories of a
    // while_loop_with_history (Note [A while_loop's history]) are computed by the forward loop
    // and saved, not made by running the loop again in the backward.
    for (const Value* out : v->producer()->outputs()) work.push_back(out);
    for (const Value* in : v->producer()->inputs()) work.push_back(in);
  }
  return c;
}

// Forward values the backward reads directly: inputs of backward nodes and gradients that do not
// depend on a tangent (a constant or a function of the primals alone).
std::vector<const Value*> backward_reads(const JointGraph& joint, const Classes& c,
                                         const std::unordered_set<const Value*>& region) {
  std::vector<const Value*> reads;
  std::unordered_set<const Value*> seen;
  auto add = [&](const Value* v) {
    if (!c.tangent.contains(v) && seen.insert(v).second) reads.push_back(v);
  };
  for (const Node* node : joint.graph.calls()) {
    bool outside = false;
    for (const Value* out : node->outputs()) outside |= !region.contains(out);
    if (!outside) continue;
    for (const Value* v : node->inputs())
      if (region.contains(v)) add(v);
  }
  for (size_t j = joint.num_forward_outputs; j < joint.graph.outputs().size(); ++j)
    add(joint.graph.outputs()[j]);
  return reads;
}

// Default: the forward computes what the forward outputs need; every value of it that the rest
// of the joint graph reads is saved.
std::vector<const Value*> default_saved(const JointGraph& joint, const Classes& c) {
  std::vector<const Value*> saved;
  for (const Value* v : backward_reads(joint, c, c.forward))
    if (c.primal.contains(v) && c.forward.contains(v)) saved.push_back(v);
  return saved;
}

// Min-cut (Note [Min-cut partitioner]). Every forward-computable value v (one that depends on a
// primal and on no tangent) is two vertices, v_in -> v_out, with its size as capacity: cutting
// that edge is saving v. Primals and values that must not be recomputed hang off the source;
// the values backward nodes read lead to the sink; a use is an infinite edge from the used
// value's out to the user's in. A minimum cut is then the cheapest saved set such that every
// value the backward needs is either saved or recomputable from saved values.
//
// The size is weighted by 1.1^d, d = the distance (in uses) from the value to the nearest value
// outside the forward (at least 1, at most 100): among cuts of similar size, the one nearer the
// backward is preferred, since a value saved early in the forward stays alive longest. Primals
// are alive anyway (the caller holds them) and carry their plain size.
std::vector<const Value*> min_cut_saved(const JointGraph& joint, const Classes& c) {
  const graph::Graph& g = joint.graph;
  std::vector<const Value*> candidates;
  std::unordered_map<const Value*, int> index;
  for (const Value* p : g.placeholders())
    if (c.primal.contains(p)) {
      index[p] = static_cast<int>(candidates.size());
      candidates.push_back(p);
    }
  for (const Node* node : g.calls())
    for (const Value* v : node->outputs())
      if (c.primal.contains(v) && !c.tangent.contains(v)) {
        index[v] = static_cast<int>(candidates.size());
        candidates.push_back(v);
      }

  // Distance from the backward, in reverse program order.
  std::unordered_map<const Value*, int> dist;
  const std::vector<Node*> calls = g.calls();
  auto distance_of = [&](const Value* v) {
    if (!c.forward.contains(v)) return 0;
    int d = 1000000000;
    for (const Node* user : v->users()) {
      if (user->kind() != graph::NodeKind::Call) continue;
      for (const Value* out : user->outputs()) {
        auto it = dist.find(out);
        d = std::min(d, (it == dist.end() ? 0 : it->second) + 1);
      }
    }
    return d;
  };
  for (auto it = calls.rbegin(); it != calls.rend(); ++it)
    for (const Value* v : (*it)->outputs()) dist[v] = distance_of(v);
  for (const Value* p : g.placeholders()) dist[p] = distance_of(p);

  const int kSource = 0, kSink = 1;
  MaxFlow flow(2 + 2 * static_cast<int>(candidates.size()));
  auto in = [&](const Value* v) { return 2 + 2 * index.at(v); };
  auto out = [&](const Value* v) { return 3 + 2 * index.at(v); };
  std::vector<int> save_edge(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    const Value* v = candidates[k];
    const Node* producer = v->producer();
    const bool is_primal = producer->kind() == graph::NodeKind::Placeholder;
    // Only a forward op can be recomputed: an op the backward formulas added (attention's
    // recomputed scores) is not in the forward at all, and computing it in the backward is no
    // repetition. Pinning it to the source would make the forward compute it, and save it.
    const bool pinned =
        is_primal || (!recomputable(*producer) &&
                      (c.forward.contains(v) || producer->op_def().has_tag(kTagRandom)));
    if (pinned) flow.add_edge(kSource, in(v), MaxFlow::kInfinite);
    const int64_t bytes = std::max<int64_t>(value_bytes(v->meta()), 1);
    const int d = std::clamp(dist.at(v), 1, 100);
    const int64_t weight =
        is_primal ? bytes
                  : static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * std::pow(1.1, d)));
    save_edge[k] = flow.add_edge(in(v), out(v), weight);
    for (const Node* user : v->users()) {
      if (user->kind() != graph::NodeKind::Call) continue;
      for (const Value* u : user->outputs())
        if (index.contains(u)) flow.add_edge(out(v), in(u), MaxFlow::kInfinite);
    }
  }
  std::unordered_set<const Value*> all_forward(candidates.begin(), candidates.end());
  for (const Value* v : backward_reads(joint, c, all_forward))
    if (index.contains(v)) flow.add_edge(out(v), kSink, MaxFlow::kInfinite);

  const int64_t total = flow.solve(kSource, kSink);
  KILN_CHECK(total < MaxFlow::kInfinite, ValueError,
             "min-cut partitioner: no finite cut separates the forward from the backward (a "
             "backward value depends on an op that can be neither saved nor recomputed); compile "
             "with partitioner=\"default\"");
  std::vector<const Value*> saved;
  const std::vector<bool>& side = flow.source_side();
  for (size_t k = 0; k < candidates.size(); ++k) {
    const Value* v = candidates[k];
    if (side[in(v)] && !side[out(v)]) saved.push_back(v);
  }
  return saved;
}

// Copies `node` into `dst`, reading mapped values.
void copy_node(const Node& node, graph::Graph& dst, std::unordered_map<const Value*, Value*>& map) {
  auto mapped = [&](const Value* v) -> Value* {
    if (v == nullptr) return nullptr;
    auto it = map.find(v);
    KILN_CHECK(it != map.end(), ValueError, "partition: {} reads %{}, which the graph lacks",
               graph::to_string(node), v->id());
    return it->second;
  };
  std::vector<graph::Arg> args;
  for (const graph::Arg& a : node.args()) {
    if (a.is_value()) {
      args.push_back(graph::Arg::value(mapped(a.as_value())));
    } else if (a.is_list()) {
      std::vector<Value*> vs;
      for (const Value* v : a.as_list()) vs.push_back(mapped(v));
      args.push_back(graph::Arg::list(std::move(vs)));
    } else {
      args.push_back(a);
    }
  }
  std::vector<graph::TensorMeta> metas;
  for (const Value* v : node.outputs()) metas.push_back(v->meta());
  std::vector<Value*> outs = dst.add_call(node.op(), std::move(args), std::move(metas));
  if (!outs.empty()) {
    outs[0]->producer()->set_grad_mode(node.grad_mode());
    outs[0]->producer()->set_has_side_effects(node.has_side_effects());
    outs[0]->producer()->set_subgraphs(node.subgraphs());  // a higher-order op's bodies
  }
  for (size_t i = 0; i < outs.size(); ++i) map[node.outputs()[i]] = outs[i];
}

// The calls needed to compute `targets` given `available` values, in program order.
std::vector<const Node*> needed_calls(const graph::Graph& g,
                                      const std::vector<const Value*>& targets,
                                      const std::unordered_set<const Value*>& available) {
  std::unordered_set<const Node*> needed;
  std::vector<const Value*> work(targets.begin(), targets.end());
  std::unordered_set<const Value*> seen;
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    if (available.contains(v) || !seen.insert(v).second) continue;
    const Node* producer = v->producer();
    KILN_CHECK(producer->kind() == graph::NodeKind::Call, ValueError,
               "partition: %{} ({}) is needed but is neither saved nor computable", v->id(),
               producer->source());
    if (!needed.insert(producer).second) continue;
    for (const Value* in : producer->inputs()) work.push_back(in);
  }
  std::vector<const Node*> ordered;
  for (const Node* node : g.calls())
    if (needed.contains(node)) ordered.push_back(node);
  return ordered;
}

graph::TensorMeta without_grad(graph::TensorMeta meta) {
  meta.requires_grad = false;
  return meta;
}

}  // namespace

Partition partition(const JointGraph& joint, Partitioner partitioner) {
  const graph::Graph& g = joint.graph;
  const Classes classes = classify(joint);
  std::vector<const Value*> saved = partitioner == Partitioner::MinCut
                                        ? min_cut_saved(joint, classes)
                                        : default_saved(joint, classes);
  // Note [Values read with item() in a partitioned graph]
  // A `_local_scalar_dense` node defines a symbol (Note [Scalar outputs in a graph]) that later
  // nodes use as a constant, not through a value edge, so following values would drop it from
  // the forward and leave the backward without the symbol. So each one's 0-dim output is saved
  // (8 bytes), which keeps the node in the forward, and the backward reads the symbol back from
  // it with a `_local_scalar_dense` of its own.
  for (const Node* node : g.calls())
    if (node->op_def().has_tag(kTagDefinesSymbol) &&
        std::find(saved.begin(), saved.end(), node->output(0)) == saved.end())
      saved.push_back(node->output(0));
  // Saved in program order, so the forward's outputs read like the joint graph.
  std::unordered_map<const Value*, size_t> order;
  for (const Value* p : g.placeholders()) order[p] = order.size();
  for (const Node* node : g.calls())
    for (const Value* v : node->outputs()) order[v] = order.size();
  std::sort(saved.begin(), saved.end(),
            [&](const Value* a, const Value* b) { return order.at(a) < order.at(b); });

  Partition result;
  const auto placeholders = g.placeholders();
  const auto outputs = g.outputs();

  // Forward: primals -> forward outputs, saved.
  {
    std::unordered_map<const Value*, Value*> map;
    std::unordered_set<const Value*> available;
    for (int i = 0; i < joint.num_primals; ++i) {
      const Value* p = placeholders[i];
      map[p] = result.forward.add_placeholder(p->producer()->source(), without_grad(p->meta()));
      available.insert(p);
    }
    std::vector<const Value*> targets(outputs.begin(), outputs.begin() + joint.num_forward_outputs);
    targets.insert(targets.end(), saved.begin(), saved.end());
    for (const Node* node : needed_calls(g, targets, available))
      copy_node(*node, result.forward, map);
    std::vector<Value*> outs;
    for (const Value* v : targets) outs.push_back(map.at(v));
    result.forward.set_outputs(std::move(outs));
  }
  // Backward: saved, tangents -> gradients.
  {
    std::unordered_map<const Value*, Value*> map;
    std::unordered_set<const Value*> available;
    for (size_t k = 0; k < saved.size(); ++k) {
      map[saved[k]] = result.backward.add_placeholder(fmt::format("saved{}", k),
                                                      without_grad(saved[k]->meta()));
      available.insert(saved[k]);
    }
    for (int i = 0; i < joint.num_tangents; ++i) {
      const Value* t = placeholders[joint.num_primals + i];
      map[t] = result.backward.add_placeholder(t->producer()->source(), without_grad(t->meta()));
      available.insert(t);
    }
    // Note [Values read with item() in a partitioned graph]
    for (const Value* v : saved) {
      const Node* definer = v->producer();
      if (definer->kind() != graph::NodeKind::Call || !definer->op_def().has_tag(kTagDefinesSymbol))
        continue;
      std::vector<graph::Arg> args{graph::Arg::value(map.at(v))};
      args.insert(args.end(), definer->args().begin() + 1, definer->args().end());
      result.backward.add_call(definer->op(), std::move(args), {without_grad(v->meta())});
      result.backward.calls().back()->set_has_side_effects(true);
    }
    std::vector<const Value*> targets(outputs.begin() + joint.num_forward_outputs, outputs.end());
    for (const Node* node : needed_calls(g, targets, available)) {
      copy_node(*node, result.backward, map);
      bool recomputed = true;
      for (const Value* v : node->outputs()) recomputed &= !classes.tangent.contains(v);
      result.recomputed_ops += recomputed && classes.forward.contains(node->output(0)) ? 1 : 0;
    }
    std::vector<Value*> outs;
    for (const Value* v : targets) outs.push_back(map.at(v));
    result.backward.set_outputs(std::move(outs));
  }
  for (const Value* v : saved) {
    const Node* p = v->producer();
    SavedValue s;
    s.name = p->kind() == graph::NodeKind::Placeholder
                 ? fmt::format("%{} = {}", v->id(), p->source())
                 : graph::to_string(*p);
    s.meta = v->meta();
    s.bytes = value_bytes(v->meta());
    result.saved_bytes += s.bytes;
    result.saved.push_back(std::move(s));
  }
  return result;
}

}  // namespace kiln::aot
