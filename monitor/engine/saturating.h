// Byte counts from untrusted input (a sender's sizes, a file's rows): sums saturate instead of
// wrapping, differences stop at 0, and a count handed to int64 code is clamped to int64's top.
// Only absurd input (blocks of 2^62 bytes and more) ever reaches the limits; below them every
// figure is exact.
#pragma once

#include <cstdint>
#include <limits>

namespace memtap {

inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<uint64_t>::max() : sum;
}

// a - b, 0 when b is more: a total that saturated on the way up gives back no more than it holds.
inline uint64_t saturating_sub(uint64_t a, uint64_t b) {
  return a > b ? a - b : 0;
}

// a - b held within int64's range: times from a file (a range's width, a bound before its
// start).
inline int64_t saturating_sub(int64_t a, int64_t b) {
  int64_t out;
  if (!__builtin_sub_overflow(a, b, &out)) return out;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t clamp_to_int64(uint64_t n) {
  constexpr auto kMax = uint64_t(std::numeric_limits<int64_t>::max());
  return int64_t(n > kMax ? kMax : n);
}

// A double (a product of a size or time with a factor) as int64, held within its range:
// int64's top is 2^63 as a double, which no int64 holds, and converting it, or anything
// past it, is undefined. NaN gives 0.
inline int64_t int64_from_double(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (v < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// The same for uint64: 2^64 as a double and past it give uint64's top; below 0, 0.
inline uint64_t uint64_from_double(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
  return uint64_t(v);
}

}  // namespace memtap
