// Dispatch keys, highest priority last in the enum (see DESIGN.md section 3).
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

namespace kiln {

enum class DispatchKey : uint8_t {
  CPU,       // backend: real kernels
  Meta,      // backend: shapes and dtypes only, no data
  Subclass,  // tensor subclasses
  Record,    // fake tensors recording a joint forward/backward graph, below autograd (src/aot)
  Autograd,  // records a backward node, then redispatches below itself
  Vmap,      // batched tensors
  Trace,     // fake tensors recording a graph
};
inline constexpr int kNumDispatchKeys = 7;

std::string_view dispatch_key_name(DispatchKey k);

constexpr bool is_backend_key(DispatchKey k) {
  return k == DispatchKey::CPU || k == DispatchKey::Meta;
}

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(DispatchKey k) : bits_(bit(k)) {}
  constexpr DispatchKeySet(std::initializer_list<DispatchKey> keys) {
    for (DispatchKey k : keys) bits_ |= bit(k);
  }
  constexpr bool has(DispatchKey k) const { return bits_ & bit(k); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return raw(bits_ | o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return raw(bits_ & ~o.bits_); }
  constexpr DispatchKeySet add(DispatchKey k) const { return raw(bits_ | bit(k)); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return raw(bits_ & ~bit(k)); }
  // The highest-priority key; the set must not be empty.
  constexpr DispatchKey highest() const {
    return static_cast<DispatchKey>(31 - std::countl_zero(bits_));
  }
  constexpr uint32_t bits() const { return bits_; }
  friend constexpr bool operator==(DispatchKeySet a, DispatchKeySet b) {
    return a.bits_ == b.bits_;
  }

 private:
  static constexpr uint32_t bit(DispatchKey k) { return 1u << static_cast<int>(k); }
  static constexpr DispatchKeySet raw(uint32_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

}  // namespace kiln
