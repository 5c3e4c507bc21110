// See flame_canvas.h.
#include "monitor/gui/flame_canvas.h"

#include <QCoreApplication>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <optional>

#include "monitor/gui/chart_style.h"
#include "monitor/gui/plot_alignment.h"
#include "monitor/report/units.h"

namespace memtap::gui {

namespace {

constexpr int kTickHeight = 20;    // the time labels above the bands
constexpr int kBandGap = 6;        // between two threads' bands
constexpr int kBandLabel = 14;     // a band's first line: the thread's name
constexpr int kMaxRowHeight = 18;  // a frame's row, when there is room
constexpr int kMinRowHeight = 14;  // and when there is not (the rows then scroll)
constexpr int kFallbackLeft = 70;  // the axis when the curves chart is not laid out
constexpr int kFallbackRight = 12;

// Light colours that keep black text readable and tell neighbours apart (Tableau 20's
// lighter half and a few of its darker ones, lightened).
const QColor kPalette[] = {
    QColor(0xae, 0xc7, 0xe8), QColor(0xff, 0xbb, 0x78), QColor(0x98, 0xdf, 0x8a),
    QColor(0xff, 0x98, 0x96), QColor(0xc5, 0xb0, 0xd5), QColor(0xc4, 0x9c, 0x94),
    QColor(0xf7, 0xb6, 0xd2), QColor(0xdb, 0xdb, 0x8d), QColor(0x9e, 0xda, 0xe5),
    QColor(0x8f, 0xb8, 0xde), QColor(0xf0, 0xc0, 0x60), QColor(0xb5, 0xd9, 0x9c),
};

// FNV-1a: the same text has the same colour in every run (qHash is seeded per process).
uint32_t stable_hash(const std::string& text) {
  uint32_t h = 2166136261u;
  for (const char c : text) h = (h ^ uint8_t(c)) * 16777619u;
  return h;
}

// The file picks the hue; the function a shade of it, so that neighbours of one file differ.
QColor span_color(const viewdata::FlameFunction& f) {
  const QColor base = kPalette[stable_hash(f.file) % std::size(kPalette)];
  return base.darker(100 + int(stable_hash(f.function) % 4) * 6);
}

// The boxes' labels: the widget's font, smaller where a row is too low for a whole line
// (descenders and underscores included) inside a box's border.
QFont label_font(QFont font, int row_h) {
  const double room = row_h - 3;  // the box is a pixel lower than the row, and edged
  while (QFontMetricsF(font).height() > room && font.pointSizeF() > 5) {
    font.setPointSizeF(font.pointSizeF() - 0.5);
  }
  return font;
}

QString function_name(const viewdata::FlameData& d, const viewdata::FlameSpan& s) {
  return s.function < d.functions.size() ? QString::fromStdString(d.functions[s.function].function)
                                         : QString();
}

}  // namespace

FlameCanvas::FlameCanvas(ViewState* state, QWidget* parent) : QWidget(parent), state_(state) {
  setMouseTracking(true);
  setFocusPolicy(Qt::ClickFocus);
  setMinimumHeight(120);
  setAttribute(Qt::WA_OpaquePaintEvent);
  depth_bar_ = new QScrollBar(Qt::Vertical, this);
  depth_bar_->setRange(0, 0);
  depth_bar_->hide();
  connect(depth_bar_, &QScrollBar::valueChanged, this, qOverload<>(&QWidget::update));
}

FlameCanvas::Rows FlameCanvas::layoutRows() const {
  Rows r;
  const std::vector<int> depths = viewdata::thread_depths(data_);
  int rows = 0;
  for (int d : depths) rows += d;
  const int bands = int(depths.size());
  const int room = height() - kTickHeight - (kBandGap + kBandLabel) * bands;
  r.row_h = std::clamp(rows > 0 ? room / rows : kMaxRowHeight, kMinRowHeight, kMaxRowHeight);
  // Each thread's band: a line with its name, then its rows.
  r.band_top.resize(depths.size());
  int y = kTickHeight + 2;
  for (size_t i = 0; i < depths.size(); ++i) {
    r.band_top[i] = y + kBandLabel;
    y += kBandLabel + depths[i] * r.row_h + kBandGap;
  }
  r.bottom = y - kBandGap;
  return r;
}

void FlameCanvas::updateDepthBar() {
  const int bar_w = depth_bar_->sizeHint().width();
  depth_bar_->setGeometry(width() - bar_w, kTickHeight, bar_w, height() - kTickHeight);
  // Rows shrink to kMinRowHeight before they scroll; scrolled to the end, the deepest row's
  // bottom is 2 pixels above the widget's.
  const int overflow = data_.spans.empty() ? 0 : layoutRows().bottom + 2 - height();
  depth_bar_->setRange(0, std::max(overflow, 0));  // keeps the value where it still fits
  depth_bar_->setPageStep(std::max(height() - kTickHeight, 1));
  depth_bar_->setSingleStep(kMinRowHeight);
  depth_bar_->setVisible(overflow > 0);
}

void FlameCanvas::setData(viewdata::FlameData data) {
  data_ = std::move(data);
  matched_.assign(data_.spans.size(), 0);
  searching_ = false;
  updateDepthBar();
  update();
}

void FlameCanvas::setMatches(std::vector<size_t> matches, bool searching) {
  matched_.assign(data_.spans.size(), 0);
  for (size_t i : matches) {
    if (i < matched_.size()) matched_[i] = 1;
  }
  searching_ = searching;
  update();
}

void FlameCanvas::setMessage(const QString& text) {
  message_ = text;
  update();
}

SharedTimeAxis FlameCanvas::axis() const {
  // The chart above spans the same width as this view, and an older answer's boxes are
  // drawn at its scale; if it does not (the view alone in a window), the fallback margins
  // and the answer's own range do.
  if (const std::optional<SharedTimeAxis> shared = shared_time_axis(*state_, this, 0)) {
    return *shared;
  }
  SharedTimeAxis own;
  own.left = kFallbackLeft;
  own.right = std::max(width() - kFallbackRight, kFallbackLeft + 1);
  own.t0_ns = data_.t0_ns;
  own.t1_ns = data_.t1_ns;
  return own;
}

void FlameCanvas::drawTicks(QPainter& p, const SharedTimeAxis& axis) {
  const int left = axis.left, right = axis.right;
  const double from_s = state_->seconds(axis.t0_ns), to_s = state_->seconds(axis.t1_ns);
  if (!(to_s > from_s)) return;
  // The curves chart's ticks: the same step, anchor and decimals.
  const TimeTicks ticks = time_axis_ticks(p.font(), from_s, to_s, right - left);
  const double step = ticks.step;
  const int decimals = ticks.decimals;
  const QFontMetrics fm = p.fontMetrics();
  p.setPen(QColor(0x55, 0x55, 0x55));
  for (double s = std::ceil(from_s / step - 1e-9) * step; s <= to_s + step * 1e-9; s += step) {
    const double x = left + (s - from_s) / (to_s - from_s) * (right - left);
    p.setPen(QColor(0xdd, 0xdd, 0xdd));
    p.drawLine(QPointF(x, kTickHeight - 4), QPointF(x, height()));
    p.setPen(QColor(0x55, 0x55, 0x55));
    const QString label = QString::number(s, 'f', decimals);
    const int w = fm.horizontalAdvance(label);
    p.drawText(QPointF(std::clamp(x - w / 2.0, 0.0, double(width() - w)), kTickHeight - 7), label);
  }
  p.drawText(QPointF(4, kTickHeight - 7), tr("s"));
}

void FlameCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  drawn_.clear();
  boxes_drawn_ = 0;
  matches_drawn_ = 0;
  const SharedTimeAxis time_axis = axis();
  const int left = time_axis.left, right = time_axis.right;
  drawTicks(p, time_axis);

  if (data_.spans.empty()) {
    p.setPen(QColor(0x55, 0x55, 0x55));
    p.drawText(rect().adjusted(20, kTickHeight, -20, 0), Qt::AlignCenter | Qt::TextWordWrap,
               message_);
    return;
  }

  Rows rows = layoutRows();
  const int row_h = rows.row_h;
  // Scrolled: everything under the ticks moves up (the bar's range is 0 when nothing scrolls).
  for (int& top : rows.band_top) top -= depth_bar_->value();
  const std::vector<int>& band_top = rows.band_top;
  // What is left of the area under the ticks: boxes are hit where they show only.
  const QRectF body(0, kTickHeight, width(), height() - kTickHeight);

  p.setClipRect(QRect(0, kTickHeight, width(), height() - kTickHeight));
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  p.setFont(small);
  for (size_t i = 0; i < data_.threads.size(); ++i) {
    const int label_top = band_top[i] - kBandLabel;
    if (label_top >= height()) break;
    p.setPen(QColor(0xbb, 0xbb, 0xbb));
    if (i > 0) p.drawLine(0, label_top - kBandGap / 2, width(), label_top - kBandGap / 2);
    p.setPen(QColor(0x44, 0x44, 0x44));
    const QString label = data_.threads[i] == data_.pid
                              ? tr("main thread (%1)").arg(data_.threads[i])
                              : tr("thread %1").arg(data_.threads[i]);
    p.drawText(QRect(left, label_top, right - left, kBandLabel), Qt::AlignLeft | Qt::AlignVCenter,
               label);
  }
  const QFont labels = label_font(font(), row_h);
  p.setFont(labels);
  const QFontMetricsF fm(labels);

  p.setClipRect(QRect(left, kTickHeight, right - left + 1, height() - kTickHeight));
  size_t band = 0;
  for (size_t i = 0; i < data_.spans.size(); ++i) {
    const viewdata::FlameSpan& s = data_.spans[i];
    while (band < data_.threads.size() && data_.threads[band] != s.thread_id) ++band;
    if (band >= data_.threads.size()) break;
    const double top = band_top[band] + s.depth * row_h;
    if (top >= height() || top + row_h <= kTickHeight) continue;
    const double x0 = std::max(time_x(time_axis, s.start_ns), double(left));
    const double x1 = std::min(time_x(time_axis, s.end_ns), double(right));
    if (x1 < left || x0 > right) continue;
    const QRectF box(x0, top, std::max(x1 - x0, 1.0), row_h - 1);
    const bool match = searching_ && matched_[i];
    QColor fill = s.function < data_.functions.size() ? span_color(data_.functions[s.function])
                                                      : QColor(Qt::lightGray);
    if (searching_ && !match) fill = QColor(0xee, 0xee, 0xee);
    p.fillRect(box, fill);
    if (box.width() >= 3) {
      p.setPen(match ? QPen(QColor(0xc0, 0x10, 0x10), 2) : QPen(fill.darker(130), 1));
      p.drawRect(box.adjusted(0.5, 0.5, -0.5, -0.5));
    } else if (match) {
      p.fillRect(box, QColor(0xc0, 0x10, 0x10));
    }
    if (box.width() > 28 && row_h >= 12) {
      p.setPen(searching_ && !match ? QColor(0xaa, 0xaa, 0xaa) : QColor(0x11, 0x11, 0x11));
      // Centred inside the border by the font's whole height, not by Qt's AlignVCenter,
      // which put the baseline on the bottom edge: "_find_and_load" read "find and load",
      // its underscores under the row below.
      const QRectF text = box.adjusted(3, 1, -3, -1);
      const double baseline =
          std::round(text.top() + (text.height() - fm.height()) / 2 + fm.ascent());
      p.drawText(QPointF(text.left(), baseline),
                 fm.elidedText(function_name(data_, s), Qt::ElideRight, text.width()));
    }
    drawn_.push_back({box.intersected(body), i});
    ++boxes_drawn_;
    if (match) ++matches_drawn_;
  }
}

int FlameCanvas::spanAt(const QPoint& pos) const {
  // The last drawn wins: among 1-pixel boxes drawn over each other, the one on top.
  for (size_t i = drawn_.size(); i-- > 0;) {
    if (drawn_[i].first.adjusted(-0.5, 0, 0.5, 0).contains(pos)) return int(drawn_[i].second);
  }
  return -1;
}

QPoint FlameCanvas::centreOf(size_t span) const {
  for (const auto& [box, i] : drawn_) {
    if (i == span) return box.center().toPoint();
  }
  return QPoint(-1, -1);
}

QString FlameCanvas::toolTipFor(size_t i) const {
  if (i >= data_.spans.size()) return QString();
  const viewdata::FlameSpan& s = data_.spans[i];
  QString where;
  if (s.function < data_.functions.size()) {
    const viewdata::FlameFunction& f = data_.functions[s.function];
    where = QString::fromStdString(f.file.empty() ? std::string("?") : f.file);
    if (s.line > 0) where += QStringLiteral(":%1").arg(s.line);
  }
  QString text = QStringLiteral("%1\n%2\n%3 (%4 to %5)")
                     .arg(function_name(data_, s), where,
                          QString::fromStdString(duration_text(s.end_ns - s.start_ns)),
                          state_->timeText(s.start_ns), state_->timeText(s.end_ns));
  if (s.samples > 0) {
    text += s.samples == 1 ? tr("\n1 allocation with this frame on the stack")
                           : tr("\n%1 allocations with this frame on the stack").arg(s.samples);
  }
  return text;
}

void FlameCanvas::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  const int i = spanAt(event->pos());
  if (i >= 0) emit spanClicked(size_t(i));
}

void FlameCanvas::mouseDoubleClickEvent(QMouseEvent* event) {
  // On a box the first click already zoomed to it; on empty space a double click goes back.
  if (event->button() == Qt::LeftButton && spanAt(event->pos()) < 0) emit backRequested();
}

void FlameCanvas::mouseMoveEvent(QMouseEvent* event) {
  const int i = spanAt(event->pos());
  if (i < 0) {
    QToolTip::hideText();
    setCursor(Qt::ArrowCursor);
    return;
  }
  setCursor(Qt::PointingHandCursor);
  QToolTip::showText(event->globalPosition().toPoint(), toolTipFor(size_t(i)), this);
}

void FlameCanvas::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Backspace:
    case Qt::Key_Escape:
      emit backRequested();
      return;
    case Qt::Key_PageUp:
      depth_bar_->triggerAction(QAbstractSlider::SliderPageStepSub);
      return;
    case Qt::Key_PageDown:
      depth_bar_->triggerAction(QAbstractSlider::SliderPageStepAdd);
      return;
    case Qt::Key_Home:
      depth_bar_->triggerAction(QAbstractSlider::SliderToMinimum);
      return;
    case Qt::Key_End:
      depth_bar_->triggerAction(QAbstractSlider::SliderToMaximum);
      return;
    default:
      QWidget::keyPressEvent(event);
  }
}

void FlameCanvas::wheelEvent(QWheelEvent* event) {
  // Nothing to scroll: the event goes on to the parent, as it did before the rows scrolled.
  if (depth_bar_->maximum() == 0) return QWidget::wheelEvent(event);
  // The bar takes it as if the pointer were over it (Shift: a page at a time).
  QCoreApplication::sendEvent(depth_bar_, event);
}

void FlameCanvas::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  updateDepthBar();
}

}  // namespace memtap::gui
