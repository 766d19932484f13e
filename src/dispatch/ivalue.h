// IValue: one boxed argument or result of an op call. The dispatcher's calling convention is a
// Stack of these, so generic code (tracing, autograd, vmap) can handle every op the same way.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "kiln/error.h"
#include "kiln/small_vector.h"
#include "kiln/tensor.h"

namespace kiln {

class IValue {
 public:
  IValue() = default;
  IValue(const Tensor& t) : v_(t) {}
  IValue(Tensor&& t) : v_(std::move(t)) {}
  IValue(int64_t i) : v_(i) {}
  IValue(int i) : v_(int64_t{i}) {}
  IValue(double d) : v_(d) {}
  IValue(bool b) : v_(b) {}
  IValue(const Scalar& s) : v_(s) {}
  // Int lists are kept inline (no heap) up to 5 elements: sizes and dims on the hot path.
  IValue(IntArrayRef ints) : v_(DimVector(ints.begin(), ints.end())) {}
  IValue(const std::vector<int64_t>& ints) : v_(DimVector(ints.begin(), ints.end())) {}
  IValue(DimVector ints) : v_(std::move(ints)) {}
  IValue(std::vector<Tensor> tensors) : v_(std::move(tensors)) {}
  IValue(ScalarType t) : v_(t) {}
  IValue(Device d) : v_(d) {}
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(std::string_view s) : v_(std::string(s)) {}
  IValue(const char* s) : v_(std::string(s)) {}
  template <typename T>
  IValue(const std::optional<T>& o) {
    if (o) *this = IValue(*o);
  }
  IValue(std::nullopt_t) {}

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_tensor_list() const { return std::holds_alternative<std::vector<Tensor>>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_scalar() const { return std::holds_alternative<Scalar>(v_); }
  bool is_int_list() const { return std::holds_alternative<DimVector>(v_); }
  bool is_dtype() const { return std::holds_alternative<ScalarType>(v_); }
  bool is_device() const { return std::holds_alternative<Device>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }

  const Tensor& tensor() const { return get<Tensor>("Tensor"); }
  Tensor& tensor() { return std::get<Tensor>(v_); }
  const std::vector<Tensor>& tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  int64_t to_int() const { return get<int64_t>("int"); }
  double to_double() const { return is_int() ? static_cast<double>(to_int()) : get<double>("float"); }
  bool to_bool() const { return get<bool>("bool"); }
  // A Scalar argument also accepts int, float and bool IValues.
  Scalar scalar() const;
  IntArrayRef int_list() const { return get<DimVector>("int[]"); }
  ScalarType dtype() const { return get<ScalarType>("ScalarType"); }
  Device device() const { return get<Device>("Device"); }
  const std::string& string() const { return get<std::string>("str"); }
  std::optional<int64_t> optional_int() const {
    return is_none() ? std::nullopt : std::optional(to_int());
  }
  std::optional<ScalarType> optional_dtype() const {
    return is_none() ? std::nullopt : std::optional(dtype());
  }
  std::optional<Scalar> optional_scalar() const {
    return is_none() ? std::nullopt : std::optional(scalar());
  }
  std::string type_name() const;

 private:
  template <typename T>
  const T& get(const char* expected) const {
    const T* p = std::get_if<T>(&v_);
    KILN_CHECK(p != nullptr, Error, "internal: expected a boxed {} but got {}", expected, type_name());
    return *p;
  }
  std::variant<std::monostate, Tensor, int64_t, double, bool, Scalar, DimVector,
               std::vector<Tensor>, ScalarType, Device, std::string>
      v_;
};

using Stack = SmallVector<IValue, 8>;

}  // namespace kiln
