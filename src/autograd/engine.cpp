#include "src/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "src/autograd/accumulate_grad.h"
#include "src/core/shape.h"

namespace kiln::autograd {
namespace {

// The node the engine starts from: it hands the root gradients to the roots.
class GraphRoot final : public Node {
 public:
  GraphRoot(const std::vector<Edge>& roots, TensorList grads) : grads_(std::move(grads)) {
    next_edges_ = roots;
  }
  std::string name() const override { return "GraphRoot"; }
  TensorList apply(TensorList&&) override { return grads_; }

 private:
  TensorList grads_;
};

bool is_expandable_to(SymIntArrayRef shape, SymIntArrayRef desired) {
  if (shape.size() > desired.size()) return false;
  const size_t offset = desired.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != desired[offset + i] && shape[i] != 1) return false;
  return true;
}

// Sums a broadcast gradient back to `shape`.
Tensor sum_to(const Tensor& grad, SymIntArrayRef shape) {
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  DimVector dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.sym_sizes()[d] != 1)) dims.push_back(d);
  }
  Tensor out = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  if (lead > 0 || out.dim() != static_cast<int64_t>(shape.size())) out = out.reshape(shape);
  return out;
}

// Checks a gradient produced by `node` for the input `edge` and fixes what the engine owns: sums a
// broadcast gradient to the input's shape, casts to the input's dtype.
Tensor validate(const Node& node, size_t index, Tensor grad, const Edge& edge) {
  const GradMeta& meta = edge.node->input_metadata()[edge.input_nr];
  if (grad.sym_sizes() != SymIntArrayRef(meta.sizes)) {
    KILN_CHECK(is_expandable_to(meta.sizes, grad.sym_sizes()), ShapeError,
               "{} returned a gradient of shape {} for input {}, which has shape {}; a backward "
               "formula is wrong (please report it)",
               node.name(), shape_str(grad.sym_sizes()), index, shape_str(meta.sizes));
    grad = sum_to(grad, meta.sizes);
  }
  if (grad.dtype() != meta.dtype) grad = grad.to(meta.dtype);
  return grad;
}

void check_anomaly(const Node& node, const TensorList& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined() || !g.is_floating_point() || g.is_meta()) continue;
    KILN_CHECK(!g.isnan().any().item<bool>(), Error,
               "anomaly detected: {} returned NaN in its gradient {} (shape {}); the forward op "
               "was {}",
               node.name(), i, shape_str(g.sizes()),
               node.forward_context().empty() ? std::string("not recorded (enable anomaly mode "
                                                            "before the forward pass)")
                                              : node.forward_context());
  }
}

struct CompareSeq {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

}  // namespace

TensorList run_backward(const std::vector<Edge>& roots, TensorList root_grads,
                        const EngineOptions& options) {
  auto graph_root = std::make_shared<GraphRoot>(roots, std::move(root_grads));

  // Nodes reachable from the root, in an order where parents come first.
  std::vector<Node*> order;
  {
    std::unordered_set<Node*> seen{graph_root.get()};
    std::vector<Node*> stack{graph_root.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      order.push_back(n);
      for (const Edge& e : n->next_edges()) {
        if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
      }
    }
  }

  // Captures: which (node, input) pairs to return, and which nodes are needed to reach them.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  for (size_t i = 0; i < options.capture.size(); ++i) {
    const Edge& e = options.capture[i];
    if (e.valid()) captures[e.node.get()].push_back({e.input_nr, i});
  }
  const bool filtered = !options.capture.empty();
  std::unordered_set<Node*> needed;
  if (filtered) {
    // A node is needed if it is captured or has a needed child. Children are visited before
    // parents by iterating `order` backwards until nothing changes (the graph is a DAG).
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Node* n = *it;
        if (needed.count(n)) continue;
        bool need = captures.count(n) > 0;
        for (const Edge& e : n->next_edges())
          if (e.valid() && needed.count(e.node.get())) need = true;
        if (need) {
          needed.insert(n);
          changed = true;
        }
      }
    }
  }
  auto should_run = [&](Node* n) {
    if (!filtered) return true;
    if (!needed.count(n)) return false;
    // A captured AccumulateGrad runs only when backward(inputs=...) asked to accumulate it.
    if (dynamic_cast<AccumulateGrad*>(n) != nullptr) return options.accumulate_only_captured;
    return true;
  };

  std::unordered_map<Node*, int> dependencies;
  for (Node* n : order) {
    if (!should_run(n) && n != graph_root.get()) continue;
    for (const Edge& e : n->next_edges())
      if (e.valid()) dependencies[e.node.get()]++;
  }

  TensorList captured(options.capture.size());
  std::unordered_map<Node*, TensorList> buffers;
  std::priority_queue<Node*, std::vector<Node*>, CompareSeq> ready;
  ready.push(graph_root.get());

  const bool saved_mode = GradMode::is_enabled();
  struct RestoreMode {
    bool mode;
    ~RestoreMode() { GradMode::set_enabled(mode); }
  } restore{saved_mode};
  GradMode::set_enabled(options.create_graph);

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    TensorList inputs;
    if (auto it = buffers.find(node); it != buffers.end()) {
      inputs = std::move(it->second);
      buffers.erase(it);
    }
    inputs.resize(node->input_metadata().size());

    if (auto it = captures.find(node); it != captures.end()) {
      for (auto [input_nr, index] : it->second) {
        Tensor g = inputs[input_nr];
        if (auto* acc = dynamic_cast<AccumulateGrad*>(node); acc != nullptr && g.defined())
          g = acc->run_leaf_hooks(g);
        captured[index] = g;
      }
    }
    if (node != graph_root.get() && !should_run(node)) continue;

    TensorList outputs = node->run(std::move(inputs));
    if (AnomalyMode::is_enabled()) check_anomaly(*node, outputs);
    if (!options.keep_graph) node->release_variables();

    const auto& edges = node->next_edges();
    KILN_CHECK(outputs.size() == edges.size() || outputs.empty(), Error,
               "{} returned {} gradients but has {} inputs", node->name(), outputs.size(),
               edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.node.get();
      if (i < outputs.size() && outputs[i].defined()) {
        Tensor g = validate(*node, i, std::move(outputs[i]), e);
        TensorList& buf = buffers[next];
        buf.resize(next->input_metadata().size());
        Tensor& slot = buf[e.input_nr];
        slot = slot.defined() ? slot + g : std::move(g);
      }
      if (--dependencies[next] == 0) ready.push(next);
    }
  }
  return captured;
}

}  // namespace kiln::autograd
