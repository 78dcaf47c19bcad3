// A seeded random number generator whose sequence is fixed by this file alone, not by the
// standard library's distribution implementations: a scenario file plus a seed must replay the
// same faults on the same targets at the same times on any build.
//
// Thread-safety: none; give each thread (or each named purpose, via Fork) its own Rng.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace fl {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // SplitMix64: small, fast, and passes BigCrush; plenty for choosing targets and jitter.
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n); n > 0. Rejection sampling, so there is no modulo bias.
  uint64_t Below(uint64_t n) {
    if (n <= 1) return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % n;
  }

  // Uniform in [lo, hi], inclusive. REQUIRES: lo <= hi.
  int64_t Between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // An independent stream for a named purpose ("fault/2/target"): adding a draw for one
  // purpose does not shift the draws of any other.
  Rng Fork(std::string_view purpose) const {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (char c : purpose) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ull;
    }
    Rng r(state_ ^ h);
    r.Next();
    return r;
  }

  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace fl
