// See oom_forecast.h.
#include "monitor/engine/timeline/oom_forecast.h"

#include <algorithm>
#include <vector>

namespace memtap::timeline {

LinearFit least_squares(std::span<const double> x, std::span<const double> y) {
  LinearFit fit;
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return fit;
  // Centred sums: byte counts near 1e11 and times near 1e11 ns would lose digits in the
  // textbook sum-of-squares form.
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= double(n);
  my /= double(n);
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx == 0) return fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  fit.r2 = syy == 0 ? 0 : (sxy * sxy) / (sxx * syy);
  return fit;
}

const char* to_string(OomStatus status) {
  switch (status) {
    case OomStatus::kNoData:
      return "not enough data";
    case OomStatus::kNoSustainedGrowth:
      return "no sustained growth";
    case OomStatus::kNoCapacity:
      return "sustained growth, capacity unknown";
    case OomStatus::kForecast:
      return "sustained growth";
    case OomStatus::kTooEarly:
      return "sustained growth, too early to forecast";
  }
  return "?";
}

OomForecast forecast_oom(std::span<const double> values, int64_t window_start_ns,
                         int64_t window_end_ns, int64_t current_bytes, int64_t capacity_bytes,
                         double min_r2, double max_ahead_s) {
  OomForecast f;
  f.window_start_ns = window_start_ns;
  f.window_end_ns = window_end_ns;
  f.current_bytes = current_bytes;
  f.capacity_bytes = capacity_bytes;
  const size_t n = values.size();
  if (n < 3 || window_end_ns <= window_start_ns) return f;

  std::vector<double> seconds(n);
  const double span_s = double(window_end_ns - window_start_ns) * 1e-9;
  for (size_t i = 0; i < n; ++i) seconds[i] = span_s * double(i) / double(n - 1);
  LinearFit fit = least_squares(seconds, values);
  f.slope_bytes_per_s = fit.slope;
  f.r2 = fit.r2;

  const bool sustained = fit.slope > 0 && fit.r2 >= min_r2 && values.back() > values.front();
  if (!sustained) {
    f.status = OomStatus::kNoSustainedGrowth;
    return f;
  }
  if (capacity_bytes == kUnknown || capacity_bytes <= 0) {
    f.status = OomStatus::kNoCapacity;
    return f;
  }
  f.seconds_at_rate = std::max(0.0, double(capacity_bytes - current_bytes) / fit.slope);
  if (max_ahead_s > 0 && f.seconds_at_rate > max_ahead_s) {
    f.status = OomStatus::kTooEarly;
    return f;
  }
  f.status = OomStatus::kForecast;
  f.seconds_to_oom = f.seconds_at_rate;
  return f;
}

}  // namespace memtap::timeline
