// LibTorch's enum constants (torch::kSum, torch::kReflect, torch::kReLU, ...): each is a value of
// its own empty type in torch::enumtype, and an option that takes several of them holds a
// std::variant (`CrossEntropyLossOptions().reduction(torch::kSum)`). Kiln names these choices by
// string ("sum", "reflect", "relu"); kiln_name() turns a constant or a variant of them into Kiln's
// string, which is how the torch:: options reach Kiln's modules.
#pragma once

#include <string>
#include <string_view>
#include <variant>

// One constant: the type torch::enumtype::kName, the value torch::kName, Kiln's string for it and
// LibTorch's printed name ("kName").
#define KILN_TORCH_ENUM(Name, kiln_string)                              \
  namespace torch {                                                     \
  namespace enumtype {                                                  \
  struct k##Name {                                                      \
    constexpr k##Name() = default;                                      \
    friend constexpr bool operator==(k##Name, k##Name) { return true; } \
  };                                                                    \
  constexpr std::string_view kiln_name(k##Name) { return kiln_string; } \
  constexpr std::string_view pretty_name(k##Name) { return "k" #Name; } \
  }                                                                     \
  inline constexpr enumtype::k##Name k##Name{};                         \
  }

KILN_TORCH_ENUM(Linear, "linear")
KILN_TORCH_ENUM(Conv1D, "conv1d")
KILN_TORCH_ENUM(Conv2D, "conv2d")
KILN_TORCH_ENUM(Conv3D, "conv3d")
KILN_TORCH_ENUM(ConvTranspose1D, "conv_transpose1d")
KILN_TORCH_ENUM(ConvTranspose2D, "conv_transpose2d")
KILN_TORCH_ENUM(ConvTranspose3D, "conv_transpose3d")
KILN_TORCH_ENUM(Sigmoid, "sigmoid")
KILN_TORCH_ENUM(Tanh, "tanh")
KILN_TORCH_ENUM(ReLU, "relu")
KILN_TORCH_ENUM(GELU, "gelu")
KILN_TORCH_ENUM(SiLU, "silu")
KILN_TORCH_ENUM(Mish, "mish")
KILN_TORCH_ENUM(LeakyReLU, "leaky_relu")
KILN_TORCH_ENUM(FanIn, "fan_in")
KILN_TORCH_ENUM(FanOut, "fan_out")
KILN_TORCH_ENUM(Constant, "constant")
KILN_TORCH_ENUM(Reflect, "reflect")
KILN_TORCH_ENUM(Replicate, "replicate")
KILN_TORCH_ENUM(Circular, "circular")
KILN_TORCH_ENUM(Zeros, "zeros")
KILN_TORCH_ENUM(Sum, "sum")
KILN_TORCH_ENUM(Mean, "mean")
KILN_TORCH_ENUM(Max, "max")
KILN_TORCH_ENUM(None, "none")
KILN_TORCH_ENUM(BatchMean, "batchmean")
KILN_TORCH_ENUM(Valid, "valid")
KILN_TORCH_ENUM(Same, "same")
KILN_TORCH_ENUM(Nearest, "nearest")
KILN_TORCH_ENUM(NearestExact, "nearest-exact")
KILN_TORCH_ENUM(Bilinear, "bilinear")
KILN_TORCH_ENUM(Bicubic, "bicubic")
KILN_TORCH_ENUM(Trilinear, "trilinear")
KILN_TORCH_ENUM(Area, "area")

#undef KILN_TORCH_ENUM

namespace torch::enumtype {

// Kiln's string for the constant a variant holds: kiln_name(options.reduction()) == "sum".
template <typename... Ts>
std::string kiln_name(const std::variant<Ts...>& v) {
  return std::visit([](const auto& e) -> std::string { return std::string(kiln_name(e)); }, v);
}

// LibTorch's name of the constant a variant holds ("kSum"), as torch::enumtype::get_enum_name.
template <typename... Ts>
std::string get_enum_name(const std::variant<Ts...>& v) {
  return std::visit([](const auto& e) -> std::string { return std::string(pretty_name(e)); }, v);
}

}  // namespace torch::enumtype

// LibTorch's options constructors from a reduction constant, so that a loss functional takes the
// constant in place of its options (`F::mse_loss(x, y, torch::kSum)`).
#define KILN_TORCH_REDUCTION_CTORS(Options)                     \
  Options() {}                                                  \
  Options(torch::enumtype::kNone) : reduction_(torch::kNone) {} \
  Options(torch::enumtype::kMean) : reduction_(torch::kMean) {} \
  Options(torch::enumtype::kSum) : reduction_(torch::kSum) {}
