// TensorOptions: dtype, device and requires_grad for factories (`kiln::zeros({2, 3}, kUInt16)`).
#pragma once

#include "kiln/dtype.h"
#include "kiln/storage.h"

namespace kiln {

struct TensorOptions {
  ScalarType dtype_ = kFloat32;
  Device device_ = Device::CPU;
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(Device d) : device_(d) {}

  TensorOptions dtype(ScalarType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }
};

inline constexpr Device kCPU = Device::CPU;
inline constexpr Device kMeta = Device::Meta;

}  // namespace kiln
