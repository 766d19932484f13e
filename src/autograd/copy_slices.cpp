#include "src/autograd/copy_slices.h"

#include "src/core/shape.h"
#include "src/core/tensor_factory.h"

namespace kiln::autograd {
namespace {

struct Geometry {
  DimVector sizes;
  DimVector strides;
  int64_t offset;
  explicit Geometry(const Tensor& t)
      : sizes(t.sizes().begin(), t.sizes().end()),
        strides(t.strides().begin(), t.strides().end()),
        offset(t.storage_offset()) {}
};

// The gradient of the base, laid out like the base so the view's geometry addresses it.
Tensor like_base(const Tensor& grad, const Geometry& base) {
  Tensor out = empty_strided_tensor(base.sizes, base.strides, grad.dtype());
  out.copy_(grad);
  return out;
}

Tensor view_in(const Tensor& base_like, const Geometry& base, const Geometry& view) {
  return base_like.as_strided(view.sizes, view.strides,
                              base_like.storage_offset() + view.offset - base.offset);
}

// next_edges: [base's old history, then fn's inputs other than the view].
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn, Edge base_edge,
             bool fn_has_view_edge)
      : base_(base), view_(view), fn_(std::move(fn)), fn_has_view_edge_(fn_has_view_edge) {
    add_input_metadata(base);
    next_edges_.push_back(std::move(base_edge));
    const auto& fn_edges = fn_->next_edges();
    for (size_t i = fn_has_view_edge_ ? 1 : 0; i < fn_edges.size(); ++i)
      next_edges_.push_back(fn_edges[i]);
  }
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }

  TensorList apply(TensorList&& grads) override {
    TensorList out(next_edges_.size());
    if (!grads[0].defined()) return out;
    Tensor result = like_base(grads[0], base_);
    Tensor slice = view_in(result, base_, view_);
    TensorList fn_grads = fn_->run({slice.clone()});
    fn_grads.resize(fn_->next_edges().size());
    // The old value of the view no longer reaches the base unless fn passes it on (input 0).
    if (fn_has_view_edge_ && fn_grads[0].defined()) {
      slice.copy_(fn_grads[0]);
    } else {
      slice.zero_();
    }
    out[0] = result;
    const size_t skip = fn_has_view_edge_ ? 1 : 0;
    for (size_t i = skip; i < fn_grads.size(); ++i) out[1 + i - skip] = fn_grads[i];
    return out;
  }

 private:
  Geometry base_;
  Geometry view_;
  std::shared_ptr<Node> fn_;
  bool fn_has_view_edge_;
};

// The view as a function of the (new) base: grad of the view scattered into base shape.
class AsStridedBackward final : public Node {
 public:
  AsStridedBackward(const Tensor& base, const Tensor& view, Edge base_edge)
      : base_(base), view_(view) {
    add_input_metadata(view);
    next_edges_.push_back(std::move(base_edge));
  }
  std::string name() const override { return "AsStridedBackward"; }
  TensorList apply(TensorList&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    Tensor result = empty_strided_tensor(base_.sizes, base_.strides, grads[0].dtype());
    result.zero_();
    view_in(result, base_, view_).copy_(grads[0]);
    return {result};
  }

 private:
  Geometry base_;
  Geometry view_;
};

}  // namespace

void rebase_view_history(const Tensor& view, const Tensor& base, const std::shared_ptr<Node>& node,
                         bool node_has_view_edge) {
  auto copy_slices =
      std::make_shared<CopySlices>(base, view, node, gradient_edge(base), node_has_view_edge);
  set_history(base, copy_slices, 0);
  set_history(view, std::make_shared<AsStridedBackward>(base, view, Edge{copy_slices, 0}), 0);
}

}  // namespace kiln::autograd
