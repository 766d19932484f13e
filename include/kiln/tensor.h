// Tensor: a cheap refcounted handle to a TensorImpl. Every method that computes something is an
// op call through the dispatcher (the wrappers live in src/ops/, one file per op family).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <source_location>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/indexing.h"
#include "kiln/scalar.h"
#include "kiln/tensor_accessor.h"
#include "kiln/tensor_impl.h"
#include "kiln/tensor_options.h"

namespace kiln {

namespace autograd {
class Node;
}
// A gradient hook: receives the gradient flowing into a tensor and returns a replacement, or an
// undefined Tensor to keep it unchanged (see Tensor::register_hook).
using GradHook = std::function<Tensor(const Tensor&)>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata (src/core/tensor.cpp) ----
  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const IntrusivePtr<TensorImpl>& impl_ptr() const { return impl_; }
  ScalarType dtype() const { return checked_impl("dtype").dtype(); }
  ScalarType scalar_type() const { return checked_impl("scalar_type").dtype(); }
  Device device() const { return checked_impl("device").device(); }
  bool is_meta() const { return device() == Device::Meta; }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  int64_t dim() const { return checked_impl("dim").dim(); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return checked_impl("sizes").sizes(); }
  IntArrayRef strides() const { return checked_impl("strides").strides(); }
  SymIntArrayRef sym_sizes() const { return checked_impl("sym_sizes").sym_sizes(); }
  SymIntArrayRef sym_strides() const { return checked_impl("sym_strides").sym_strides(); }
  // size(d) and stride(d) accept negative d (counted from the end); IndexError when out of range.
  // They are SymInts: symbolic while tracing with symbolic shapes, and convert to int64_t
  // implicitly (guarding, Note [Guarding a symbolic value]); `auto n = x.size(0)` stays symbolic.
  // `loc` names the caller's line in a fullgraph error about a condition on a symbolic size.
  SymInt size(int64_t d, std::source_location loc = std::source_location::current()) const;
  SymInt stride(int64_t d) const;
  // numel() guards a symbolic element count; sym_numel() keeps it.
  int64_t numel() const { return checked_impl("numel").numel(); }
  SymInt sym_numel() const { return checked_impl("sym_numel").sym_numel(); }
  int64_t storage_offset() const { return checked_impl("storage_offset").storage_offset(); }
  int64_t element_size() const { return kiln::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  bool is_contiguous() const { return checked_impl("is_contiguous").is_contiguous(); }
  bool is_floating_point() const { return is_floating(dtype()); }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  uint32_t version() const { return checked_impl("version").storage()->version(); }
  void bump_version() const { checked_impl("bump_version").storage()->bump_version(); }
  // True when both tensors look at the same storage.
  bool is_alias_of(const Tensor& other) const;

  // Raw data. data_ptr<T>() checks that T matches the dtype (DTypeError otherwise).
  void* data_ptr() const { return checked_impl("data_ptr").data(); }
  template <typename T>
  T* data_ptr() const;
  // Element access without bounds checks, as LibTorch's accessor: `auto a = t.accessor<float,
  // 2>(); a[i][j] = 1;` (ShapeError unless dim() == N, DTypeError unless T is the dtype). Valid
  // while the tensor lives.
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    KILN_CHECK(dim() == static_cast<int64_t>(N), ShapeError,
               "accessor: expected a tensor of {} dims, got {} dims", N, dim());
    return TensorAccessor<T, N>(data_ptr<T>(), sizes().data(), strides().data());
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;  // the accessor would outlive the tensor

  // The single value of a one-element tensor (ValueError otherwise), converted to T. Inside
  // kiln::compile these read data the trace does not have: a graph break (Note [Trace tree]).
  // item<SymInt>() of an integer or bool tensor is the value as a size-like integer: compiled
  // with capture_scalar_outputs, an unbacked symbol computed in the graph instead of a graph
  // break (Note [Scalar outputs in a graph] in src/ops/scalar_output.cpp).
  template <typename T>
  T item(std::source_location loc = std::source_location::current()) const;
  Scalar item(std::source_location loc = std::source_location::current()) const;
  // All values, row-major, converted to T (PyTorch's tolist()); to_vector<SymInt>() gives one
  // item<SymInt>() per element.
  template <typename T>
  std::vector<T> to_vector(std::source_location loc = std::source_location::current()) const;

  std::string str() const;  // the PyTorch-like printout

  // ---- autograd (src/autograd/tensor_autograd.cpp) ----
  bool requires_grad() const;
  // Only floating tensors can require gradients (DTypeError otherwise); a non-leaf can't stop.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  // The gradient accumulated by backward() into this leaf (undefined until one reaches it).
  const Tensor& grad() const;
  // The same gradient, assignable: `p.mutable_grad() = Tensor()` clears it (what zero_grad does).
  Tensor& mutable_grad() const;
  // A leaf was created by the user (no grad_fn); only leaves accumulate into grad().
  bool is_leaf() const;
  // The backward node that produced this tensor, or null for leaves and untracked tensors.
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Which output of grad_fn() this tensor is.
  uint32_t output_nr() const;
  // Backpropagates from this tensor. `gradient` may be omitted for one-element tensors.
  // retain_graph defaults to create_graph; `inputs` limits accumulation to those leaves. Inside
  // kiln::compile it is a graph break (Note [Backward in a compiled function]); `loc` names it.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, const std::vector<Tensor>& inputs = {},
                std::source_location loc = std::source_location::current()) const;
  // A tensor sharing this one's storage, cut from the autograd graph (never requires grad).
  Tensor detach() const;
  // Cuts this tensor itself from the graph (it becomes a leaf that does not require grad).
  const Tensor& detach_() const;
  // Makes backward() fill grad() of this non-leaf too.
  void retain_grad() const;
  bool retains_grad() const;
  // Calls `hook` with this tensor's gradient during every backward pass; returns an id for
  // remove_hook.
  size_t register_hook(GradHook hook) const;
  void remove_hook(size_t id) const;

  // ---- conversion and copies (src/ops/copy.cpp) ----
  Tensor to(ScalarType dtype, bool copy = false) const;
  Tensor to(Device device) const;
  Tensor clone() const;
  Tensor contiguous() const;
  const Tensor& copy_(const Tensor& src) const;
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const;
  // Fills with draws from U(from, to) / N(mean, std^2) of the default generator, in place, as
  // LibTorch's Tensor::uniform_ / normal_ (floating dtypes; src/ops/random.cpp).
  const Tensor& uniform_(double from = 0, double to = 1) const;
  const Tensor& normal_(double mean = 0, double std = 1) const;
  // `t[i] = 2.5` fills the selected view, as LibTorch (only on a temporary: a named Tensor is
  // rebound by assignment, never written).
  const Tensor& operator=(const Scalar& value) && { return fill_(value); }

  // ---- views (src/ops/view.cpp): share storage, never copy ----
  // Shapes are SymIntArrayRefs: an int list (braced, std::vector<int64_t>, DimVector, sizes())
  // passes as is, and sizes read from a symbolic tensor stay symbolic.
  Tensor view(SymIntArrayRef sizes) const;
  Tensor reshape(SymIntArrayRef sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor slice(int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end,
               SymInt step = 1) const;
  Tensor select(int64_t dim, SymInt index) const;
  Tensor narrow(int64_t dim, SymInt start, SymInt length) const;
  Tensor expand(SymIntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, SymIntArrayRef sizes) const;
  Tensor as_strided(SymIntArrayRef sizes, SymIntArrayRef strides,
                    std::optional<SymInt> storage_offset = std::nullopt) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;

  // ---- indexing (src/ops/indexing.cpp) ----
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  Tensor index(const std::vector<TensorIndex>& indices) const;
  const Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) const;
  const Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) const;
  Tensor operator[](int64_t i) const { return select(0, i); }

  // ---- pointwise (src/ops/pointwise_*.cpp) ----
  Tensor neg() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor expm1() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor log1p() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor erf() const;
  Tensor erfinv() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor frac() const;
  Tensor reciprocal() const;
  Tensor logical_not() const;
  Tensor bitwise_not() const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  // rounding_mode: "" (true division), "floor" or "trunc", as torch.div.
  Tensor div(const Tensor& other, std::string_view rounding_mode = "") const;
  Tensor div(const Scalar& other, std::string_view rounding_mode = "") const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  // In place: the result dtype must be castable to this tensor's dtype (DTypeError otherwise).
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(const Scalar& other) const;
  const Tensor& div_(const Tensor& other) const;
  const Tensor& div_(const Scalar& other) const;
  const Tensor& neg_() const;
  const Tensor& exp_() const;
  const Tensor& relu_() const;
  const Tensor& sigmoid_() const;
  const Tensor& tanh_() const;
  const Tensor& sqrt_() const;
  const Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  const Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  const Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  const Tensor& lerp_(const Tensor& end, const Scalar& weight) const;

  // ---- reductions (src/ops/reduce.cpp) ----
  // dims empty = all dims. dtype: accumulate and return in this dtype.
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false,
             std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  Tensor min() const;
  // (values, indices)
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(IntArrayRef dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  // (values, indices)
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false,
                                 bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                 bool sorted = true) const;

  // ---- linear algebra (src/ops/linalg.cpp) ----
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;

  // ---- shape and indexing ops (src/ops/shape.cpp, src/ops/gather_scatter.cpp) ----
  std::vector<Tensor> split(SymInt split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(SymIntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(SymIntArrayRef repeats) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor nonzero() const;
  Tensor masked_select(const Tensor& mask) const;

 private:
  // Note [An undefined Tensor]
  // A default-constructed Tensor has no impl (LibTorch's undefined tensor: an unset optional
  // argument such as a missing bias). Every accessor that reads the impl goes through
  // checked_impl, so using one raises ValueError naming the accessor instead of crashing; ops
  // check their arguments at dispatch, naming the op and the argument
  // (src/dispatch/dispatcher.cpp).
  TensorImpl& checked_impl(const char* accessor) const {
    if (!impl_) [[unlikely]]
      throw_undefined(accessor);
    return *impl_;
  }
  [[noreturn]] static void throw_undefined(const char* accessor);

  IntrusivePtr<TensorImpl> impl_;
};

template <>
SymInt Tensor::item<SymInt>(std::source_location loc) const;
template <>
std::vector<SymInt> Tensor::to_vector<SymInt>(std::source_location loc) const;

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Operators, as in LibTorch.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Scalar& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a);
Tensor operator~(const Tensor& a);
Tensor operator!(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
const Tensor& operator+=(const Tensor& a, const Tensor& b);
const Tensor& operator+=(const Tensor& a, const Scalar& b);
const Tensor& operator-=(const Tensor& a, const Tensor& b);
const Tensor& operator-=(const Tensor& a, const Scalar& b);
const Tensor& operator*=(const Tensor& a, const Tensor& b);
const Tensor& operator*=(const Tensor& a, const Scalar& b);
const Tensor& operator/=(const Tensor& a, const Tensor& b);
const Tensor& operator/=(const Tensor& a, const Scalar& b);

inline TensorIndex::TensorIndex(const Tensor& t) : value_(int64_t{0}), tensor_index_(&t) {}

}  // namespace kiln
