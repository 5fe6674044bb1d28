// Spora's counter-based random numbers: element i of the stream of seed s is a pure function of
// (s, i), so any backend (CPU threads, CUDA blocks, shards of a partitioned tensor) produces the
// same values for the same seed without sharing state.
//
//   key(s)      = splitmix64(s)                       (the first SplitMix64 output of state s)
//   bits(s, i)  = finalize(key(s) + (i + 1) * GAMMA)  (element i of SplitMix64 from state key)
//   u(s, i)     = (bits(s, i) >> 11) * 2^-53          uniform in [0, 1), 53 bits
//   normal(s,i) = sqrt(-2 ln(1 - u(s, 2i))) * cos(2 pi u(s, 2i + 1))   (Box-Muller)
//
// with GAMMA = 0x9E3779B97F4A7C15 and finalize the SplitMix64 output function (Steele, Lea and
// Flood 2014; Vigna's splitmix64.c). Element i of a tensor is its row-major flat index.
// uniform(low, high) = low + (high - low) * u, computed in double, rounded once to the dtype
// (and kept below high). dropout keeps element i when u(seed, i) >= p.
#pragma once

#include <cmath>
#include <cstdint>

namespace spora::sem::rng {

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

inline uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint64_t splitmix64(uint64_t state) { return finalize(state + kGamma); }
inline uint64_t bits(uint64_t seed, uint64_t i) {
  return finalize(splitmix64(seed) + (i + 1) * kGamma);
}
inline double uniform01(uint64_t seed, uint64_t i) {
  return static_cast<double>(bits(seed, i) >> 11) * 0x1.0p-53;
}
inline double normal01(uint64_t seed, uint64_t i) {
  double u1 = uniform01(seed, 2 * i), u2 = uniform01(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(6.283185307179586476925 * u2);
}

}  // namespace spora::sem::rng
