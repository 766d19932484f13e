// torch::IValue: the values an AutogradContext's saved_data holds (LibTorch's c10::IValue, for the
// types C++ programs store there): none, bool, integer, double, string, tensor, integer list.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kiln/tensor.h"

namespace torch {

class IValue {
 public:
  IValue() = default;
  IValue(bool v) : value_(v) {}
  IValue(int v) : value_(int64_t{v}) {}
  IValue(int64_t v) : value_(v) {}
  IValue(double v) : value_(v) {}
  IValue(std::string v) : value_(std::move(v)) {}
  IValue(const char* v) : value_(std::string(v)) {}
  IValue(kiln::Tensor v) : value_(std::move(v)) {}
  IValue(std::vector<int64_t> v) : value_(std::move(v)) {}

  bool isNone() const { return std::holds_alternative<std::monostate>(value_); }
  bool isBool() const { return std::holds_alternative<bool>(value_); }
  bool isInt() const { return std::holds_alternative<int64_t>(value_); }
  bool isDouble() const { return std::holds_alternative<double>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isTensor() const { return std::holds_alternative<kiln::Tensor>(value_); }
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(value_); }

  // Each raises kiln::ValueError naming both types when the value holds another.
  bool toBool() const { return get<bool>("bool"); }
  int64_t toInt() const { return get<int64_t>("int"); }
  // An integer converts, as in LibTorch.
  double toDouble() const { return isInt() ? static_cast<double>(toInt()) : get<double>("double"); }
  const std::string& toStringRef() const { return get<std::string>("string"); }
  kiln::Tensor toTensor() const { return get<kiln::Tensor>("Tensor"); }
  std::vector<int64_t> toIntVector() const { return get<std::vector<int64_t>>("int list"); }
  std::string tagKind() const;

 private:
  template <typename T>
  const T& get(const char* wanted) const {
    if (const T* p = std::get_if<T>(&value_)) return *p;
    throw_wrong_type(wanted);
  }
  [[noreturn]] void throw_wrong_type(const char* wanted) const;

  std::variant<std::monostate, bool, int64_t, double, std::string, kiln::Tensor,
               std::vector<int64_t>>
      value_;
};

}  // namespace torch
