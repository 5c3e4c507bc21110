// The unit of a file's `Timestamp(ns)` column, decided once per file.
//
// msMemScope files of 2025-04 hold microseconds in the column named `Timestamp(ns)`
// (1746006014162153: 16 digits, where an epoch time in nanoseconds has 19). The unit is
// taken from the file's first positive timestamp and applied to every row, so a file is
// never half scaled: a value in [1e15, 4.2e15) is an epoch time in microseconds (2001 to
// 2103); anything else is taken as nanoseconds, as the column's name says.
#pragma once

#include <cstdint>

namespace memtap::reader {

class TimestampUnit {
 public:
  TimestampUnit() = default;
  // A unit decided beforehand (a database read by several threads decides it once).
  explicit TimestampUnit(int64_t factor) : factor_(factor) {}
  static int64_t factor_for(int64_t raw) {
    return raw >= kMinEpochUs && raw < kMaxEpochUs ? 1000 : 1;
  }

  // `raw` in nanoseconds into *ns. False when that does not fit an int64 (a time past 2262,
  // or before 1677): a microsecond file's value of more than 16 digits.
  bool to_ns(int64_t raw, int64_t* ns) {
    if (factor_ == 0 && raw > 0) factor_ = factor_for(raw);
    return !__builtin_mul_overflow(raw, factor_ == 0 ? 1 : factor_, ns);
  }
  // 1000 for a microsecond file, 1 for nanoseconds, 0 before the first positive time.
  int64_t factor() const { return factor_; }

 private:
  static constexpr int64_t kMinEpochUs = 1'000'000'000'000'000;  // 2001-09-09
  static constexpr int64_t kMaxEpochUs = 4'200'000'000'000'000;  // 2103-02-04
  int64_t factor_ = 0;
};

}  // namespace memtap::reader
