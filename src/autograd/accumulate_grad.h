// AccumulateGrad: the node at a leaf. It runs the leaf's tensor hooks and adds the incoming
// gradient into leaf.grad().
#pragma once

#include "src/autograd/autograd_meta.h"

namespace kiln::autograd {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override;
  const Tensor& leaf() const { return leaf_; }
  // Applies the leaf's tensor hooks to `grad` (also used when kiln::grad captures a leaf's grad).
  Tensor run_leaf_hooks(Tensor grad) const;

 private:
  Tensor leaf_;
};

// The leaf's AccumulateGrad node (one per leaf, shared by every graph that uses it).
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

}  // namespace kiln::autograd
