// Time to OOM: how long until a curve reaches the memory's capacity at its recent rate of
// growth, said only when the growth is sustained. A sawtooth that climbs for a while and
// drops back, or noise around a level, is not a leak, and a forecast from it would cry
// wolf; so the rate is a least-squares line over the last stretch of the session, and it
// counts only with a positive slope, a good fit (R^2) and an end above the start.
#pragma once

#include <cstdint>
#include <span>

#include "monitor/model/mem_event.h"

namespace memtap::timeline {

struct LinearFit {
  double slope = 0;
  double intercept = 0;
  double r2 = 0;  // 0 when y does not vary (nothing to explain) or fewer than 2 points
};

LinearFit least_squares(std::span<const double> x, std::span<const double> y);

struct OomOptions {
  double window_fraction = 0.1;            // the last 10% of the session...
  int64_t min_window_ns = 60'000'000'000;  // ...but at least the last 60 s (or all of it)
  double min_r2 = 0.8;                     // a fit this good, or no forecast
  // A forecast reaches at most this many times the session's length ahead: the first
  // seconds of every run grow steadily (imports, the model's weights), and a straight line
  // from 0.3 s of them said "Time to OOM: 1 min 20 s" in every live window.
  double max_extrapolation = 10;
  uint32_t samples = 512;  // evenly spaced samples of the curve in the window
};

enum class OomStatus : uint8_t {
  kNoData,             // too little of the curve to fit a line to
  kNoSustainedGrowth,  // flat, falling, or not steady enough
  kNoCapacity,         // sustained growth, but the capacity is unknown
  kForecast,           // seconds_to_oom holds the forecast
  kTooEarly,           // sustained growth, but capacity is further ahead than the data allow
                       // a forecast to reach (seconds_at_rate says how far)
};

const char* to_string(OomStatus status);  // "no sustained growth", ...

struct OomForecast {
  OomStatus status = OomStatus::kNoData;
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  double slope_bytes_per_s = 0;
  double r2 = 0;
  int64_t current_bytes = 0;
  int64_t capacity_bytes = kUnknown;
  double seconds_to_oom = -1;   // kForecast only; 0 when the curve is already at capacity
  double seconds_at_rate = -1;  // kForecast and kTooEarly: capacity at this rate, in seconds
};

// The forecast from `values` sampled at evenly spaced times over [window_start_ns,
// window_end_ns], the curve's newest value and the capacity (kUnknown if not known); no
// further ahead than `max_ahead_s` (<= 0: any distance).
OomForecast forecast_oom(std::span<const double> values, int64_t window_start_ns,
                         int64_t window_end_ns, int64_t current_bytes, int64_t capacity_bytes,
                         double min_r2, double max_ahead_s = 0);

}  // namespace memtap::timeline
