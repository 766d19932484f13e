#include "kiln/scalar.h"

#include <fmt/format.h>

#include "src/core/cast.h"

namespace kiln {

ScalarType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return kBool;
    case Kind::Int:
      return kInt64;
    case Kind::UInt:
      return kUInt64;
    case Kind::Double:
      return kFloat64;
  }
  return kFloat64;
}

template <typename T>
T Scalar::to() const {
  switch (kind_) {
    case Kind::Bool:
      return cast_value<T>(i_ != 0);
    case Kind::Int:
      return cast_value<T>(i_);
    case Kind::UInt:
      return cast_value<T>(u_);
    case Kind::Double:
      return cast_value<T>(d_);
  }
  return T();
}
template bool Scalar::to<bool>() const;
template uint8_t Scalar::to<uint8_t>() const;
template uint16_t Scalar::to<uint16_t>() const;
template uint32_t Scalar::to<uint32_t>() const;
template uint64_t Scalar::to<uint64_t>() const;
template int8_t Scalar::to<int8_t>() const;
template int16_t Scalar::to<int16_t>() const;
template int32_t Scalar::to<int32_t>() const;
template int64_t Scalar::to<int64_t>() const;
template Half Scalar::to<Half>() const;
template BFloat16 Scalar::to<BFloat16>() const;
template float Scalar::to<float>() const;
template double Scalar::to<double>() const;

double Scalar::to_double() const { return to<double>(); }
int64_t Scalar::to_int64() const { return to<int64_t>(); }
uint64_t Scalar::to_uint64() const { return to<uint64_t>(); }
bool Scalar::to_bool() const { return to<bool>(); }

Scalar Scalar::operator-() const {
  switch (kind_) {
    case Kind::Bool:
      return Scalar(-static_cast<int64_t>(i_ != 0));
    case Kind::Int:
      return Scalar(static_cast<int64_t>(0ULL - static_cast<uint64_t>(i_)));
    case Kind::UInt:
      return Scalar(0ULL - u_);  // modular, like negating a uint64 tensor
    case Kind::Double:
      return Scalar(-d_);
  }
  return *this;
}

bool Scalar::operator==(const Scalar& o) const {
  if (is_floating() || o.is_floating()) return to_double() == o.to_double();
  if (kind_ == Kind::UInt || o.kind_ == Kind::UInt) return kind_ == o.kind_ && u_ == o.u_;
  return to_int64() == o.to_int64();
}

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::Bool:
      return i_ ? "true" : "false";
    case Kind::Int:
      return std::to_string(i_);
    case Kind::UInt:
      return std::to_string(u_);
    case Kind::Double:
      return fmt::format("{}", d_);
  }
  return "?";
}

}  // namespace kiln
