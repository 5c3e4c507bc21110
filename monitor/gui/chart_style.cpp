// See chart_style.h.
#include "monitor/gui/chart_style.h"

#include <QFontMetricsF>
#include <algorithm>
#include <cmath>

#include "monitor/report/units.h"

namespace memtap::gui {

QColor curve_color(const std::string& name, size_t index) {
  if (name == "Allocated") return QColor(0x1f, 0x77, 0xb4);      // blue
  if (name == "Reserved") return QColor(0xff, 0x7f, 0x0e);       // orange
  if (name == "Active") return QColor(0x2c, 0xa0, 0x2c);         // green
  if (name == "App Reserved") return QColor(0x94, 0x67, 0xbd);   // purple
  if (name == "Fragmentation") return QColor(0xd6, 0x27, 0x28);  // red
  // Tableau-like palette, skipping the colours the named curves use.
  static const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                    QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                    QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                                    QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
  return kPalette[index % (sizeof kPalette / sizeof kPalette[0])];
}

QColor layer_color(Layer layer, bool is_mmap) {
  if (layer == Layer::kHost) return is_mmap ? QColor(0xc7, 0xc7, 0xc7) : QColor(0x1f, 0x77, 0xb4);
  switch (layer) {
    case Layer::kHostPinned:
      return QColor(0x17, 0xbe, 0xcf);
    case Layer::kHal:
      return QColor(0xff, 0x7f, 0x0e);
    case Layer::kPta:
      return QColor(0x2c, 0xa0, 0x2c);
    case Layer::kPtaWorkspace:
      return QColor(0x98, 0xdf, 0x8a);
    case Layer::kAtb:
      return QColor(0x94, 0x67, 0xbd);
    case Layer::kMindspore:
      return QColor(0x8c, 0x56, 0x4b);
    default:
      return QColor(0x7f, 0x7f, 0x7f);
  }
}

AxisSteps nice_axis_steps(double max_value, int max_intervals) {
  max_intervals = std::max(max_intervals, 1);
  if (!(max_value > 0) || !std::isfinite(max_value)) max_value = 1;
  // With one interval the top is the axis' only label besides 0, and any value of two
  // significant digits reads as well as a round one: 600 MiB, not 1000, over a 504 MiB peak.
  static const std::vector<double> kTicked = {1, 2, 5};
  static const std::vector<double> kTopOnly = {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8};
  const std::vector<double>& multiples = max_intervals == 1 ? kTopOnly : kTicked;
  // The smallest power of ten whose step of 1 could be enough, then its multiples upwards.
  double p = std::pow(10.0, std::floor(std::log10(max_value / max_intervals)));
  for (;; p *= 10) {
    for (double m : multiples) {
      const double step = m * p;
      const int intervals = std::max(1, int(std::ceil(max_value / step - 1e-9)));
      if (intervals <= max_intervals) return {intervals * step, step, intervals};
    }
  }
}

// Not QValueAxis::applyNiceNumbers(): it rounds with the axis' current tick count and then
// changes that count, so each call started from the last one's outcome and a chart that
// had once been empty drew 0-500-1000 for a 500 MiB peak (half the plot empty).
double setup_bytes_axis(QValueAxis* axis, double max_bytes, const QString& what,
                        int max_intervals) {
  const int unit = bytes_unit(std::max(max_bytes, 1.0));
  const double size = bytes_unit_size(unit);
  const AxisSteps steps = nice_axis_steps(std::max(max_bytes / size * 1.05, 1.0), max_intervals);
  axis->setTickType(QValueAxis::TicksFixed);
  axis->setRange(0, steps.top);
  axis->setTickCount(steps.intervals + 1);
  axis->setLabelFormat(QStringLiteral("%.%1f").arg(tick_label_decimals(steps.step)));
  axis->setTitleText(
      QStringLiteral("%1 (%2)").arg(what, QString::fromLatin1(bytes_unit_name(unit))));
  return size;
}

namespace {

// Decimals a time axis' labels have over a span of `span_s` seconds (0.50, 1.00 on a 3 s
// range), before the step asks for more.
int time_axis_decimals(double span_s) {
  return span_s < 0.05 ? 4 : span_s < 0.5 ? 3 : span_s < 5 ? 2 : span_s < 50 ? 1 : 0;
}

// The most intervals with labels of `decimals` whole in `font` across `width_px`.
int max_time_intervals(const QFont& font, double from_s, double to_s, double width_px,
                       int decimals) {
  const QFontMetricsF metrics(font);
  double label = 0;
  for (double v : {from_s, to_s}) {
    label = std::max(label, metrics.horizontalAdvance(QString::number(v, 'f', decimals)));
  }
  // Qt takes a label padding off each side; the rest keeps neighbouring labels apart.
  const double slot = label * 1.25 + 16;
  // A tick at each end: one more than the intervals.
  return std::clamp(int(width_px / slot) - 1, 2, 12);
}

}  // namespace

TimeTicks time_axis_ticks(const QFont& font, double from_s, double to_s, double width_px) {
  if (!(to_s > from_s)) to_s = from_s + 1e-3;
  const double span = to_s - from_s;
  TimeTicks ticks;
  ticks.decimals = time_axis_decimals(span);
  // A step finer than the span's decimals write (under a millisecond) lengthens the labels:
  // counted again with those.
  for (int pass = 0; pass < 2; ++pass) {
    const int intervals =
        width_px > 0 ? max_time_intervals(font, from_s, to_s, width_px, ticks.decimals) : 8;
    ticks.step = time_tick_step(span, intervals);
    const int needed = std::max(ticks.decimals, tick_label_decimals(ticks.step));
    if (needed == ticks.decimals) break;
    ticks.decimals = needed;
  }
  return ticks;
}

void setup_time_axis(QValueAxis* axis, double from_s, double to_s, double width_px) {
  if (!(to_s > from_s)) to_s = from_s + 1e-3;
  const TimeTicks ticks = time_axis_ticks(axis->labelsFont(), from_s, to_s, width_px);
  const double step = ticks.step;
  axis->setLabelFormat(QStringLiteral("%.%1f").arg(ticks.decimals));
  axis->setTickType(QValueAxis::TicksDynamic);
  // The axis makes a tick item for every interval of its range at once: change the interval
  // and the range in the order that never puts a small interval on a wide range (a 0.1 ms
  // interval on a 1 s range froze the window for seconds, making 10,000 items).
  if (step >= axis->tickInterval()) {
    axis->setTickInterval(step);
    axis->setTickAnchor(std::floor(from_s / step) * step);
    axis->setRange(from_s, to_s);
  } else {
    axis->setRange(from_s, to_s);
    axis->setTickAnchor(std::floor(from_s / step) * step);
    axis->setTickInterval(step);
  }
  axis->setTitleText(QStringLiteral("Time since start (s)"));
}

double time_tick_step(double span_s, int max_ticks) {
  if (!(span_s > 0)) span_s = 1e-3;
  const double raw = span_s / std::max(max_ticks, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  // Rounded up, never to the nearest: 2p for a raw step of 3.4p made 70 % more ticks than
  // asked for, and their labels no longer fitted.
  const double r = raw / p * (1 - 1e-9);
  return r <= 1 ? p : r <= 2 ? 2 * p : r <= 5 ? 5 * p : 10 * p;
}

int tick_label_decimals(double step) {
  int decimals = 0;
  for (; decimals < 9; ++decimals) {
    const double scaled = step * std::pow(10.0, decimals);
    const double whole = std::round(scaled);
    if (whole >= 1 && std::abs(scaled - whole) <= 1e-6 * scaled) break;
  }
  return decimals;
}

namespace {

// Buckets narrower than this many pixel columns are drawn as their extreme then their last
// value (two points); wider ones as the steps of their first point, extremes and last point
// (up to four): at two or three pixels those steps cannot be told from the slope. Zoomed out
// a bucket is 1-3 pixels wide. The same width makes refine_curves read a bucket's points.
constexpr int64_t kStepColumns = viewdata::kWideBucketColumns;

// The outline of an envelope along its max (or min), then the points after it. A bucket
// kStepColumns columns wide or more is drawn as its steps (timeline::bucket_steps), the
// same for both outlines: there is no band over it. Buckets count points, so a wide one is
// a quiet stretch, and its max (or min) drawn over all of it would show a value held long
// after it was gone (a pool's slabs unmapped at its start read as still reserved), until
// refine_curves replaces it with its points. Buckets that end within `column_ns` of where
// they start are merged into one column of that width (its extreme, then its last value),
// and buckets narrower than kStepColumns columns are drawn the same way: two points.
// Laying out and stroking the points is most of a redraw's time in Qt Charts (zoomed out,
// 24,000 points in 10 series took 20 ms of a 35 ms redraw).
QList<QPointF> outline(const viewdata::CurveLine& line, int64_t origin_ns, int64_t end_ns,
                       double unit, bool upper, int64_t column_ns) {
  QList<QPointF> out;
  auto x = [origin_ns](int64_t t) { return double(t - origin_ns) / 1e9; };
  auto to = [&](int64_t t, double y) {
    if (!out.isEmpty() && out.back().y() == y) return;  // the level holds on
    if (!out.isEmpty() && out.back().x() != x(t)) out.append(QPointF(x(t), out.back().y()));
    out.append(QPointF(x(t), y));
  };
  auto edge_of = [upper](const timeline::EnvelopeBucket& b) {
    return upper ? b.max_bytes : b.min_bytes;
  };
  out.reserve(qsizetype(line.envelope.size() * 4 + line.points.size() * 2 + 1));
  const std::vector<timeline::EnvelopeBucket>& env = line.envelope;
  for (size_t i = 0; i < env.size();) {
    const timeline::EnvelopeBucket& b = env[i];
    if (b.t_last_ns - b.t_first_ns >= column_ns * kStepColumns) {
      const timeline::BucketSteps steps = timeline::bucket_steps(b);
      for (int k = 0; k < steps.count; ++k)
        to(steps.steps[k].ts_ns, double(steps.steps[k].value_bytes) / unit);
      ++i;
      continue;
    }
    int64_t edge = edge_of(b);
    size_t j = i + 1;
    for (; j < env.size() && env[j].t_last_ns - b.t_first_ns < column_ns; ++j)
      edge = upper ? std::max(edge, env[j].max_bytes) : std::min(edge, env[j].min_bytes);
    const timeline::EnvelopeBucket& last = env[j - 1];
    // The level before holds up to the column unless the column follows it within a pixel.
    if (!out.isEmpty() && x(b.t_first_ns) - out.back().x() >= double(column_ns) / 1e9)
      out.append(QPointF(x(b.t_first_ns), out.back().y()));
    out.append(QPointF(x(b.t_first_ns), double(edge) / unit));
    out.append(QPointF(x(last.t_last_ns), double(last.last_bytes) / unit));
    i = j;
  }
  for (const timeline::CurvePoint& p : line.points) to(p.ts_ns, double(p.value_bytes) / unit);
  if (!out.isEmpty() && x(end_ns) > out.back().x()) out.append(QPointF(x(end_ns), out.back().y()));
  return out;
}

}  // namespace

QList<QPointF> step_points(const viewdata::CurveLine& line, int64_t origin_ns, int64_t end_ns,
                           double unit, int64_t column_ns) {
  return outline(line, origin_ns, end_ns, unit, true, column_ns);
}

void envelope_band(const viewdata::CurveLine& line, int64_t origin_ns, int64_t end_ns, double unit,
                   int64_t column_ns, QList<QPointF>* upper, QList<QPointF>* lower) {
  viewdata::CurveLine older = line;
  older.points.clear();
  const int64_t band_end = line.points.empty() ? end_ns : line.points.front().ts_ns;
  *upper = outline(older, origin_ns, band_end, unit, true, column_ns);
  *lower = outline(older, origin_ns, band_end, unit, false, column_ns);
}

}  // namespace memtap::gui
