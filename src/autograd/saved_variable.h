// SavedVariable: a tensor a backward formula needs, saved at forward time together with its
// version. Unpacking checks the version: if the tensor was modified in place after it was saved,
// the gradient would be silently wrong, so backward raises an error naming the op instead
// (PyTorch's "modified by an inplace operation" check).
//
// Note [Saved outputs]
// A node that saves its own output (exp, sigmoid, tanh...) must not hold that output with its
// grad_fn set to the node itself: that is a reference cycle. It keeps a detached alias (same
// storage, so the same version counter) and, when a formula unpacks it during a create_graph
// backward, re-attaches the node as the alias's grad_fn so double backward flows through it.
#pragma once

#include <memory>
#include <string>

#include "kiln/autograd.h"

namespace kiln::autograd {

class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output, uint32_t output_nr = 0);

  // `owner` is the node unpacking (for Note [Saved outputs]); `what` describes the tensor in an
  // error ("input 0 of mul").
  Tensor unpack(const std::shared_ptr<Node>& owner, const std::string& what) const;
  void release();
  bool was_saved() const { return saved_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool saved_ = false;
  bool is_output_ = false;
  bool output_requires_grad_ = false;
  bool released_ = false;
};

}  // namespace kiln::autograd
