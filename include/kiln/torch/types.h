// The torch:: names of Kiln's tensor, dtypes, devices, options and errors (See Note [The torch::
// front end] in kiln/torch.h). torch::Tensor IS kiln::Tensor; the dtypes are Kiln's. Devices and
// TensorOptions are small types of their own, because LibTorch's programs name CUDA
// (`torch::cuda::is_available() ? torch::kCUDA : torch::kCPU`), which Kiln does not run on: a CUDA
// device can be named and compared, and using it raises NotImplementedError.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "kiln/tensor_options.h"

namespace torch {

using kiln::ArrayRef;
using kiln::IntArrayRef;
using kiln::Scalar;
using kiln::ScalarType;
using kiln::Tensor;
template <typename T>
using optional = std::optional<T>;
using std::nullopt;

// dtypes under LibTorch's names.
inline constexpr ScalarType kBool = kiln::kBool;
inline constexpr ScalarType kUInt8 = kiln::kUInt8;
inline constexpr ScalarType kByte = kiln::kUInt8;
inline constexpr ScalarType kInt8 = kiln::kInt8;
inline constexpr ScalarType kChar = kiln::kInt8;
inline constexpr ScalarType kInt16 = kiln::kInt16;
inline constexpr ScalarType kShort = kiln::kInt16;
inline constexpr ScalarType kInt32 = kiln::kInt32;
inline constexpr ScalarType kInt = kiln::kInt32;
inline constexpr ScalarType kInt64 = kiln::kInt64;
inline constexpr ScalarType kLong = kiln::kInt64;
inline constexpr ScalarType kFloat16 = kiln::kFloat16;
inline constexpr ScalarType kHalf = kiln::kFloat16;
inline constexpr ScalarType kBFloat16 = kiln::kBFloat16;
inline constexpr ScalarType kFloat32 = kiln::kFloat32;
inline constexpr ScalarType kFloat = kiln::kFloat32;
inline constexpr ScalarType kFloat64 = kiln::kFloat64;
inline constexpr ScalarType kDouble = kiln::kFloat64;

enum class DeviceType : int8_t { CPU, CUDA, Meta };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMeta = DeviceType::Meta;

// A device as LibTorch names one. Converts to Kiln's device; CUDA raises there.
class Device {
 public:
  Device(DeviceType type, int8_t index = -1) : type_(type), index_(index) {}
  Device(kiln::Device device) : type_(device == kiln::Device::Meta ? kMeta : kCPU) {}
  // "cpu", "cuda", "cuda:1", "meta"; ValueError otherwise.
  Device(const std::string& name);
  Device(const char* name) : Device(std::string(name)) {}

  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  std::string str() const;
  // NotImplementedError for CUDA, naming what asked for it.
  kiln::Device kiln_device(std::string_view what = "this operation") const;
  operator kiln::Device() const { return kiln_device(); }
  friend bool operator==(const Device& a, const Device& b) {
    return a.type_ == b.type_ && a.index_ == b.index_;
  }
  friend std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

 private:
  DeviceType type_;
  int8_t index_ = -1;
};

// `model->to(torch::kCPU)` (kiln::nn::Module::to); NotImplementedError for CUDA.
inline kiln::Device kiln_device_of(DeviceType type) {
  return Device(type).kiln_device("Module::to");
}

namespace cuda {
// Kiln runs on the CPU: always false, so LibTorch programs take their CPU branch.
inline bool is_available() { return false; }
inline int64_t device_count() { return 0; }
}  // namespace cuda

enum class Layout : int8_t { Strided };
inline constexpr Layout kStrided = Layout::Strided;

// LibTorch's TensorOptions: dtype, device, layout and requires_grad for factories, with each
// converting implicitly (`torch::zeros({2}, torch::kInt64)`, `torch::randn({2}, device)`).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}
  TensorOptions(Device device) : device_(device) {}
  TensorOptions(DeviceType device) : device_(Device(device)) {}
  TensorOptions(kiln::Device device) : device_(Device(device)) {}
  TensorOptions(Layout) {}
  TensorOptions(const kiln::TensorOptions& o)
      : dtype_(o.dtype_), device_(Device(o.device_)), requires_grad_(o.requires_grad_) {}

  TensorOptions dtype(std::optional<ScalarType> dtype) const {
    TensorOptions o = *this;
    o.dtype_ = dtype;
    return o;
  }
  template <typename T>
  TensorOptions dtype() const {
    return dtype(kiln::scalar_type_of<T>);
  }
  TensorOptions device(Device device) const {
    TensorOptions o = *this;
    o.device_ = device;
    return o;
  }
  TensorOptions layout(Layout) const { return *this; }
  TensorOptions requires_grad(bool requires_grad = true) const {
    TensorOptions o = *this;
    o.requires_grad_ = requires_grad;
    return o;
  }

  ScalarType dtype() const { return dtype_.value_or(kiln::kFloat32); }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

  // Kiln's options; `default_dtype` where none was given. NotImplementedError for CUDA.
  kiln::TensorOptions kiln_options(ScalarType default_dtype = kiln::kFloat32) const {
    return kiln::TensorOptions(dtype_.value_or(default_dtype))
        .device(device_.kiln_device("a factory"))
        .requires_grad(requires_grad_);
  }
  operator kiln::TensorOptions() const { return kiln_options(); }

 private:
  std::optional<ScalarType> dtype_;
  Device device_ = Device(kCPU);
  bool requires_grad_ = false;
};

// LibTorch's free functions that build options: torch::dtype(kInt64).requires_grad(false).
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

// LibTorch's loss reductions: torch::Reduction::Sum as an int64_t argument of the functional
// losses (torch::nll_loss(x, y, {}, torch::Reduction::Sum)).
namespace Reduction {
enum Reduction : int64_t { None, Mean, Sum, END };
}  // namespace Reduction
// Kiln's name for a reduction ("none", "mean", "sum"); ValueError otherwise.
std::string_view reduction_name(int64_t reduction);

}  // namespace torch

// LibTorch's error type is c10::Error; Kiln's errors all derive from kiln::Error.
namespace c10 {
using Error = kiln::Error;
using kiln::IntArrayRef;
using kiln::Scalar;
using kiln::ScalarType;
template <typename T>
using optional = std::optional<T>;
using std::nullopt;
}  // namespace c10

namespace at {
using kiln::Tensor;
using torch::Device;
using torch::DeviceType;
using torch::TensorOptions;
namespace Reduction = torch::Reduction;
}  // namespace at

namespace kiln::torch_detail {
// The streamed message of TORCH_CHECK: each argument written with operator<<.
template <typename... Args>
std::string stream_message(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace kiln::torch_detail

// LibTorch's checks: TORCH_CHECK(cond, "message ", value, ...) raises kiln::Error (c10::Error)
// with the streamed message; AT_ASSERT(cond) raises naming the failed condition.
#define TORCH_CHECK(cond, ...)                                                                  \
  do {                                                                                          \
    if (!(cond)) [[unlikely]]                                                                   \
      throw ::kiln::Error(std::string("Expected " #cond " to be true, but got false. ") +       \
                          ::kiln::torch_detail::stream_message("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (false)
#define AT_ASSERT(cond, ...)                                                                    \
  do {                                                                                          \
    if (!(cond)) [[unlikely]]                                                                   \
      throw ::kiln::Error(std::string("Assertion failed: " #cond " (") + __FILE__ + ":" +       \
                          std::to_string(__LINE__) + ") " +                                     \
                          ::kiln::torch_detail::stream_message("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (false)
#define TORCH_INTERNAL_ASSERT(cond, ...) AT_ASSERT(cond __VA_OPT__(, ) __VA_ARGS__)
