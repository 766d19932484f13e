// TORCH_ARG: an option of a LibTorch options builder, as LibTorch declares them:
//
//   struct MyOptions {
//     TORCH_ARG(double, lr) = 0.1;   // opts.lr(0.2) sets it and returns opts; opts.lr() reads it
//   };
#pragma once

#define TORCH_ARG(T, name)                                  \
 public:                                                    \
  inline auto name(const T& new_##name)->decltype(*this) {  \
    this->name##_ = new_##name;                             \
    return *this;                                           \
  }                                                         \
  inline const T& name() const noexcept { return name##_; } \
  inline T& name() noexcept { return name##_; }             \
                                                            \
 private:                                                   \
  T name##_
