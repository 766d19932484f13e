#include "src/autograd/saved_variable.h"

#include "src/autograd/autograd_meta.h"
#include "src/core/shape.h"

namespace kiln::autograd {

SavedVariable::SavedVariable(const Tensor& t, bool is_output, uint32_t output_nr)
    : output_nr_(output_nr), saved_(true), is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t.version();
  if (is_output) {
    output_requires_grad_ = requires_grad(t);
    data_ = t.detach();
  } else {
    data_ = t;
  }
}

void SavedVariable::release() {
  data_ = Tensor();
  released_ = true;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner, const std::string& what) const {
  KILN_CHECK(!released_, Error,
             "{}: trying to backward through the graph a second time (or to use saved tensors "
             "after they were freed). Saved values are freed when backward() or kiln::grad() "
             "runs; pass retain_graph=true to the first call if you need to backward twice",
             owner->name());
  if (!data_.defined()) return data_;
  KILN_CHECK(data_.version() == version_, Error,
             "{}: one of the tensors needed for gradient computation ({}, {} {}) has been "
             "modified by an in-place operation: it is at version {}, expected version {}. "
             "Clone it before the in-place op, or make the op out of place",
             owner->name(), what, dtype_name(data_.dtype()), shape_str(data_.sizes()),
             data_.version(), version_);
  if (is_output_ && output_requires_grad_ && GradMode::is_enabled()) {
    Tensor alias = data_.detach();
    set_history(alias, owner, output_nr_);
    return alias;
  }
  return data_;
}

}  // namespace kiln::autograd
