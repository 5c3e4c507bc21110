// See profiler_csv_text.h.
#include "monitor/store/export/profiler_csv_text.h"

#include "monitor/model/mem_event.h"

namespace memtap {
namespace {

// |bytes| / 2^shift as an exact decimal with at least one fractional digit.
std::string binary_fraction_text(int64_t bytes, int shift) {
  const bool negative = bytes < 0;
  const uint64_t magnitude = negative ? uint64_t(0) - uint64_t(bytes) : uint64_t(bytes);
  const uint64_t whole = magnitude >> shift;
  const uint64_t fraction = magnitude & ((uint64_t(1) << shift) - 1);
  // fraction / 2^shift == fraction * 5^shift / 10^shift: `shift` decimal digits.
  unsigned __int128 digits = fraction;
  for (int i = 0; i < shift; ++i) digits *= 5;
  std::string decimals(size_t(shift), '0');
  for (int i = shift - 1; i >= 0; --i) {
    decimals[size_t(i)] = char('0' + int(digits % 10));
    digits /= 10;
  }
  while (decimals.size() > 1 && decimals.back() == '0') decimals.pop_back();
  return (negative ? "-" : "") + std::to_string(whole) + "." + decimals;
}

}  // namespace

std::string us_text(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t magnitude = negative ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  std::string decimals = std::to_string(magnitude % 1000);
  decimals.insert(0, 3 - decimals.size(), '0');
  return (negative ? "-" : "") + std::to_string(magnitude / 1000) + "." + decimals;
}

std::string us_cell(int64_t ns) {
  return us_text(ns) + "\t";
}

std::string kb_text(int64_t bytes) {
  return binary_fraction_text(bytes, 10);
}

std::string mb_text(int64_t bytes) {
  return binary_fraction_text(bytes, 20);
}

std::string device_type_text(int32_t device) {
  if (device >= 0) return "NPU:" + std::to_string(device);
  return device == kHostDevice ? "CPU" : "";
}

std::string stream_text(uint64_t stream) {
  return stream == 0 ? std::string() : std::to_string(stream);
}

}  // namespace memtap
