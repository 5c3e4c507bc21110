// How memtap writes sizes, times and devices for people, the same in the report and in
// the window: bytes 1024-based (B, KiB, MiB, GiB, TiB), times since the session began.
#pragma once

#include <cstdint>
#include <string>

namespace memtap {

// "512 B", "1.5 KiB", "667.4 MiB"; negative values keep their sign.
std::string bytes_text(double bytes);

// The unit bytes_text would pick for `bytes` (0: B, 1: KiB, ... 4: TiB) and its size, for an
// axis whose labels share one unit.
int bytes_unit(double bytes);
double bytes_unit_size(int unit);
const char* bytes_unit_name(int unit);

// A count for people, its digits grouped by threes: "7", "12,345", "1,115,244" (the window
// says counts so too, in the locale's grouping).
std::string count_text(uint64_t n);

// "host" for the host ("cpu" in the recording), "no device", "device N".
std::string device_text(int32_t device);

// A device as --device takes it (memtap check, memtap monitor): "cpu", "0", "1", ...
std::string device_option_text(int32_t device);

// A stack or other multi-line key by its first line, with " ..." when there are more;
// "(none)" for "".
std::string key_text(const std::string& key);

// A duration for people: "850 ns", "12.3 µs", "4.5 ms", "2.250 s", "3 min 20 s", "1 h 02 min".
std::string duration_text(int64_t ns);

// The same for seconds from a forecast (time to OOM): a billion seconds at most, so that
// the nanoseconds fit.
std::string seconds_duration_text(double seconds);

// "growth +1.0 MiB/s over the session" when live bytes rose over it (a slope above 0), ""
// otherwise: a falling slope is no news about a leak. The report's leak line and the
// window's finding both say it so.
std::string session_growth_text(double bytes_per_s);

}  // namespace memtap
