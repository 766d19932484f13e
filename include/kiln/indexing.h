// The pieces of `t.index({...})`, as in LibTorch: integers, Slice, None, Ellipsis, bool, Tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

namespace kiln {
class Tensor;

namespace indexing {
struct NoneType {};
struct EllipsisType {};
inline constexpr NoneType None{};
inline constexpr EllipsisType Ellipsis{};

// Slice(start, stop, step); a missing bound is None, as in Python's `a[1:]`.
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Slice() = default;
  Slice(std::optional<int64_t> start_, std::optional<int64_t> stop_ = std::nullopt,
        int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
  Slice(NoneType) {}
  Slice(std::optional<int64_t> start_, NoneType, int64_t step_ = 1) : start(start_), step(step_) {}
  Slice(NoneType, std::optional<int64_t> stop_, int64_t step_ = 1) : stop(stop_), step(step_) {}
  Slice(NoneType, NoneType, int64_t step_) : step(step_) {}
};
}  // namespace indexing

class TensorIndex {
 public:
  TensorIndex(int64_t i) : value_(i) {}
  TensorIndex(int i) : value_(int64_t{i}) {}
  TensorIndex(bool b) : value_(b) {}
  TensorIndex(indexing::Slice s) : value_(s) {}
  TensorIndex(indexing::NoneType) : value_(indexing::None) {}
  TensorIndex(indexing::EllipsisType) : value_(indexing::Ellipsis) {}
  TensorIndex(const Tensor& t);

  bool is_integer() const { return std::holds_alternative<int64_t>(value_); }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_slice() const { return std::holds_alternative<indexing::Slice>(value_); }
  bool is_none() const { return std::holds_alternative<indexing::NoneType>(value_); }
  bool is_ellipsis() const { return std::holds_alternative<indexing::EllipsisType>(value_); }
  bool is_tensor() const { return tensor_index_ != nullptr; }
  int64_t integer() const { return std::get<int64_t>(value_); }
  bool boolean() const { return std::get<bool>(value_); }
  const indexing::Slice& slice() const { return std::get<indexing::Slice>(value_); }
  const Tensor& tensor() const { return *tensor_index_; }

 private:
  std::variant<int64_t, bool, indexing::Slice, indexing::NoneType, indexing::EllipsisType> value_;
  const Tensor* tensor_index_ = nullptr;  // borrowed: valid for the duration of the index call
};

}  // namespace kiln
