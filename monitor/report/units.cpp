// See units.h.
#include "monitor/report/units.h"

#include <algorithm>
#include <cstdio>

#include "monitor/model/mem_event.h"

namespace memtap {

namespace {
const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
constexpr int kLastUnit = 4;
}  // namespace

int bytes_unit(double bytes) {
  if (bytes < 0) bytes = -bytes;
  int unit = 0;
  while (bytes >= 1024 && unit < kLastUnit) {
    bytes /= 1024;
    ++unit;
  }
  return unit;
}

double bytes_unit_size(int unit) {
  double size = 1;
  for (int i = 0; i < unit && i < kLastUnit; ++i) size *= 1024;
  return size;
}

const char* bytes_unit_name(int unit) {
  return kUnits[unit < 0 ? 0 : unit > kLastUnit ? kLastUnit : unit];
}

std::string bytes_text(double bytes) {
  const int unit = bytes_unit(bytes);
  const bool negative = bytes < 0;
  const double value = (negative ? -bytes : bytes) / bytes_unit_size(unit);
  char buf[32];
  snprintf(buf, sizeof buf, unit == 0 ? "%s%.0f %s" : "%s%.1f %s", negative ? "-" : "", value,
           kUnits[unit]);
  return buf;
}

std::string device_text(int32_t device) {
  if (device == kHostDevice) return "host";
  if (device == kNoDevice) return "no device";
  return "device " + std::to_string(device);
}

std::string device_option_text(int32_t device) {
  return device == kHostDevice ? "cpu" : std::to_string(device);
}

std::string key_text(const std::string& key) {
  if (key.empty()) return "(none)";
  // Stacks are several lines: the innermost frame names them well enough in one line.
  size_t nl = key.find('\n');
  return nl == std::string::npos ? key : key.substr(0, nl) + " ...";
}

std::string duration_text(int64_t ns) {
  char buf[48];
  const bool negative = ns < 0;
  const double v = double(negative ? -ns : ns);
  const char* sign = negative ? "-" : "";
  if (v < 1e3) {
    snprintf(buf, sizeof buf, "%s%.0f ns", sign, v);
  } else if (v < 1e6) {
    snprintf(buf, sizeof buf, "%s%.1f µs", sign, v / 1e3);
  } else if (v < 1e9) {
    snprintf(buf, sizeof buf, "%s%.1f ms", sign, v / 1e6);
  } else if (v < 60e9) {
    snprintf(buf, sizeof buf, "%s%.3f s", sign, v / 1e9);
  } else if (v < 3600e9) {
    const long long s = (long long)(v / 1e9);
    snprintf(buf, sizeof buf, "%s%lld min %02lld s", sign, s / 60, s % 60);
  } else {
    const long long m = (long long)(v / 60e9);
    snprintf(buf, sizeof buf, "%s%lld h %02lld min", sign, m / 60, m % 60);
  }
  return buf;
}

std::string seconds_duration_text(double seconds) {
  return duration_text(int64_t(std::min(seconds, 1e9) * 1e9));
}

std::string count_text(uint64_t n) {
  std::string digits = std::to_string(n);
  for (int at = int(digits.size()) - 3; at > 0; at -= 3) digits.insert(size_t(at), ",");
  return digits;
}

std::string session_growth_text(double bytes_per_s) {
  if (!(bytes_per_s > 0)) return "";
  return "growth +" + bytes_text(bytes_per_s) + "/s over the session";
}

}  // namespace memtap
