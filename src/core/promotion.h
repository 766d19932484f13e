// Type promotion: which dtype an op computes in. See Note [Promotion table] in promotion.cpp.
#pragma once

#include <string_view>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

// The promoted type of two dtypes. Throws DTypeError for uint64 with a signed integer type.
ScalarType promote_types(ScalarType a, ScalarType b);

// PyTorch's result_type over op operands: dimensioned tensors outrank 0-dim tensors, which outrank
// Scalars (and wrapped numbers); a lower-ranked operand only matters when its category (bool <
// integer < floating) is higher. `op` names the op in error messages.
class ResultTypeBuilder {
 public:
  explicit ResultTypeBuilder(std::string_view op) : op_(op) {}
  ResultTypeBuilder& add(const Tensor& t);
  ResultTypeBuilder& add(const Scalar& s);
  ScalarType result() const;

 private:
  ScalarType merge(ScalarType current, bool& seen, ScalarType next) const;
  std::string_view op_;
  ScalarType dim_ = kBool, zero_dim_ = kBool, wrapped_ = kBool;
  bool has_dim_ = false, has_zero_dim_ = false, has_wrapped_ = false;
};

ScalarType result_type(std::string_view op, const Tensor& a, const Tensor& b);
ScalarType result_type(std::string_view op, const Tensor& a, const Scalar& b);

// True when a value of dtype `from` may be written into a tensor of dtype `to` by an in-place op
// (PyTorch's can_cast: no float->integer, no integer->bool, no category narrowing).
bool can_cast(ScalarType from, ScalarType to);

// The default dtype for floating results of integer inputs (torch.get_default_dtype()).
inline constexpr ScalarType kDefaultFloat = kFloat32;

}  // namespace kiln
