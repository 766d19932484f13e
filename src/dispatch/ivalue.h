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

// Note [Boxed SymInts]
// An int or int list argument holds SymInt words: a concrete value is the same int64 word as
// before (Note [SymInt representation]), so eager calls box and unbox exactly as they did, and a
// traced call with a symbolic size (`x.view({x.size(0), -1})`) carries the expression through the
// dispatcher to the meta function. Meta functions that keep shapes symbolic read sym_int_list() /
// to_sym_int() (OpCall::sym_ints / sym_int_arg); code that reads int_list() / to_int() gets
// concrete values: each symbolic element is guarded on its hint (Note [Guarding a symbolic value])
// and, for lists, replaced in place by that value, so what later readers of the same boxed
// argument (kernels, autograd formulas) see agrees with the guard.
class IValue {
 public:
  IValue() = default;
  IValue(const Tensor& t) : v_(t) {}
  IValue(Tensor&& t) : v_(std::move(t)) {}
  IValue(int64_t i) : v_(i) {}
  IValue(int i) : v_(int64_t{i}) {}
  // Ints and int lists hold SymInt words (Note [Boxed SymInts]).
  IValue(SymInt i) : v_(i.raw()) {}
  IValue(double d) : v_(d) {}
  IValue(bool b) : v_(b) {}
  IValue(const Scalar& s) : v_(s) {}
  // Int lists are kept inline (no heap) up to 5 elements: sizes and dims on the hot path.
  IValue(IntArrayRef ints) : IValue(SymIntArrayRef(ints)) {}
  IValue(SymIntArrayRef ints) : v_(SymDimVector(ints.begin(), ints.end())) {}
  IValue(const std::vector<int64_t>& ints) : IValue(SymIntArrayRef(ints)) {}
  IValue(const DimVector& ints) : IValue(SymIntArrayRef(ints)) {}
  IValue(SymDimVector ints) : v_(std::move(ints)) {}
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
  bool is_int_list() const { return std::holds_alternative<SymDimVector>(v_); }
  bool is_dtype() const { return std::holds_alternative<ScalarType>(v_); }
  bool is_device() const { return std::holds_alternative<Device>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }

  const Tensor& tensor() const { return get<Tensor>("Tensor"); }
  Tensor& tensor() { return std::get<Tensor>(v_); }
  const std::vector<Tensor>& tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  // The int, specialized (guarded) when it is symbolic.
  int64_t to_int() const {
    const int64_t word = get<int64_t>("int");
    return SymInt::from_raw(word).is_symbolic() ? SymInt::from_raw(word).guard_int() : word;
  }
  SymInt to_sym_int() const { return SymInt::from_raw(get<int64_t>("int")); }
  double to_double() const {
    return is_int() ? static_cast<double>(to_int()) : get<double>("float");
  }
  bool to_bool() const { return get<bool>("bool"); }
  // A Scalar argument also accepts int, float and bool IValues.
  Scalar scalar() const;
  // The list as concrete ints: symbolic elements are specialized (guarded) in place, so the boxed
  // value becomes the constant the caller saw (Note [Boxed SymInts]).
  IntArrayRef int_list() const {
    const SymDimVector& list = get<SymDimVector>("int[]");
    for (SymInt s : list) {
      if (s.is_symbolic()) [[unlikely]]
        return specialize_int_list();
    }
    return IntArrayRef(reinterpret_cast<const int64_t*>(list.data()), list.size());
  }
  SymIntArrayRef sym_int_list() const { return get<SymDimVector>("int[]"); }
  ScalarType dtype() const { return get<ScalarType>("ScalarType"); }
  Device device() const { return get<Device>("Device"); }
  const std::string& string() const { return get<std::string>("str"); }
  std::optional<int64_t> optional_int() const {
    return is_none() ? std::nullopt : std::optional(to_int());
  }
  std::optional<SymInt> optional_sym_int() const {
    return is_none() ? std::nullopt : std::optional(to_sym_int());
  }
  std::optional<ScalarType> optional_dtype() const {
    return is_none() ? std::nullopt : std::optional(dtype());
  }
  std::optional<Scalar> optional_scalar() const {
    return is_none() ? std::nullopt : std::optional(scalar());
  }
  std::string type_name() const;

 private:
  IntArrayRef specialize_int_list() const;
  template <typename T>
  const T& get(const char* expected) const {
    const T* p = std::get_if<T>(&v_);
    KILN_CHECK(p != nullptr, Error, "internal: expected a boxed {} but got {}", expected,
               type_name());
    return *p;
  }
  std::variant<std::monostate, Tensor, int64_t, double, bool, Scalar, SymDimVector,
               std::vector<Tensor>, ScalarType, Device, std::string>
      v_;
};

using Stack = SmallVector<IValue, 8>;

}  // namespace kiln
