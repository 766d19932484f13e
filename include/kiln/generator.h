// Generator: the seeded source of randomness behind rand/randn/randint/dropout.
//
// Note [Counter-based random numbers]
// Kiln uses Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a
// random block is a pure function of (seed, counter). A generator is just a seed and an offset;
// a random op reserves one counter per output element (offset .. offset + numel) and element i
// of the result (row-major) uses counter offset + i. Values therefore do not depend on how many
// threads fill the tensor, and a traced program can replay an op from its (seed, offset) pair.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <utility>

namespace kiln {

// One Philox4x32-10 block: 128 random bits for (seed, counter).
inline std::array<uint32_t, 4> philox4x32_10(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;  // PyTorch's default seed

  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed) {}
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Restarts the stream: same seed, same values from here on.
  void manual_seed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seed_;
  }
  uint64_t offset() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return offset_;
  }
  void set_offset(uint64_t offset) {
    std::lock_guard<std::mutex> lock(mutex_);
    offset_ = offset;
  }
  // Reserves `n` counters for one op: returns (seed, first counter). Thread-safe.
  std::pair<uint64_t, uint64_t> reserve(uint64_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t first = offset_;
    offset_ += n;
    return {seed_, first};
  }

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide generator random ops use when none is passed.
Generator& default_generator();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace kiln
