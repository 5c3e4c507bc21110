// See lifetime_view.h.
#include "monitor/gui/lifetime_view.h"

#include <QHBoxLayout>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <optional>

#include "monitor/gui/chart_style.h"
#include "monitor/gui/count_text.h"
#include "monitor/gui/plot_alignment.h"
#include "monitor/report/units.h"
#include "monitor/viewdata/block_detail.h"
#include "monitor/viewdata/labels.h"

namespace memtap::gui {
namespace {

const QColor kOtherOwners(0xb0, 0xb0, 0xb0);

QString hex_text(uint64_t addr) {
  return QStringLiteral("0x%1").arg(qulonglong(addr), 0, 16);
}

QString owner_label(const std::string& owner) {
  return owner.empty() ? QObject::tr("(no owner)") : QString::fromStdString(owner);
}

// The palette's colours for owners, without its grey (kept for the other owners).
QColor owner_color(const std::string& owner, size_t rank) {
  return curve_color(owner, rank < 7 ? rank : rank + 1);
}

QString html_escaped(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

}  // namespace

LifetimeGraph::LifetimeGraph(ViewState* state, QWidget* parent) : QWidget(parent), state_(state) {
  setMinimumSize(300, 120);
  setMouseTracking(false);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::ClickFocus);
  message_ = tr("Loading blocks…");
  // Ten times a second while live: not behind another tab (showEvent lays it out then).
  connect(state_, &ViewState::timeAxisChanged, this, [this] {
    if (!isVisible()) return;
    layoutBlocks();
    update();
  });
  connect(state_, &ViewState::stepMarksChanged, this, [this] { update(); });
}

void LifetimeGraph::show(viewdata::LifetimeData data) {
  data_ = std::move(data);
  layoutBlocks();
  update();
}

void LifetimeGraph::setStepMarks(viewdata::StepMarksData marks) {
  step_marks_ = std::move(marks);
  update();
}

std::vector<double> LifetimeGraph::lineXs(const std::vector<viewdata::TimeMark>& marks,
                                          bool steps) const {
  std::vector<double> xs;
  if (!state_->stepMarks() || data_.blocks.empty()) return xs;
  const Axis a = axis();
  for (const viewdata::TimeMark& m : marks) {
    if (steps && !viewdata::step_drawn(step_marks_, m)) continue;
    if (m.ts_ns >= a.t0_ns && m.ts_ns <= a.t1_ns) xs.push_back(xOf(a, m.ts_ns));
  }
  return xs;
}

std::vector<double> LifetimeGraph::stepLineXs() const {
  return lineXs(step_marks_.steps, true);
}

std::vector<double> LifetimeGraph::oomLineXs() const {
  return lineXs(step_marks_.ooms, false);
}

void LifetimeGraph::setColorByOwner(bool on) {
  by_owner_ = on;
  update();
}

void LifetimeGraph::setMessage(const QString& text) {
  message_ = text;
  update();
}

int LifetimeGraph::labelsWidth() const {
  // Digits are a font's widest hex characters.
  return fontMetrics().horizontalAdvance(QStringLiteral("0x000000000000")) + 16;
}

LifetimeGraph::Axis LifetimeGraph::axis() const {
  const QFontMetrics fm = fontMetrics();
  const double top = fm.height() + 14;  // the legend, and the address axis's title
  const double bottom = 2 * fm.height() + 10;
  Axis a;
  double left = labelsWidth();
  double right = width() - 12;
  a.t0_ns = data_.t0_ns;
  a.t1_ns = data_.t1_ns;
  // The curves' time axis above, once it has made room for the addresses: one instant at
  // one x in both, an older answer's blocks at the curves' scale. Alone in a window (a
  // test's), its own margins and the answer's range.
  if (const std::optional<SharedTimeAxis> shared = shared_time_axis(*state_, this, labelsWidth())) {
    left = shared->left;
    right = shared->right;
    a.t0_ns = shared->t0_ns;
    a.t1_ns = shared->t1_ns;
  }
  a.plot = QRectF(left, top, std::max(10.0, right - left), std::max(10.0, height() - top - bottom));
  return a;
}

void LifetimeGraph::publishLabelsWidth() {
  state_->setTimeAxisMinLeft(mapTo(window(), QPoint(labelsWidth(), 0)).x());
}

double LifetimeGraph::xOf(const Axis& a, int64_t t) const {
  const double span = double(std::max<int64_t>(a.t1_ns - a.t0_ns, 1));
  const double f = std::clamp(double(t - a.t0_ns) / span, 0.0, 1.0);
  return a.plot.left() + f * a.plot.width();
}

void LifetimeGraph::layoutBlocks() {
  const Axis a = axis();
  const QRectF& p = a.plot;
  rects_.clear();
  rects_.reserve(data_.blocks.size());
  auto y_px = [&](double v) { return p.bottom() - v * p.height(); };
  for (const viewdata::BlockRow& b : data_.blocks) {
    const int64_t from = std::max(b.alloc_ns, data_.t0_ns);
    const int64_t to = std::min(b.free_ns, data_.t1_ns);
    const double x0 = xOf(a, from);
    const double x1 = std::max(xOf(a, to), x0 + 1.5);
    const double lo = y_px(data_.axis.y_of(b.addr));
    const double hi = y_px(data_.axis.y_of(b.addr + std::max<uint64_t>(b.size_bytes, 1) - 1));
    const double top = std::min(hi, lo - 1.5);
    rects_.emplace_back(QPointF(x0, top), QPointF(x1, lo));
  }
}

QColor LifetimeGraph::colorOf(const viewdata::BlockRow& b) const {
  if (!by_owner_) return layer_color(b.layer, b.is_mmap);
  for (size_t i = 0; i < data_.owners.size(); ++i)
    if (data_.owners[i].owner == b.owner) return owner_color(b.owner, i);
  return kOtherOwners;
}

QRect LifetimeGraph::blockRect(int64_t id) const {
  for (size_t i = 0; i < data_.blocks.size() && i < rects_.size(); ++i)
    if (data_.blocks[i].id == id) return rects_[i].toAlignedRect();
  return {};
}

void LifetimeGraph::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  publishLabelsWidth();
  layoutBlocks();
}

void LifetimeGraph::moveEvent(QMoveEvent* event) {
  QWidget::moveEvent(event);
  publishLabelsWidth();
}

void LifetimeGraph::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  publishLabelsWidth();
  layoutBlocks();
}

void LifetimeGraph::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPointF at = event->position();
  // The smallest block under the pointer: the ones drawn last lie on top. A thin block
  // is easier to hit with a few pixels of slack.
  for (size_t i = rects_.size(); i-- > 0;) {
    QRectF r = rects_[i];
    if (r.width() < 4) r.adjust(-2, 0, 2, 0);
    if (r.height() < 4) r.adjust(0, -2, 0, 2);
    if (r.contains(at)) {
      emit blockClicked(data_.blocks[i].id);
      return;
    }
  }
  // A click beside every block puts the selection down (and the detail panel away).
  if (axis().plot.contains(at) && state_->selectedBlock() >= 0) emit blockClicked(-1);
}

void LifetimeGraph::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const Axis a = axis();
  const QRectF& plot = a.plot;
  const QFontMetrics fm = fontMetrics();
  const QColor text = palette().color(QPalette::Text);

  if (data_.blocks.empty()) {
    p.setPen(text);
    p.drawText(rect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, message_);
    return;
  }

  // Collapsed address gaps: a grey band with a zig-zag, so no one reads it as contiguous.
  // One too thin for a zig-zag is a dashed line, and one within a few pixels of the last
  // line only a notch in the axis: dashed lines stacked read as data (a PyTorch pool's
  // hundreds of gaps drew grey stripes).
  auto y_px = [&](double v) { return plot.bottom() - v * plot.height(); };
  const auto& spans = data_.axis.spans;
  double last_line = -1e9;
  for (size_t i = 1; i < spans.size(); ++i) {
    const double top = y_px(spans[i].y0), bottom = y_px(spans[i - 1].y1);
    const double mid = (top + bottom) / 2, amp = (bottom - top) / 2 - 0.5;
    p.setPen(QPen(QColor(0x99, 0x99, 0x99), 1));
    if (amp < 1.5) {
      const bool crowded = std::abs(last_line - mid) < 4;
      if (!crowded) {
        p.setPen(QPen(QColor(0x99, 0x99, 0x99), 1, Qt::DashLine));
        last_line = mid;
      }
      p.drawLine(QPointF(plot.left() - 6, mid), QPointF(crowded ? plot.left() : plot.right(), mid));
      continue;
    }
    p.fillRect(QRectF(plot.left() - 6, top, plot.width() + 6, bottom - top),
               QColor(0xf3, 0xf3, 0xf3));
    QPainterPath zig;
    zig.moveTo(plot.left() - 6, mid);
    for (double x = plot.left() - 6, k = 0; x < plot.right(); x += 6, ++k)
      zig.lineTo(x + 6, mid + (int(k) % 2 == 0 ? -amp : amp));
    p.drawPath(zig);
  }

  // What the answer drawn does not cover yet (the curves have moved on, live or after a
  // zoom, and the next answer is on its way): hatched, not left white as if nothing lived.
  p.setPen(Qt::NoPen);
  p.setBrush(QBrush(QColor(0xcc, 0xcc, 0xcc), Qt::BDiagPattern));
  const double covered_left = xOf(a, data_.t0_ns), covered_right = xOf(a, data_.t1_ns);
  if (covered_left > plot.left() + 1) {
    p.drawRect(QRectF(plot.left(), plot.top(), covered_left - plot.left(), plot.height()));
  }
  if (covered_right < plot.right() - 1) {
    p.drawRect(QRectF(covered_right, plot.top(), plot.right() - covered_right, plot.height()));
  }
  p.setBrush(Qt::NoBrush);

  // Blocks in the data's order (lifetime_data.h): the driver's segments first, then the
  // blocks inside them; each largest first, so that the small ones lie on top.
  p.setRenderHint(QPainter::Antialiasing, false);
  int64_t selected = state_->selectedBlock();
  int selected_index = -1;
  for (size_t i = 0; i < rects_.size(); ++i) {
    const viewdata::BlockRow& b = data_.blocks[i];
    const QColor c = colorOf(b);
    const QRectF& r = rects_[i];
    if (r.width() > 4 && r.height() > 4) {
      p.setPen(QPen(c.darker(140), 1));
      p.setBrush(c);
      p.drawRect(r.adjusted(0, 0, -1, -1));
    } else {
      p.fillRect(r, c);
    }
    if (b.id == selected) selected_index = int(i);
  }
  // Over the blocks, in a dark grey they show through: where each step began (the curves
  // above number them), and the OOMs in red.
  QPen step_pen(QColor(0, 0, 0, 120), 1);
  step_pen.setDashPattern({1.0, 3.0});
  p.setPen(step_pen);
  for (double x : stepLineXs()) p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
  p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 1.5));
  for (double x : oomLineXs()) p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
  if (selected_index >= 0) {
    // Outlined twice (dark, then light inside) so it shows on any colour, and at least
    // 8 px so a thin block can be found.
    QRectF r = rects_[size_t(selected_index)];
    const QPointF c = r.center();
    r = r.united(QRectF(c.x() - 4, c.y() - 4, 8, 8)).adjusted(-2, -2, 2, 2);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(Qt::black, 2));
    p.drawRect(r);
    p.setPen(QPen(Qt::white, 1));
    p.drawRect(r.adjusted(2, 2, -2, -2));
  }

  // The plot's frame and the address axis: hex addresses at the spans' ends, and inside
  // the tall ones, where there is room.
  p.setPen(QPen(text, 1));
  p.setBrush(Qt::NoBrush);
  p.drawRect(plot);
  std::vector<double> placed;
  auto label = [&](double y, uint64_t addr) {
    if (y < plot.top() - 1 || y > plot.bottom() + 1) return;
    for (double other : placed)
      if (std::abs(other - y) < fm.height()) return;
    placed.push_back(y);
    p.drawLine(QPointF(plot.left() - 4, y), QPointF(plot.left(), y));
    p.drawText(QRectF(0, y - fm.height() / 2.0, plot.left() - 6, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, hex_text(addr));
  };
  // Its title above it, level with the legend, as the time axis has its own below.
  p.drawText(QRectF(4, 3, plot.left() - 10, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
             tr("Address"));
  for (const viewdata::AddressSpan& s : spans) {
    label(y_px(s.y0), s.lo);
    label(y_px(s.y1), s.hi);
  }
  for (const viewdata::AddressSpan& s : spans) {
    const double h = (s.y1 - s.y0) * plot.height();
    const int inner = int(h / (3 * fm.height()));
    for (int k = 1; k < inner; ++k) {
      const double f = double(k) / inner;
      label(y_px(s.y0 + f * (s.y1 - s.y0)), s.lo + uint64_t(f * double(s.hi - s.lo)));
    }
  }

  // The time axis, ticked as the curves' is.
  const double s0 = state_->seconds(a.t0_ns), s1 = state_->seconds(a.t1_ns);
  const TimeTicks ticks = time_axis_ticks(p.font(), s0, s1, plot.width());
  const double step = ticks.step;
  const int decimals = ticks.decimals;
  for (double v = std::ceil(s0 / step) * step; v <= s1 + step * 1e-6; v += step) {
    const double x = plot.left() + (v - s0) / std::max(s1 - s0, 1e-12) * plot.width();
    p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 4));
    p.drawText(QRectF(x - 50, plot.bottom() + 5, 100, fm.height()), Qt::AlignHCenter,
               QString::number(v, 'f', decimals));
  }
  p.drawText(QRectF(plot.left(), plot.bottom() + 5 + fm.height(), plot.width(), fm.height()),
             Qt::AlignRight, tr("Time since start (s)"));  // as the curves say it

  // The legend: what the colours mean.
  double x = plot.left();
  auto swatch = [&](const QColor& c, const QString& name) {
    const double w = 12 + 4 + fm.horizontalAdvance(name) + 14;
    if (x + w > width()) return;
    p.fillRect(QRectF(x, 5, 12, fm.height() - 2), c);
    p.setPen(text);
    p.drawText(QPointF(x + 16, 3 + fm.ascent()), name);
    x += w;
  };
  if (by_owner_) {
    for (size_t i = 0; i < data_.owners.size(); ++i)
      swatch(owner_color(data_.owners[i].owner, i), owner_label(data_.owners[i].owner));
    if (data_.owners.size() >= 10) swatch(kOtherOwners, tr("other owners"));
  } else {
    std::vector<std::pair<Layer, bool>> layers;
    for (const viewdata::BlockRow& b : data_.blocks) {
      const std::pair<Layer, bool> l{b.layer, b.is_mmap};
      if (std::find(layers.begin(), layers.end(), l) == layers.end()) layers.push_back(l);
    }
    std::sort(layers.begin(), layers.end());
    for (const auto& [layer, mmap] : layers)
      swatch(layer_color(layer, mmap), QString::fromLatin1(viewdata::layer_label(layer, mmap)));
  }
  // Where the details are, while none show: the panel below opens at the first click.
  const QString hint = hintText();
  if (!hint.isEmpty() && x + fm.horizontalAdvance(hint) <= plot.right()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QRectF(x, 3, plot.right() - x, fm.height()), Qt::AlignRight | Qt::AlignTop, hint);
  }
}

QString LifetimeGraph::hintText() const {
  if (data_.blocks.empty() || state_->selectedBlock() >= 0) return QString();
  return tr("Click a block for its size, owner, times and call stacks");
}

LifetimeView::LifetimeView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  // Elided: a long range's count ("Showing the 20,000 largest of 1,126,093 blocks ...") must
  // not set the window's minimum width.
  count_ = new ElidedLabel(this);
  count_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  color_by_ = new QComboBox(this);
  color_by_->addItem(tr("Colour by layer"));
  color_by_->addItem(tr("Colour by owner"));
  bar->addWidget(count_, 1);
  bar->addWidget(color_by_);
  layout->addLayout(bar);

  // The detail panel shows only while a block is selected: empty, it took a third of the
  // height from a graph that had 90 pixels of plot in a 1400x900 window. The graph says
  // where the details are meanwhile (LifetimeGraph::hintText).
  split_ = new QSplitter(Qt::Vertical, this);
  graph_ = new LifetimeGraph(state, split_);
  detail_ = new QTextBrowser(split_);
  detail_->setOpenLinks(false);
  detail_->setMinimumHeight(40);
  detail_->hide();
  split_->addWidget(graph_);
  split_->addWidget(detail_);
  split_->setStretchFactor(0, 2);
  split_->setStretchFactor(1, 1);
  layout->addWidget(split_, 1);

  connect(color_by_, &QComboBox::currentIndexChanged, this,
          [this](int index) { graph_->setColorByOwner(index == 1); });
  connect(graph_, &LifetimeGraph::blockClicked, state_, &ViewState::selectBlock);
  for (auto signal :
       {&ViewState::scopeChanged, &ViewState::rangeSettled, &ViewState::dataAdvancedSlowly}) {
    connect(state_, signal, this, &LifetimeView::request);
  }
  connect(state_, &ViewState::blockSelected, this, [this](qint64 id) {
    reveal_pending_ = id >= 0;
    graph_->update();  // the outline moves now; the answer adds the block if it was not drawn
    showDetailPanel(id >= 0);
    askDetail(id);
    request();
  });
  // Another process or device puts the selection down without a blockSelected.
  connect(state_, &ViewState::scopeChanged, this, [this] {
    if (state_->selectedBlock() >= 0) return;
    showDetailPanel(false);
    askDetail(-1);
  });
  request();
}

void LifetimeView::request() {
  if (scheduled_) return;
  scheduled_ = true;
  QMetaObject::invokeMethod(this, &LifetimeView::ask, Qt::QueuedConnection);
}

void LifetimeView::ask() {
  scheduled_ = false;
  if (state_->sessionEnd() <= state_->origin() && state_->t1() == 0) {
    graph_->setMessage(viewdata::more_may_come(client_->status())
                           ? tr("No blocks yet: the recording has no events so far.")
                           : tr("No blocks: the recording has no events."));
    return;
  }
  if (state_->loading()) {
    graph_->setMessage(state_->loadingText());
    return;
  }
  if (!pacer_.start()) return;  // asked again when the answer is back
  viewdata::LifetimeRequest r;
  r.pid = state_->pid();
  r.device = state_->device();
  r.t0_ns = state_->t0();
  r.t1_ns = state_->t1();
  r.selected = state_->selectedBlock();
  const size_t columns = size_t(std::max(graph_->width(), 200));
  client_->ask(
      this,
      [r, columns](const viewdata::EngineView& e) {
        return viewdata::compute_step_marks(e, r.pid, r.device, r.t0_ns, r.t1_ns, columns);
      },
      [this](viewdata::StepMarksData marks) { graph_->setStepMarks(std::move(marks)); });
  client_->askBlocks(
      this, [r](viewdata::BlockQueries& q) { return viewdata::compute_lifetime(q, r); },
      [this](viewdata::LifetimeData d) {
        const bool again = pacer_.done();
        const QLocale locale;
        const QString range =
            tr("%1 – %2").arg(state_->timeText(d.t0_ns), state_->timeText(d.t1_ns));
        if (d.matching_blocks == 0) {
          count_->setFullText(QString());
          graph_->setMessage(tr("No blocks live on %1 of process %2 between %3.")
                                 .arg(QString::fromStdString(device_text(d.device)))
                                 .arg(d.pid)
                                 .arg(range));
        } else if (d.matching_blocks > d.blocks.size()) {
          // The bytes are the blocks' sum, not what was held at once: "(5.3 GiB)" beside a
          // device that held 1.4 GiB at most read as a wrong figure.
          count_->setFullText(tr("Showing the %1 largest of %2 blocks live at some time in %4, "
                                 "%3 between them")
                                  .arg(locale.toString(qulonglong(d.blocks.size())),
                                       locale.toString(qulonglong(d.matching_blocks)),
                                       QString::fromStdString(bytes_text(double(d.matching_bytes))),
                                       range));
        } else {
          count_->setFullText(tr("%1 live at some time in %3, %2 between them")
                                  .arg(count_text(d.matching_blocks, "block", "blocks"),
                                       QString::fromStdString(bytes_text(double(d.matching_bytes))),
                                       range));
        }
        reveal(d);
        graph_->show(std::move(d));
        emit drawn();
        if (again) ask();
      });
}

void LifetimeView::reveal(const viewdata::LifetimeData& d) {
  if (!reveal_pending_ || !d.selected || d.selected->id != state_->selectedBlock()) return;
  reveal_pending_ = false;
  const viewdata::BlockRow& b = *d.selected;
  if (b.pid != state_->pid() || b.device != state_->device()) return;
  if (viewdata::live_in(b, d.t0_ns, d.t1_ns)) return;
  // The block's life with a margin on each side; a live one up to the newest data.
  const int64_t end = b.free_ns == viewdata::kStillLive ? state_->sessionEnd() : b.free_ns;
  const int64_t pad = std::max<int64_t>((end - b.alloc_ns) / 10, 1'000'000);
  state_->setRange(b.alloc_ns - pad, end + pad);
}

void LifetimeView::showDetailPanel(bool on) {
  if (detail_->isVisibleTo(this) == on) return;
  if (!on) {
    detail_->hide();
    return;
  }
  // A third of the height the first time; after that, what the user dragged it to.
  const int total = split_->height();
  detail_->show();
  if (!detail_sized_ && total > 0) {
    detail_sized_ = true;
    split_->setSizes({total - total / 3, total / 3});
  }
}

void LifetimeView::askDetail(int64_t id) {
  detail_for_ = id;
  if (id < 0) {
    detail_->clear();
    return;
  }
  client_->askBlocks(
      this, [id](viewdata::BlockQueries& q) { return q.find(id); },
      [this, id](std::optional<viewdata::BlockRow> b) {
        if (id != detail_for_) return;  // another block was selected meanwhile
        if (b) {
          showDetail(*b);
        } else {
          detail_->setPlainText(tr("Block %1 is not in the block index.").arg(id));
        }
      });
}

void LifetimeView::showDetail(const viewdata::BlockRow& b) {
  const viewdata::BlockDetail d = viewdata::block_detail(b, state_->origin(), state_->sessionEnd());
  QString html = QStringLiteral("<b>%1</b><table cellspacing=2>").arg(html_escaped(d.title));
  for (const auto& [label, value] : d.fields)
    html += QStringLiteral("<tr><td>%1:&nbsp;</td><td>%2</td></tr>")
                .arg(html_escaped(label), html_escaped(value));
  html += QStringLiteral("</table>");
  auto stack = [&](const char* title, const std::string& s) {
    html +=
        QStringLiteral("<p><b>%1</b></p><pre>%2</pre>")
            .arg(QString::fromLatin1(title), s.empty() ? tr("(none recorded)") : html_escaped(s));
  };
  stack("Call Stack(Python)", d.stack_python);
  stack("Call Stack(C)", d.stack_c);
  detail_->setHtml(html);
}

}  // namespace memtap::gui
