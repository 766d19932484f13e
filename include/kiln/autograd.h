// The public autograd API: grad mode guards, the functional kiln::grad, anomaly mode, and the
// backward Node that hooks attach to. The engine and the derivative table live in src/autograd/.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// ---- grad mode (thread-local, like torch.no_grad / torch.enable_grad) ----

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Ops run inside do not record backward nodes; their outputs do not require grad.
class NoGradGuard {
 public:
  NoGradGuard() : saved_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(saved_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool saved_;
};

// Turns recording back on inside a NoGradGuard.
class EnableGradGuard {
 public:
  EnableGradGuard() : saved_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(saved_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool saved_;
};

// Inference mode: no recording, as NoGradGuard, and it says so in its name. Kiln has no separate
// "inference tensor" kind; tensors made here are ordinary tensors that do not require grad.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true)
      : saved_(GradMode::is_enabled()), saved_inference_(is_enabled()) {
    if (enabled) GradMode::set_enabled(false);
    set_enabled(enabled);
  }
  ~InferenceMode() {
    GradMode::set_enabled(saved_);
    set_enabled(saved_inference_);
  }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  static void set_enabled(bool enabled);
  bool saved_;
  bool saved_inference_;
};

// ---- anomaly mode ----

// While enabled, every backward node remembers the forward op that created it (name and input
// shapes), and the engine checks each gradient it computes: a NaN raises kiln::Error naming the
// backward node and the forward op.
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : saved_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(saved_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool saved_;
};

// ---- the functional interface ----

// Gradients of `outputs` with respect to `inputs` (returned, not accumulated into .grad()).
// grad_outputs may be empty when every output has one element. retain_graph defaults to
// create_graph; create_graph records the backward pass so the result can be differentiated again.
// An input the outputs do not depend on is an error unless allow_unused (then it gets an undefined
// tensor).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

namespace autograd {

using TensorList = std::vector<Tensor>;

// Runs backward from several roots at once (Tensor::backward is this with one root).
void backward(const TensorList& roots, const TensorList& grad_roots = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const TensorList& inputs = {});

struct Edge {
  std::shared_ptr<Node> node;  // null: the input does not need a gradient
  uint32_t input_nr = 0;       // which input of `node` this gradient feeds
  bool valid() const { return node != nullptr; }
};

// Metadata of one gradient a node receives (= one output of its forward op).
struct GradMeta {
  SymDimVector
      sizes;  // symbolic while AOT autograd traces (Note [AOT autograd with symbolic sizes])
  ScalarType dtype = kFloat32;
};

// A node of the backward graph: takes the gradients of a forward op's outputs and returns the
// gradients of its inputs, one per next edge.
//
// Hooks: a pre-hook sees (and may replace) the incoming gradients before the node runs; a hook
// sees the gradients it produced and the incoming ones, and may replace the produced ones.
// Returning std::nullopt keeps the gradients as they are.
class Node : public std::enable_shared_from_this<Node> {
 public:
  using PreHook = std::function<std::optional<TensorList>(const TensorList& grad_outputs)>;
  using PostHook = std::function<std::optional<TensorList>(const TensorList& grad_inputs,
                                                           const TensorList& grad_outputs)>;

  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward", "AccumulateGrad", ...
  virtual std::string name() const = 0;
  // Computes the input gradients from the output gradients.
  virtual TensorList apply(TensorList&& grad_outputs) = 0;
  // Frees saved tensors once backward has run without retain_graph.
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  size_t num_outputs() const { return next_edges_.size(); }
  const std::vector<GradMeta>& input_metadata() const { return input_metadata_; }
  uint32_t add_input_metadata(const Tensor& t);
  // Creation order: the engine runs later nodes first.
  uint64_t sequence_nr() const { return sequence_nr_; }

  void register_prehook(PreHook hook) { pre_hooks_.push_back(std::move(hook)); }
  void register_hook(PostHook hook) { post_hooks_.push_back(std::move(hook)); }
  // Tensor hooks of non-leaf outputs: applied to the gradient of output `output_nr`.
  size_t add_tensor_hook(uint32_t output_nr, GradHook hook);
  void remove_tensor_hook(size_t id);
  // What anomaly mode recorded about the forward op ("mul(f32[3], f32[3])"); empty otherwise.
  const std::string& forward_context() const { return forward_context_; }
  void set_forward_context(std::string context) { forward_context_ = std::move(context); }

  // Runs tensor hooks, pre-hooks, apply and post-hooks (what the engine calls).
  TensorList run(TensorList&& grad_outputs);

 protected:
  std::vector<Edge> next_edges_;
  std::vector<GradMeta> input_metadata_;

 private:
  struct TensorHook {
    size_t id;
    uint32_t output_nr;
    GradHook fn;
  };
  uint64_t sequence_nr_;
  std::vector<TensorHook> tensor_hooks_;
  std::vector<PreHook> pre_hooks_;
  std::vector<PostHook> post_hooks_;
  std::string forward_context_;
};

}  // namespace autograd
}  // namespace kiln
