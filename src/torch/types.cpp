#include "kiln/torch/types.h"

#include <fmt/format.h>

namespace torch {

Device::Device(const std::string& name) {
  const std::string type = name.substr(0, name.find(':'));
  if (type == "cpu") {
    type_ = kCPU;
  } else if (type == "cuda") {
    type_ = kCUDA;
  } else if (type == "meta") {
    type_ = kMeta;
  } else {
    throw kiln::ValueError(fmt::format(
        "torch::Device: unknown device '{}'; expected cpu, cuda, cuda:N or meta", name));
  }
  if (name.size() > type.size()) {
    const std::string index = name.substr(type.size() + 1);
    KILN_CHECK(!index.empty() && index.find_first_not_of("0123456789") == std::string::npos &&
                   index.size() < 3,
               ValueError, "torch::Device: bad device index in '{}'", name);
    index_ = static_cast<int8_t>(std::stoi(index));
  }
}

std::string Device::str() const {
  const char* type = type_ == kCUDA ? "cuda" : type_ == kMeta ? "meta" : "cpu";
  return has_index() ? fmt::format("{}:{}", type, index_) : std::string(type);
}

kiln::Device Device::kiln_device(std::string_view what) const {
  KILN_CHECK(type_ != kCUDA, NotImplementedError,
             "{}: asked for device {}, but Kiln runs on the CPU (torch::cuda::is_available() is "
             "false); use torch::kCPU",
             what, str());
  return type_ == kMeta ? kiln::Device::Meta : kiln::Device::CPU;
}

std::string_view reduction_name(int64_t reduction) {
  switch (reduction) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    default:
      throw kiln::ValueError(fmt::format(
          "reduction: expected torch::Reduction::None, Mean or Sum, got {}", reduction));
  }
}

}  // namespace torch
