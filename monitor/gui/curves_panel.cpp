// See curves_panel.h.
#include "monitor/gui/curves_panel.h"

#include <QGraphicsLayout>
#include <QHBoxLayout>
#include <QLineF>
#include <QMouseEvent>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "monitor/gui/chart_style.h"
#include "monitor/gui/plot_alignment.h"
#include "monitor/report/units.h"

namespace memtap::gui {

namespace {

// Active equals Allocated except while a framework block's free is pending on another
// stream, and lies on it: there its band would only hide Allocated's.
bool has_band(const viewdata::CurveLine& l, bool active_apart) {
  return l.resolution == timeline::Resolution::kEnvelope && (l.name != "Active" || active_apart);
}

// x (seconds since the start) of a plot-area position, and back, on a value axis.
double axis_x(const QChart* chart, const QValueAxis* axis, double px) {
  const QRectF plot = chart->plotArea();
  if (plot.width() <= 0) return axis->min();
  return axis->min() + (px - plot.left()) / plot.width() * (axis->max() - axis->min());
}
double axis_px(const QChart* chart, const QValueAxis* axis, double x) {
  const QRectF plot = chart->plotArea();
  const double span = axis->max() - axis->min();
  return plot.left() + (span > 0 ? (x - axis->min()) / span : 0) * plot.width();
}

// A hash of what the overview would draw. Each answer of the curves carries the overview;
// once a replay is loaded it no longer changes, and laying its lines out again took a
// tenth of each zoom's redraw.
uint64_t overview_signature(const viewdata::CurvesData& data, int64_t origin, int64_t end,
                            double width) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(uint64_t(origin));
  mix(uint64_t(end));
  mix(uint64_t(width));
  for (const viewdata::CurveLine& l : data.overview) {
    mix(std::hash<std::string>()(l.name));
    for (const timeline::EnvelopeBucket& b : l.envelope) {
      mix(uint64_t(b.t_first_ns));
      mix(uint64_t(b.t_last_ns));
      mix(uint64_t(b.min_bytes));
      mix(uint64_t(b.max_bytes));
      mix(uint64_t(b.last_bytes));
      mix(uint64_t(b.first_bytes));
      mix(uint64_t(b.t_min_ns));
      mix(uint64_t(b.t_max_ns));
    }
    for (const timeline::CurvePoint& p : l.points) {
      mix(uint64_t(p.ts_ns));
      mix(uint64_t(p.value_bytes));
    }
  }
  return h == 0 ? 1 : h;
}

// The note's line for the lines that coincide (viewdata::identical_lines), which the chart
// draws one over the other: "" when none. On a GPU without a framework pool every curve
// counts the driver's memory, and the user who sees one line is told why.
QString identical_note(const viewdata::CurvesData& data) {
  QStringList out;
  for (const std::vector<size_t>& group : viewdata::identical_lines(data)) {
    QStringList names;
    bool allocated = false, reserved = false;
    for (size_t i : group) {
      names << QString::fromStdString(data.lines[i].name);
      allocated =
          allocated || data.lines[i].name == timeline::curve_name(timeline::Curve::kAllocated);
      reserved = reserved || data.lines[i].name == timeline::curve_name(timeline::Curve::kReserved);
    }
    const QString same = names.join(QStringLiteral(" = "));
    if (data.group_by == timeline::GroupBy::kOverall && data.device >= 0 && !data.framework_pool &&
        allocated && reserved) {
      out << CurvesChart::tr(
                 "%1 on this device: no framework pool is recorded, only the "
                 "driver's (HAL) memory")
                 .arg(same);
    } else {
      out << CurvesChart::tr("%1 over this range: drawn as one line").arg(same);
    }
  }
  return out.join('\n');
}

void style_chart(QChart* chart) {
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->setBackgroundRoundness(0);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->layout()->setContentsMargins(0, 0, 0, 0);
}

}  // namespace

// --- CurvesChart -------------------------------------------------------------------------

CurvesChart::CurvesChart(ViewState* state, QWidget* parent)
    : QChartView(parent),
      state_(state),
      chart_(new QChart),
      x_(new QValueAxis),
      y_(new QValueAxis),
      step_marks_(chart_),
      range_bars_(chart_) {
  style_chart(chart_);
  chart_->legend()->hide();  // CurvesLegend, above the chart, wraps where Qt's elided
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
  setup_time_axis(x_, 0, 1);
  setup_bytes_axis(y_, 1024, tr("Memory"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing, false);
  // Qt Charts repaints for each change it makes (every axis label, every series); the chart
  // is repainted once per answer instead (and on hover), which took the live window from 60
  // frames a second to what the data needs.
  setViewportUpdateMode(QGraphicsView::NoViewportUpdate);
  setMouseTracking(true);
  setMinimumHeight(220);

  QPen hover_pen(QColor(0, 0, 0, 90));
  hover_pen.setWidthF(1);
  hover_line_ = new QGraphicsLineItem(chart_);
  hover_line_->setPen(hover_pen);
  hover_line_->setZValue(20);
  hover_line_->hide();
  QPen cursor_pen(QColor(0xb0, 0x00, 0x20));
  cursor_pen.setStyle(Qt::DashLine);
  cursor_pen.setWidthF(1.5);
  cursor_line_ = new QGraphicsLineItem(chart_);
  cursor_line_->setPen(cursor_pen);
  cursor_line_->setZValue(19);
  cursor_line_->hide();
  drag_rect_ = new QGraphicsRectItem(chart_);
  drag_rect_->setBrush(QColor(0x1f, 0x77, 0xb4, 40));
  drag_rect_->setPen(Qt::NoPen);
  drag_rect_->setZValue(18);
  drag_rect_->hide();

  note_ = new QLabel(this);
  note_->setStyleSheet(
      QStringLiteral("color: #555; background: rgba(255,255,255,200); padding: 2px"));
  note_->hide();
  // Inside the plot's top-left corner, where a curve over time seldom is; clear of the axis
  // labels wherever the plot area moves (CurvesPanel lines it up with the views below).
  connect(chart_, &QChart::plotAreaChanged, this, [this](const QRectF& plot) {
    // As many time ticks as the new width has room for.
    setup_time_axis(x_, x_->min(), x_->max(), plot.width());
    placeStepMarks();
  });

  connect(state_, &ViewState::cursorChanged, this, &CurvesChart::placeCursorLine);
  connect(state_, &ViewState::stepMarksChanged, this, &CurvesChart::placeStepMarks);
}

void CurvesChart::placeStepMarks() {
  const auto x_of = [this](int64_t t) { return axis_px(chart_, x_, state_->seconds(t)); };
  step_marks_.place(data_.step_marks, x_of, state_->stepMarks());
  range_bars_.place(data_.step_marks.ranges, x_of, state_->stepMarks());
  placeNote();
  viewport()->update();
}

void CurvesChart::placeNote() {
  if (note_->isHidden()) return;
  const QRectF plot = chart_->plotArea();
  const QSizeF size = note_->size();
  // Below the row of step labels (step_marks_overlay.cpp), and above the range bars.
  double bottom = plot.bottom();
  for (const QRectF& bar : range_bars_.barRects()) bottom = std::min(bottom, bar.top());
  if (const QRectF hidden = range_bars_.hiddenRect(); !hidden.isNull()) {
    bottom = std::min(bottom, hidden.top());
  }
  const double top = plot.top() + 24, left = plot.left() + 6;
  const double right = plot.right() - 6 - size.width(), low = bottom - 4 - size.height();
  // Top left first: where a curve over time seldom is. A pool full from the start (a
  // snapshot taken at an OOM) runs its line right there, under the note.
  const QPointF corners[] = {{left, top}, {right, top}, {left, low}, {right, low}};
  std::vector<QLineF> segments;
  for (const Drawn& d : drawn_) {
    if (d.hidden) continue;
    const QList<QPointF> points = d.line->points();
    for (qsizetype i = 1; i < points.size(); ++i) {
      segments.emplace_back(chart_->mapToPosition(points[i - 1], d.line),
                            chart_->mapToPosition(points[i], d.line));
    }
  }
  QPointF best = corners[0];
  size_t least = SIZE_MAX;
  for (const QPointF& corner : corners) {
    const QRectF r = QRectF(corner, size).adjusted(-2, -2, 2, 2);
    size_t crossed = 0;
    for (const QLineF& l : segments) {
      // A step line's segments are level or upright: their bounding boxes are the lines.
      const QRectF box = QRectF(l.p1(), l.p2()).normalized().adjusted(-0.5, -0.5, 0.5, 0.5);
      if (box.intersects(r)) ++crossed;
    }
    if (crossed < least) {
      least = crossed;
      best = corner;
    }
    if (crossed == 0) break;
  }
  note_->move(mapFromScene(chart_->mapToScene(best)));
}

QString CurvesChart::noteText() const {
  return note_->isVisible() ? note_->text() : QString();
}

std::vector<LegendEntry> CurvesChart::legendEntries() const {
  std::vector<LegendEntry> entries;
  for (const Drawn& d : drawn_) {
    entries.push_back({QString::fromStdString(d.name), d.line->pen(), d.hidden});
  }
  return entries;
}

void CurvesChart::toggleLine(const QString& name) {
  for (Drawn& d : drawn_) {
    if (d.name != name.toStdString()) continue;
    d.hidden = !d.hidden;
    d.line->setVisible(!d.hidden);
    if (d.band) d.band->setVisible(!d.hidden && d.banded);
  }
  viewport()->update();
  emit linesChanged();
}

QStringList CurvesChart::seriesNames() const {
  QStringList names;
  for (const Drawn& d : drawn_) {
    if (!d.hidden) names << QString::fromStdString(d.name);
  }
  return names;
}

void CurvesChart::rebuildSeries() {
  for (Drawn& d : drawn_) {
    chart_->removeSeries(d.line);
    delete d.line;
    if (d.band) {
      chart_->removeSeries(d.band);
      delete d.band;
    }
  }
  std::vector<Drawn> old = std::move(drawn_);
  drawn_.clear();
  for (size_t i = 0; i < data_.lines.size(); ++i) {
    const viewdata::CurveLine& l = data_.lines[i];
    Drawn d;
    d.name = l.name;
    for (const Drawn& o : old) {
      if (o.name == l.name) d.hidden = o.hidden;
    }
    const QColor color = curve_color(l.name, i);
    // Made whether or not this answer is an envelope, and hidden while it is not: adding and
    // removing series (and their legend markers) took ~40 ms of each zoom across the line.
    d.band = new QAreaSeries(new QLineSeries, new QLineSeries);
    QColor fill = color;
    fill.setAlpha(110);
    d.band->setBrush(fill);
    d.band->setPen(Qt::NoPen);
    chart_->addSeries(d.band);
    d.band->attachAxis(x_);
    d.band->attachAxis(y_);
    d.line = new QLineSeries;
    d.line->setName(QString::fromStdString(l.name));
    QPen pen(color);
    pen.setWidthF(l.name == "Active" ? 1.5 : 2.0);
    // Active runs over Allocated wherever no free is pending (everywhere on the host): in
    // even dashes and gaps Allocated shows through half of it. Qt's DashLine (3:1) hid it.
    if (l.name == "Active") pen.setDashPattern({4.0, 4.0});
    d.line->setPen(pen);
    chart_->addSeries(d.line);
    d.line->attachAxis(x_);
    d.line->attachAxis(y_);
    drawn_.push_back(d);
  }
  emit linesChanged();
}

void CurvesChart::show(const viewdata::CurvesData& data) {
  data_ = data;
  bool same = data_.lines.size() == drawn_.size();
  for (size_t i = 0; same && i < drawn_.size(); ++i) {
    same = drawn_[i].name == data_.lines[i].name;
  }
  if (!same) rebuildSeries();
  // Emptied before the axes change: Qt Charts lays every series out again on each axis
  // change, and laying out the old points (tens of thousands zoomed out) for axes about to
  // get new ones cost ~25 ms of each zoom.
  for (Drawn& d : drawn_) {
    d.line->clear();
    if (d.band) {
      d.band->upperSeries()->clear();
      d.band->lowerSeries()->clear();
    }
  }
  double max_bytes = 1024;
  for (const viewdata::CurveLine& l : data_.lines)
    max_bytes = std::max(max_bytes, double(l.peak_bytes));
  unit_ = setup_bytes_axis(y_, max_bytes, tr("Memory"));
  const int64_t origin = state_->origin();
  if (data_.t1_ns > data_.t0_ns) {
    setup_time_axis(x_, state_->seconds(data_.t0_ns), state_->seconds(data_.t1_ns),
                    chart_->plotArea().width());
  }
  // The new axes' labels may move the plot area: laid out now, while the series are empty,
  // rather than when painting, which would lay every new point out a second time.
  chart_->layout()->activate();
  // A pixel of the plot, in time: narrower buckets are drawn per pixel column.
  const int64_t column_ns =
      int64_t(double(data_.t1_ns - data_.t0_ns) / std::max(chart_->plotArea().width(), 1.0));
  const bool active_apart = viewdata::active_apart(data_);
  for (size_t i = 0; i < drawn_.size(); ++i) {
    const viewdata::CurveLine& l = data_.lines[i];
    drawn_[i].line->replace(step_points(l, origin, data_.t1_ns, unit_, column_ns));
    drawn_[i].line->setVisible(!drawn_[i].hidden);
    drawn_[i].banded = has_band(l, active_apart);
    if (drawn_[i].band) {
      QList<QPointF> upper, lower;
      if (drawn_[i].banded) envelope_band(l, origin, data_.t1_ns, unit_, column_ns, &upper, &lower);
      drawn_[i].band->upperSeries()->replace(upper);
      drawn_[i].band->lowerSeries()->replace(lower);
      drawn_[i].band->setVisible(!drawn_[i].hidden && drawn_[i].banded);
    }
  }
  QString note;
  if (data_.lines.empty() || data_.session_first_ns == 0) {
    note = more_may_come_ ? tr("No memory events for this process and device yet")
                          : tr("No memory events for this process and device in this recording");
  } else if (data_.hidden_groups != 0) {
    note = tr("The %1 largest groups are drawn; %2 more are summed in one line")
               .arg(data_.lines.size() - 1)
               .arg(data_.hidden_groups);
  } else {
    for (const viewdata::CurveLine& l : data_.lines) {
      if (l.from_store) {
        note = tr("Every point, read back from the recording");
      } else if (!l.envelope.empty() && l.envelope_points <= viewdata::kDetailPoints) {
        note = tr("Min/max per pixel; reading every point from the recording...");
        break;
      } else if (!l.envelope.empty()) {
        // Too many points to read back for one redraw: the band is exact, the steps are not.
        note = tr("Min/max per pixel (shaded); zoom in to see every event");
      }
    }
  }
  if (const QString same = identical_note(data_); !same.isEmpty()) {
    note = note.isEmpty() ? same : same + '\n' + note;
  }
  note_->setText(note);
  note_->adjustSize();
  note_->setVisible(!note.isEmpty());
  placeCursorLine();
  placeStepMarks();
}

int64_t CurvesChart::timeAt(const QPoint& pos) const {
  const QPointF p = chart_->mapFromScene(mapToScene(pos));
  return state_->fromSeconds(axis_x(chart_, x_, p.x()));
}

QString CurvesChart::hoverText(int64_t t) const {
  QString text = state_->timeText(t);
  const viewdata::StepMarksData& marks = data_.step_marks;
  if (state_->stepMarks()) {
    if (const viewdata::TimeMark* step = viewdata::step_at(marks, t); step && step->number != 0) {
      QString about = tr("began %1").arg(state_->timeText(step->ts_ns));
      // What the step left live (or freed): the question a step's line is looked at for.
      const auto change = viewdata::allocated_over_step(data_, t);
      if (change) {
        const int64_t delta = change->end_bytes - change->start_bytes;
        about += tr("; Allocated %1%2 over it")
                     .arg(delta < 0 ? QStringLiteral("-") : QStringLiteral("+"))
                     .arg(QString::fromStdString(bytes_text(std::abs(double(delta)))));
      }
      // The most it held meanwhile (activations between forward and backward), which the
      // line's ends do not show.
      if (step->peak_bytes != kUnknown) {
        const QString peak = QString::fromStdString(bytes_text(double(step->peak_bytes)));
        about += change ? tr(", peak %1").arg(peak) : tr("; Allocated peak %1").arg(peak);
      }
      text += tr(", step %1 (%2)").arg(step->number).arg(about);
    } else if (!marks.every_step) {
      // Too many steps to list: the nearest drawn on either side, so the pointer still
      // reads as a place in the run.
      const viewdata::StepsAround around = viewdata::steps_around(marks, t);
      if (around.before->number != 0 && around.after->number != 0) {
        text +=
            tr(", between steps %1 and %2").arg(around.before->number).arg(around.after->number);
      } else if (around.before->number != 0) {
        text += tr(", after step %1").arg(around.before->number);
      }
    }
    // What is drawn within a few pixels of t: the marks and OOMs there.
    const double plot_width = std::max(chart_->plotArea().width(), 1.0);
    const double near_ns = 4 * (double(data_.t1_ns) - double(data_.t0_ns)) / plot_width;
    const auto near = [&](int64_t ts) { return std::abs(double(ts) - double(t)) <= near_ns; };
    for (const viewdata::TimeMark& o : marks.ooms) {
      if (near(o.ts_ns)) text += tr("\nOut of memory: %1").arg(QString::fromStdString(o.text));
    }
    for (const viewdata::TimeMark& m : marks.marks) {
      if (near(m.ts_ns)) text += tr("\nmark: %1").arg(QString::fromStdString(m.text));
    }
    const std::vector<const viewdata::RangeBar*> bars = viewdata::range_bars_at(marks.ranges, t);
    for (const viewdata::RangeBar* bar : bars) text += '\n' + rangeText(*bar);
    if (const QString hidden = RangeBarsOverlay::hiddenText(marks.ranges);
        !bars.empty() && !hidden.isEmpty()) {
      text += '\n' + hidden;
    }
  }
  const std::vector<int64_t> values = viewdata::values_at(data_, t);
  for (size_t i = 0; i < values.size() && i < data_.lines.size(); ++i) {
    if (i < drawn_.size() && drawn_[i].hidden) continue;
    text += QStringLiteral("\n%1: %2 (%3 B)")
                .arg(QString::fromStdString(data_.lines[i].name),
                     QString::fromStdString(bytes_text(double(values[i]))),
                     QLocale().toString(qlonglong(values[i])));
  }
  return text;
}

QString CurvesChart::rangeText(const viewdata::RangeBar& bar) const {
  if (bar.ranges > 1) {
    return tr("%1, %2 to %3: zoom in to tell them apart")
        .arg(RangeBarsOverlay::barText(bar), state_->timeText(bar.start_ns),
             state_->timeText(bar.end_ns));
  }
  const QString name = QString::fromStdString(bar.name);
  if (bar.open) {
    return tr("range %1: began %2, still open").arg(name, state_->timeText(bar.start_ns));
  }
  QString text = tr("range %1: %2 to %3 (%4)")
                     .arg(name, state_->timeText(bar.start_ns), state_->timeText(bar.end_ns),
                          QString::fromStdString(duration_text(bar.end_ns - bar.start_ns)));
  if (const auto change = viewdata::allocated_between(data_, bar.start_ns, bar.end_ns)) {
    const int64_t delta = change->end_bytes - change->start_bytes;
    text += tr("; Allocated %1%2 over it")
                .arg(delta < 0 ? QStringLiteral("-") : QStringLiteral("+"))
                .arg(QString::fromStdString(bytes_text(std::abs(double(delta)))));
  }
  return text;
}

void CurvesChart::placeCursorLine() {
  const QRectF plot = chart_->plotArea();
  if (!state_->cursorSet() || data_.lines.empty()) {
    cursor_line_->hide();
    return;
  }
  const double x = axis_px(chart_, x_, state_->seconds(state_->cursor()));
  if (x < plot.left() || x > plot.right()) {
    cursor_line_->hide();
    return;
  }
  cursor_line_->setLine(x, plot.top(), x, plot.bottom());
  cursor_line_->show();
  viewport()->update();
}

void CurvesChart::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QChartView::mousePressEvent(event);
  const QPointF p = chart_->mapFromScene(mapToScene(event->pos()));
  if (!chart_->plotArea().contains(p)) return QChartView::mousePressEvent(event);
  press_x_ = event->pos().x();
  dragging_ = false;
}

void CurvesChart::mouseMoveEvent(QMouseEvent* event) {
  const QPointF p = chart_->mapFromScene(mapToScene(event->pos()));
  const QRectF plot = chart_->plotArea();
  if (press_x_ >= 0 && std::abs(event->pos().x() - press_x_) > 4) dragging_ = true;
  if (dragging_) {
    const QPointF a = chart_->mapFromScene(mapToScene(QPoint(press_x_, 0)));
    const double left = std::clamp(std::min(a.x(), p.x()), plot.left(), plot.right());
    const double right = std::clamp(std::max(a.x(), p.x()), plot.left(), plot.right());
    drag_rect_->setRect(left, plot.top(), right - left, plot.height());
    drag_rect_->show();
    viewport()->update();
  }
  if (!plot.contains(p) || data_.lines.empty()) {
    hover_line_->hide();
    QToolTip::hideText();
    return QChartView::mouseMoveEvent(event);
  }
  hover_line_->setLine(p.x(), plot.top(), p.x(), plot.bottom());
  hover_line_->show();
  viewport()->update();
  QToolTip::showText(event->globalPosition().toPoint(), hoverText(timeAt(event->pos())), this);
  QChartView::mouseMoveEvent(event);
}

void CurvesChart::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || press_x_ < 0)
    return QChartView::mouseReleaseEvent(event);
  if (dragging_) {
    const int64_t a = timeAt(QPoint(press_x_, event->pos().y()));
    const int64_t b = timeAt(event->pos());
    if (a != b) state_->setRange(std::min(a, b), std::max(a, b));
  } else {
    state_->setCursor(timeAt(event->pos()));
  }
  drag_rect_->hide();
  viewport()->update();
  press_x_ = -1;
  dragging_ = false;
}

void CurvesChart::mouseDoubleClickEvent(QMouseEvent* event) {
  const QPointF p = chart_->mapFromScene(mapToScene(event->pos()));
  int64_t begin = 0, end = 0;
  if (event->button() != Qt::LeftButton || !chart_->plotArea().contains(p) ||
      !state_->stepMarks()) {
    return QChartView::mouseDoubleClickEvent(event);
  }
  if (const int bar = range_bars_.barAt(p); bar >= 0) {
    begin = data_.step_marks.ranges.bars[size_t(bar)].start_ns;
    end = data_.step_marks.ranges.bars[size_t(bar)].end_ns;
  } else if (!viewdata::step_span_at(data_.step_marks, timeAt(event->pos()), data_.t1_ns, &begin,
                                     &end)) {
    return QChartView::mouseDoubleClickEvent(event);
  }
  if (end <= begin) return QChartView::mouseDoubleClickEvent(event);
  state_->setRange(begin, end);
  event->accept();
}

void CurvesChart::wheelEvent(QWheelEvent* event) {
  const int64_t around = timeAt(event->position().toPoint());
  const int64_t t0 = state_->t0(), t1 = state_->t1();
  if (t1 <= t0) return;
  const double factor = event->angleDelta().y() > 0 ? 0.8 : 1.25;
  const int64_t n0 = around - int64_t(double(around - t0) * factor);
  const int64_t n1 = around + int64_t(double(t1 - around) * factor);
  state_->setRange(n0, std::max(n1, n0 + 1000));
  event->accept();
}

void CurvesChart::leaveEvent(QEvent* event) {
  hover_line_->hide();
  viewport()->update();
  QChartView::leaveEvent(event);
}

void CurvesChart::resizeEvent(QResizeEvent* event) {
  QChartView::resizeEvent(event);
  placeCursorLine();
  placeStepMarks();
}

// --- OverviewChart -----------------------------------------------------------------------

OverviewChart::OverviewChart(ViewState* state, QWidget* parent)
    : QChartView(parent),
      state_(state),
      chart_(new QChart),
      x_(new QValueAxis),
      y_(new QValueAxis) {
  style_chart(chart_);
  chart_->legend()->hide();
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
  setup_time_axis(x_, 0, 1);
  setup_bytes_axis(y_, 1024, QString(), 1);  // 0 and the top: the overview is 110 px high
  x_->setTitleVisible(false);
  y_->setTitleVisible(false);
  QFont small = x_->labelsFont();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  x_->setLabelsFont(small);
  y_->setLabelsFont(small);
  for (const char* name : {"Reserved", "Allocated"}) {
    auto* line = new QLineSeries;
    line->setName(QString::fromLatin1(name));
    QPen pen(curve_color(name, 0));
    pen.setWidthF(1.2);
    line->setPen(pen);
    chart_->addSeries(line);
    line->attachAxis(x_);
    line->attachAxis(y_);
    lines_.push_back(line);
  }
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing, false);
  setViewportUpdateMode(QGraphicsView::NoViewportUpdate);  // as CurvesChart: once per change
  setFixedHeight(110);
  setFocusPolicy(Qt::StrongFocus);
  setToolTip(
      tr("The whole session. Drag to select a range, drag the selection to move it, "
         "wheel to zoom, arrow keys to step"));
  selection_ = new QGraphicsRectItem(chart_);
  selection_->setBrush(QColor(0x1f, 0x77, 0xb4, 45));
  selection_->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 1.5));
  selection_->setZValue(10);
  connect(state_, &ViewState::rangeChanged, this, &OverviewChart::placeSelection);
  connect(chart_, &QChart::plotAreaChanged, this, [this](const QRectF& plot) {
    setup_time_axis(x_, x_->min(), x_->max(), plot.width());
    x_->setTitleVisible(false);
    placeSelection();
  });
}

double OverviewChart::xAt(int64_t t) const {
  return axis_px(chart_, x_, state_->seconds(t));
}

int64_t OverviewChart::timeAt(double x) const {
  return state_->fromSeconds(axis_x(chart_, x_, x));
}

void OverviewChart::show(const viewdata::CurvesData& data) {
  const uint64_t signature =
      overview_signature(data, state_->origin(), state_->sessionEnd(), chart_->plotArea().width());
  if (signature == shown_) return;
  shown_ = signature;
  double max_bytes = 1024;
  for (const viewdata::CurveLine& l : data.overview)
    max_bytes = std::max(max_bytes, double(l.peak_bytes));
  for (QLineSeries* line : lines_) line->clear();  // before the axes change: see CurvesChart::show
  const double unit = setup_bytes_axis(y_, max_bytes, QString(), 1);
  y_->setLabelFormat(y_->labelFormat() + QLatin1Char(' ') +
                     QString::fromLatin1(bytes_unit_name(bytes_unit(max_bytes))));
  setup_time_axis(x_, 0, state_->seconds(state_->sessionEnd()), chart_->plotArea().width());
  x_->setTitleVisible(false);
  const int64_t column_ns = int64_t(double(state_->sessionEnd() - state_->origin()) /
                                    std::max(chart_->plotArea().width(), 1.0));
  for (QLineSeries* line : lines_) {
    for (const viewdata::CurveLine& l : data.overview) {
      if (line->name() == QString::fromStdString(l.name)) {
        line->replace(step_points(l, state_->origin(), state_->sessionEnd(), unit, column_ns));
      }
    }
  }
  placeSelection();
}

void OverviewChart::placeSelection() {
  const QRectF plot = chart_->plotArea();
  if (state_->t1() <= state_->t0() && state_->sessionEnd() <= state_->origin()) {
    selection_->hide();
    return;
  }
  const double left = std::clamp(xAt(state_->t0()), plot.left(), plot.right());
  const double right = std::clamp(xAt(state_->t1()), plot.left(), plot.right());
  selection_->setRect(left, plot.top(), std::max(right - left, 2.0), plot.height());
  selection_->show();
  viewport()->update();
}

void OverviewChart::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPointF p = chart_->mapFromScene(mapToScene(event->pos()));
  press_x_ = p.x();
  press_t0_ = state_->t0();
  press_t1_ = state_->t1();
  drag_ = selection_->rect().adjusted(-3, 0, 3, 0).contains(p) ? Drag::kMove : Drag::kNew;
}

void OverviewChart::mouseMoveEvent(QMouseEvent* event) {
  if (drag_ == Drag::kNone) return;
  const QPointF p = chart_->mapFromScene(mapToScene(event->pos()));
  if (drag_ == Drag::kMove) {
    const int64_t dt = timeAt(p.x()) - timeAt(press_x_);
    int64_t t0 = press_t0_ + dt, t1 = press_t1_ + dt;
    const int64_t width = t1 - t0;
    if (t0 < state_->origin()) t0 = state_->origin(), t1 = t0 + width;
    if (t1 > state_->sessionEnd()) t1 = state_->sessionEnd(), t0 = t1 - width;
    state_->setRange(t0, t1);
  } else if (std::abs(p.x() - press_x_) > 3) {
    state_->setRange(timeAt(press_x_), timeAt(p.x()));
  }
}

void OverviewChart::mouseReleaseEvent(QMouseEvent* event) {
  const QPointF p = chart_->mapFromScene(mapToScene(event->pos()));
  if (drag_ == Drag::kNew && std::abs(p.x() - press_x_) <= 3) {
    // A click centres the selection where it was clicked.
    const int64_t width = std::max<int64_t>(state_->t1() - state_->t0(), 1000);
    const int64_t centre = timeAt(p.x());
    state_->setRange(centre - width / 2, centre + width / 2);
  }
  drag_ = Drag::kNone;
}

void OverviewChart::zoom(double factor, int64_t around) {
  const int64_t t0 = state_->t0(), t1 = state_->t1();
  const int64_t n0 = around - int64_t(double(around - t0) * factor);
  const int64_t n1 = around + int64_t(double(t1 - around) * factor);
  state_->setRange(n0, std::max(n1, n0 + 1000));
}

void OverviewChart::shift(double fraction) {
  const int64_t width = state_->t1() - state_->t0();
  int64_t dt = int64_t(double(width) * fraction);
  if (state_->t0() + dt < state_->origin()) dt = state_->origin() - state_->t0();
  if (state_->t1() + dt > state_->sessionEnd()) dt = state_->sessionEnd() - state_->t1();
  state_->setRange(state_->t0() + dt, state_->t1() + dt);
}

void OverviewChart::wheelEvent(QWheelEvent* event) {
  const QPointF p = chart_->mapFromScene(mapToScene(event->position().toPoint()));
  zoom(event->angleDelta().y() > 0 ? 0.8 : 1.25, timeAt(p.x()));
  event->accept();
}

void OverviewChart::keyPressEvent(QKeyEvent* event) {
  const int64_t centre = (state_->t0() + state_->t1()) / 2;
  switch (event->key()) {
    case Qt::Key_Left:
      shift(-0.1);
      break;
    case Qt::Key_Right:
      shift(0.1);
      break;
    case Qt::Key_Up:
    case Qt::Key_Plus:
      zoom(0.8, centre);
      break;
    case Qt::Key_Down:
    case Qt::Key_Minus:
      zoom(1.25, centre);
      break;
    case Qt::Key_Home:
      shift(-1e9);
      break;
    case Qt::Key_End:
      shift(1e9);
      break;
    default:
      QChartView::keyPressEvent(event);
      return;
  }
  event->accept();
}

void OverviewChart::resizeEvent(QResizeEvent* event) {
  QChartView::resizeEvent(event);
  placeSelection();
}

// --- CurvesPanel -------------------------------------------------------------------------

CurvesPanel::CurvesPanel(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  chart_ = new CurvesChart(state_, this);
  overview_ = new OverviewChart(state_, this);
  width_ = new QComboBox(this);
  width_->setToolTip(tr("A fixed-width window; while Live it follows the newest data"));
  width_->addItem(tr("All"), qlonglong(0));
  for (const auto& [label, seconds] : std::vector<std::pair<QString, double>>{{tr("1 s"), 1},
                                                                              {tr("10 s"), 10},
                                                                              {tr("1 min"), 60},
                                                                              {tr("10 min"), 600},
                                                                              {tr("1 h"), 3600}}) {
    width_->addItem(label, qlonglong(seconds * 1e9));
  }
  // Above the chart, in a row of their own: the legend, in as many rows as its names need,
  // and at the right the Window menu. The overview below spans the curves' own width, one
  // instant at one x in both.
  // On the charts' own background, so that the three read as one picture.
  auto* header = new QWidget(this);
  header->setAutoFillBackground(true);
  QPalette header_palette = header->palette();
  header_palette.setBrush(QPalette::Window, chart_->chart()->backgroundBrush());
  header->setPalette(header_palette);
  legend_ = new CurvesLegend(header);
  auto* top_row = new QHBoxLayout(header);
  top_row->setContentsMargins(8, 4, 10, 0);
  top_row->addWidget(legend_, 1);
  top_row->addSpacing(12);
  auto* window_menu = new QWidget(header);
  auto* window_row = new QHBoxLayout(window_menu);
  window_row->setContentsMargins(0, 0, 0, 0);
  window_row->addWidget(new QLabel(tr("Window"), window_menu));
  window_row->addWidget(width_);
  top_row->addWidget(window_menu, 0, Qt::AlignTop);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(header);
  layout->addWidget(chart_, 1);
  layout->addWidget(overview_);
  connect(chart_, &CurvesChart::linesChanged, this,
          [this] { legend_->setEntries(chart_->legendEntries()); });
  connect(legend_, &CurvesLegend::toggled, chart_, &CurvesChart::toggleLine);

  connect(width_, &QComboBox::activated, this, [this] {
    const int64_t width = width_->currentData().toLongLong();
    const int64_t end = state_->following() ? state_->sessionEnd() : state_->t1();
    const int64_t t0 = width == 0 ? state_->origin() : std::max(state_->origin(), end - width);
    const int64_t t1 =
        width == 0 ? state_->sessionEnd() : std::min(state_->sessionEnd(), t0 + width);
    state_->setRange(t0, t1, state_->following());
  });
  // A range that follows the data moves with dataAdvanced (and is drawn at its pace); a
  // range the user chose is drawn at once.
  for (auto signal :
       {&ViewState::scopeChanged, &ViewState::groupByChanged, &ViewState::rangeChosen}) {
    connect(state_, signal, this, &CurvesPanel::request);
  }
  connect(state_, &ViewState::dataAdvanced, this, &CurvesPanel::dataArrived);
  connect(chart_->chart(), &QChart::plotAreaChanged, this, &CurvesPanel::alignTimeAxis);
  connect(state_, &ViewState::timeAxisMinLeftChanged, this, &CurvesPanel::alignTimeAxis);
  connect(overview_->chart(), &QChart::plotAreaChanged, this, &CurvesPanel::alignOverview);
  connect(state_, &ViewState::timeAxisChanged, this, &CurvesPanel::alignOverview);
}

void CurvesPanel::alignTimeAxis() {
  chart_edges_ = align_plot_area(chart_, state_->timeAxisMinLeft(), INT_MAX, &chart_alignment_);
  publishTimeAxis();
}

void CurvesPanel::publishTimeAxis() {
  if (!chart_edges_.settled) return;
  state_->setTimeAxis(chart_edges_.left, chart_edges_.right, chart_->data().t0_ns,
                      chart_->data().t1_ns);
}

void CurvesPanel::alignOverview() {
  if (state_->timeAxisRight() <= state_->timeAxisLeft()) return;
  align_plot_area(overview_, state_->timeAxisLeft(), state_->timeAxisRight(), &overview_alignment_);
}

void CurvesPanel::request() {
  // While following, a refresh moves the range and brings new data: two signals, one answer.
  if (scheduled_) return;
  scheduled_ = true;
  QMetaObject::invokeMethod(this, &CurvesPanel::ask, Qt::QueuedConnection);
}

void CurvesPanel::dataArrived() {
  if (paced_) return;
  const qint64 pace = state_->loading() ? 300 : 90;
  const qint64 since = last_data_.isValid() ? last_data_.elapsed() : pace;
  if (since < pace) {
    paced_ = true;
    QTimer::singleShot(int(pace - since), this, [this] {
      paced_ = false;
      dataArrived();
    });
    return;
  }
  last_data_.restart();
  request();
}

void CurvesPanel::ask() {
  scheduled_ = false;
  if (state_->sessionEnd() <= state_->origin()) {
    // No event at all: a finished recording says so over the axes, for good.
    if (!viewdata::more_may_come(client_->status())) {
      chart_->setMoreMayCome(false);
      chart_->show(viewdata::CurvesData{});
      publishTimeAxis();
    }
    return;
  }
  if (!pacer_.start()) return;  // asked again when the answer is back
  viewdata::CurvesRequest r;
  r.pid = state_->pid();
  r.device = state_->device();
  r.group_by = state_->groupBy();
  r.fragmentation = state_->fragmentation();
  r.t0_ns = state_->t0();
  r.t1_ns = state_->t1();
  r.max_points = size_t(std::max(chart_->width(), 200));
  r.overview_points = size_t(std::max(overview_->width(), 200));
  const uint64_t generation = ++generation_;
  client_->ask(
      this, [r](const viewdata::EngineView& e) { return viewdata::compute_curves(e, r); },
      [this, generation](viewdata::CurvesData data) {
        const bool again = pacer_.done();
        chart_->setMoreMayCome(viewdata::more_may_come(client_->status()));
        chart_->show(data);
        overview_->show(data);
        publishTimeAxis();
        emit drawn(int(data.lines.size()));
        if (again) {
          ask();
        } else if (generation == generation_ && viewdata::needs_detail(data) &&
                   (!state_->following() || client_->source().status().loaded)) {
          // Not while following a run: its range moves ten times a second. A recording
          // read whole stands still, even at the range it opened on.
          askDetail(data);
        }
      });
}

void CurvesPanel::askDetail(const viewdata::CurvesData& coarse) {
  // One replay at a time: a newer range asked meanwhile is refined when this one is back.
  if (detail_in_flight_) return;
  const std::string path = client_->source().database_path();
  if (path.empty()) return;
  // A live recording that stopped (a full disk) holds nothing after that: the live curves
  // are all there is.
  const int64_t recorded_until = client_->source().status().recorded_until_ns;
  if (recorded_until != 0 && coarse.t1_ns > recorded_until) return;
  detail_in_flight_ = true;
  const uint64_t generation = generation_;
  const size_t max_points = size_t(std::max(chart_->width(), 200));
  client_->askStore(
      this,
      [path, coarse, max_points] { return viewdata::refine_curves(path, coarse, max_points); },
      [this, generation](viewdata::CurvesData fine) {
        detail_in_flight_ = false;
        if (generation == generation_) {
          chart_->show(fine);
          overview_->show(fine);
          publishTimeAxis();
        } else if (!pacer_.inFlight()) {
          ask();  // the range moved while the recording was read: refine the new one
        }
      });
}

}  // namespace memtap::gui
