// What every chart of the window shares: the colours of the curves (the same curve has the
// same colour everywhere), byte axes in one 1024-based unit, the time axis in seconds
// since the start, and curves turned into the step lines they are.
#pragma once

#include <QColor>
#include <QFont>
#include <QList>
#include <QPointF>
#include <QString>
#include <QtCharts/QValueAxis>
#include <cstdint>
#include <vector>

#include "monitor/viewdata/curves_data.h"

namespace memtap::gui {

// Allocated, Reserved, Active, App Reserved, Fragmentation have fixed colours; other lines
// (groups) take `index` in a palette of distinguishable colours.
QColor curve_color(const std::string& name, size_t index);

// The layers' colours, shared by the lifetime graph, the pool and the breakdown.
QColor layer_color(Layer layer, bool is_mmap);

// A byte axis: values are plotted in one unit (KiB ... TiB) chosen for `max_bytes`; the
// axis' title says which. It runs from 0 to the first round value above `max_bytes` and 5 %
// headroom (nice_axis_steps), in at most `max_intervals` intervals; the same maximum
// always gives the same axis, whatever the axis showed before. Returns the unit's size in
// bytes (plot values / it).
double setup_bytes_axis(QValueAxis* axis, double max_bytes, const QString& what,
                        int max_intervals = 6);
// That axis' top and step for `max_value` in the axis' unit: the smallest step of 1, 2 or 5
// times a power of ten that reaches past `max_value` in at most `max_intervals` steps; for
// one interval (an axis labelled only at 0 and its top), the smallest top of 1, 1.2, 1.5,
// 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten.
struct AxisSteps {
  double top = 1;
  double step = 1;
  int intervals = 1;
};
AxisSteps nice_axis_steps(double max_value, int max_intervals);
// A time axis in seconds since the start, over [from_s, to_s], `width_px` wide (0: not
// known yet; 8 intervals at most), ticked by time_axis_ticks().
void setup_time_axis(QValueAxis* axis, double from_s, double to_s, double width_px = 0);
// A time axis' ticks: every `step` seconds (1, 2 or 5 times a power of ten), labelled with
// `decimals`. As many as their labels in `font` have room for, whole, across `width_px`
// (2 to 12 intervals): Qt Charts gives each label the axis' width over its tick count and
// elides one wider, so a 25 ms range at 0.14 s in a 600 px plot, 13 ticks of "0.1420",
// read as a row of "0.14...". Views that draw their own time axis (the lifetime graph, the
// flame chart) ask it with their width and font: where those are the curves', so are the
// ticks.
struct TimeTicks {
  double step = 1;
  int decimals = 0;
};
TimeTicks time_axis_ticks(const QFont& font, double from_s, double to_s, double width_px);
// The step between ticks for a span of `span_s` seconds: the smallest of 1, 2 or 5 times a
// power of ten that makes at most `max_ticks` intervals.
double time_tick_step(double span_s, int max_ticks = 8);
// Decimals a tick label needs at that step, time or bytes: the fewest that write every
// multiple of it exactly ("12.35" at 0.05 s, "1.5" at 1.5 KiB, "600" at 100 MiB).
int tick_label_decimals(double step);

// The line as a step line in chart coordinates (x: seconds since origin_ns, y: bytes /
// unit), held until `end_ns`. Over an envelope's part each bucket is the steps of its
// first point, its extremes and its last point, each at its time (timeline::bucket_steps),
// then its last value holds until the next bucket (no point lies between two buckets).
// Buckets narrower than `column_ns` (a pixel of the chart; 0: none) are drawn per column of
// that width: the column's max, then its last value; so are buckets only a few columns wide.
QList<QPointF> step_points(const viewdata::CurveLine& line, int64_t origin_ns, int64_t end_ns,
                           double unit, int64_t column_ns = 0);
// An envelope's band: the same shape along the columns' max (upper) and min (lower); between
// buckets both are the last value, and over a bucket a few columns wide or more both are
// its steps, so the band is only as wide as the values really were.
void envelope_band(const viewdata::CurveLine& line, int64_t origin_ns, int64_t end_ns, double unit,
                   int64_t column_ns, QList<QPointF>* upper, QList<QPointF>* lower);

}  // namespace memtap::gui
