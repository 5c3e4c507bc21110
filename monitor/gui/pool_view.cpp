// See pool_view.h.
#include "monitor/gui/pool_view.h"

#include <QHeaderView>
#include <QLocale>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "monitor/gui/chart_style.h"
#include "monitor/gui/count_text.h"
#include "monitor/report/units.h"
#include "monitor/viewdata/labels.h"

namespace memtap::gui {
namespace {

// The states' colours (state_color): Allocated and Active, free pending as the curves draw
// Allocated and Active (the pending bytes are what Active adds); Free pale; the largest free
// gap of a segment edged in the Fragmentation curve's colour.
const QColor kFree(0xe4, 0xe4, 0xe4);
QColor gap_color() {
  return curve_color("Fragmentation", 0);
}
const QColor kHighlight(0xff, 0xf3, 0xb0);

QString bytes_q(uint64_t bytes) {
  return QString::fromStdString(bytes_text(double(bytes)));
}
QString hex_text(uint64_t addr) {
  return QStringLiteral("0x%1").arg(qulonglong(addr), 0, 16);
}
// Fragmentation as a whole percent, except that a little is never "0%" (a segment whose
// free bytes are split by a few hundred bytes has its largest gap hatched, and "0%" beside
// the hatching read as a contradiction), nor nearly all "100%".
QString percent(double f) {
  if (f > 0 && f < 0.005) return QStringLiteral("<1%");
  if (f < 1 && f > 0.995) return QStringLiteral(">99%");
  return QStringLiteral("%1%").arg(std::lround(f * 100));
}

constexpr double kMargin = 8;
constexpr double kBarHeight = 24;

}  // namespace

QString poolSegmentHeader(const viewdata::PoolSegmentData& s) {
  const QString pending =
      s.pending_bytes == 0
          ? QString()
          : QObject::tr(" · Active, free pending %1").arg(bytes_q(s.pending_bytes));
  return QObject::tr(
             "%1  %2 %3 · %4 · Allocated %5%6 · Free %7 · largest free gap %8 · "
             "fragmentation %9")
      .arg(hex_text(s.segment.addr), bytes_q(s.segment.size_bytes),
           QString::fromLatin1(viewdata::layer_label(s.segment.layer, s.segment.is_mmap)),
           count_text(s.blocks.size(), "block", "blocks"))
      .arg(bytes_q(s.allocated_bytes), pending, bytes_q(s.free_bytes), bytes_q(s.largest_free_gap),
           percent(s.fragmentation));
}

QColor state_color(viewdata::PoolBlockState state) {
  switch (state) {
    case viewdata::PoolBlockState::kAllocated:
      return curve_color("Allocated", 0);
    case viewdata::PoolBlockState::kPendingFree:
      return curve_color("Active", 0);
    case viewdata::PoolBlockState::kFree:
      return kFree;
  }
  return kFree;
}

QString poolLegend(const viewdata::PoolData& d) {
  QString legend;
  for (viewdata::PoolBlockState s : viewdata::pool_states(d)) {
    // Free is pale: its swatch a shade darker, to be seen on the window's background.
    const QColor swatch = s == viewdata::PoolBlockState::kFree ? kFree.darker(115) : state_color(s);
    legend += QStringLiteral("<span style='color:%1'>&#9632;</span> %2")
                  .arg(swatch.name(), QObject::tr(viewdata::pool_state_name(s)));
    if (s == viewdata::PoolBlockState::kPendingFree)
      legend += QObject::tr(" (freed, waiting for another stream)");
    legend += QStringLiteral(" &nbsp; ");
  }
  return legend + QObject::tr(
                      "<span style='color:%1'>&#9636;</span> the largest free gap of a "
                      "segment whose free bytes are split")
                      .arg(gap_color().name());
}

PoolCanvas::PoolCanvas(ViewState* state, QWidget* parent) : QWidget(parent), state_(state) {
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void PoolCanvas::show(viewdata::PoolData data) {
  data_ = std::move(data);
  largest_segment_ = 1;
  for (const auto& s : data_.segments)
    largest_segment_ = std::max(largest_segment_, s.segment.size_bytes);
  setMinimumHeight(int(data_.segments.size()) * rowHeight() + 8);
  updateGeometry();
  update();
}

int PoolCanvas::rowHeight() const {
  return fontMetrics().height() + 4 + int(kBarHeight) + 10;
}

QSize PoolCanvas::sizeHint() const {
  return {600, int(data_.segments.size()) * rowHeight() + 8};
}

QRectF PoolCanvas::barRect(int segment) const {
  const double full = std::max(20.0, width() - 2 * kMargin);
  // Length by size, but never so short that its blocks cannot be seen.
  const double f = std::max(
      0.2, double(data_.segments[size_t(segment)].segment.size_bytes) / double(largest_segment_));
  const double top = segment * rowHeight() + 4 + fontMetrics().height() + 4;
  return QRectF(kMargin, top, full * f, kBarHeight);
}

double PoolCanvas::xOf(int segment, uint64_t addr) const {
  const QRectF bar = barRect(segment);
  const viewdata::PoolItem& s = data_.segments[size_t(segment)].segment;
  const double f = double(addr - s.addr) / double(std::max<uint64_t>(s.size_bytes, 1));
  return bar.left() + std::clamp(f, 0.0, 1.0) * bar.width();
}

QRect PoolCanvas::headerRect(int segment) const {
  if (segment < 0 || size_t(segment) >= data_.segments.size()) return {};
  return QRect(0, segment * rowHeight() + 2, width(), fontMetrics().height() + 4);
}

QRect PoolCanvas::blockRect(int64_t id) const {
  for (size_t i = 0; i < data_.segments.size(); ++i) {
    const QRectF bar = barRect(int(i));
    for (const viewdata::PoolItem& b : data_.segments[i].blocks) {
      if (b.id != id) continue;
      const double x0 = xOf(int(i), b.addr), x1 = xOf(int(i), b.addr + b.size_bytes);
      return QRectF(x0, bar.top(), std::max(x1 - x0, 1.0), bar.height()).toAlignedRect();
    }
  }
  return {};
}

int PoolCanvas::highlightedSegment() const {
  return viewdata::pool_segment_of(data_, state_->selectedBlock());
}

void PoolCanvas::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  update();
}

void PoolCanvas::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || data_.segments.empty()) return;
  const QPointF at = event->position();
  const int i = int(at.y()) / rowHeight();
  if (i < 0 || size_t(i) >= data_.segments.size()) return;
  const viewdata::PoolSegmentData& s = data_.segments[size_t(i)];
  if (headerRect(i).contains(at.toPoint())) {
    emit blockClicked(s.segment.id);
    return;
  }
  const QRectF bar = barRect(i);
  if (at.y() < bar.top() || at.y() > bar.bottom()) return;
  // The block under the pointer, or the nearest within 3 px (a small one is a sliver).
  const viewdata::PoolItem* best = nullptr;
  double best_distance = 3;
  for (const viewdata::PoolItem& b : s.blocks) {
    const double x0 = xOf(i, b.addr), x1 = xOf(i, b.addr + b.size_bytes);
    const double d = at.x() < x0 ? x0 - at.x() : at.x() > x1 ? at.x() - x1 : 0;
    if (d < best_distance || (d == 0 && best_distance == 0)) {
      best = &b;
      best_distance = d;
    }
  }
  if (best != nullptr) emit blockClicked(best->id);
}

void PoolCanvas::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  p.fillRect(event->rect(), palette().base());
  if (data_.segments.empty()) return;
  const QFontMetrics fm = fontMetrics();
  const int row = rowHeight();
  const int first = std::max(0, event->rect().top() / row);
  const int last = std::min(int(data_.segments.size()) - 1, event->rect().bottom() / row);
  const int highlighted = highlightedSegment();
  const int64_t selected = state_->selectedBlock();
  for (int i = first; i <= last; ++i) {
    const viewdata::PoolSegmentData& s = data_.segments[size_t(i)];
    const QRect header = headerRect(i);
    const QRectF bar = barRect(i);
    if (i == highlighted) p.fillRect(QRect(0, i * row, width(), row - 2), kHighlight);
    p.setPen(palette().color(QPalette::Text));
    QFont font = p.font();
    font.setBold(s.segment.id == selected);
    p.setFont(font);
    p.drawText(header.adjusted(int(kMargin), 0, -4, 0), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(poolSegmentHeader(s), Qt::ElideRight, header.width() - 12));
    font.setBold(false);
    p.setFont(font);

    // Free first (the whole bar), then the blocks, then the largest gap's edge.
    p.fillRect(bar, kFree);
    for (const viewdata::PoolItem& b : s.blocks) {
      const QColor color = state_color(viewdata::state_of(b));
      const double x0 = xOf(i, b.addr), x1 = xOf(i, b.addr + b.size_bytes);
      p.fillRect(QRectF(x0, bar.top(), std::max(x1 - x0, 1.0), bar.height()), color);
      // A light edge between neighbours, so adjacent blocks read as separate.
      if (x1 - x0 > 3) {
        p.setPen(QPen(color.lighter(160), 1));
        p.drawLine(QPointF(x0, bar.top()), QPointF(x0, bar.bottom()));
      }
    }
    for (const viewdata::PoolGap& g : s.gaps) {
      // Only where free bytes are split: an empty segment is one gap, not fragmentation.
      if (s.gaps.size() < 2 || g.size_bytes != s.largest_free_gap) continue;
      const double x0 = xOf(i, g.addr), x1 = xOf(i, g.addr + g.size_bytes);
      p.setPen(QPen(gap_color(), 2));
      p.setBrush(QBrush(gap_color().lighter(170), Qt::BDiagPattern));
      p.drawRect(QRectF(x0 + 1, bar.top() + 1, std::max(x1 - x0 - 2, 1.0), bar.height() - 2));
      break;  // the first of equal largest gaps
    }
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(i == highlighted ? QColor(0xb0, 0x60, 0x00) : QColor(0x88, 0x88, 0x88),
                  i == highlighted ? 2 : 1));
    p.drawRect(bar);
    const QRect sel = blockRect(selected);
    if (i == highlighted && !sel.isEmpty()) {
      const QRectF r = QRectF(sel).united(QRectF(sel.center().x() - 3.0, bar.top(), 6, 1));
      p.setPen(QPen(Qt::black, 2));
      p.drawRect(r.adjusted(-1, -2, 1, 2));
    }
  }
}

PoolView::PoolView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel(tr("Loading the pool…"), this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  legend_ = new QLabel(this);
  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);
  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  canvas_ = new PoolCanvas(state, scroll_);
  scroll_->setWidget(canvas_);
  list_ = new QTreeWidget(this);
  list_->setRootIsDecorated(false);
  list_->setHeaderLabels(
      {tr("Size"), tr("Layer"), tr("owner"), tr("Name"), tr("Allocated"), tr("Address")});
  list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  list_->hide();
  layout->addWidget(summary_);
  layout->addWidget(legend_);
  layout->addWidget(scroll_, 1);
  layout->addWidget(list_, 1);

  connect(canvas_, &PoolCanvas::blockClicked, state_, &ViewState::selectBlock);
  connect(list_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
    state_->selectBlock(item->data(0, Qt::UserRole).toLongLong());
  });
  for (auto signal : {&ViewState::scopeChanged, &ViewState::rangeSettled, &ViewState::cursorChanged,
                      &ViewState::dataAdvancedSlowly}) {
    connect(state_, signal, this, &PoolView::request);
  }
  connect(state_, &ViewState::blockSelected, this, [this](qint64 id) {
    canvas_->update();
    const int segment = canvas_->highlightedSegment();
    if (segment >= 0)
      scroll_->ensureVisible(0, canvas_->headerRect(segment).center().y(), 0,
                             canvas_->headerRect(segment).height() * 3);
    for (int i = 0; i < list_->topLevelItemCount(); ++i) {
      QTreeWidgetItem* item = list_->topLevelItem(i);
      item->setSelected(item->data(0, Qt::UserRole).toLongLong() == id);
    }
  });
  request();
}

void PoolView::request() {
  if (scheduled_) return;
  scheduled_ = true;
  QMetaObject::invokeMethod(this, &PoolView::ask, Qt::QueuedConnection);
}

void PoolView::ask() {
  scheduled_ = false;
  if (state_->cursor() == 0) {
    summary_->setText(viewdata::more_may_come(client_->status())
                          ? tr("No events yet: the pool shows once there are blocks.")
                          : tr("No pool to show: the recording has no events."));
    return;
  }
  if (state_->loading()) {
    summary_->setText(state_->loadingText());
    return;
  }
  if (!pacer_.start()) return;  // asked again when the answer is back
  viewdata::PoolRequest r;
  r.pid = state_->pid();
  r.device = state_->device();
  r.at_ns = state_->cursor();
  client_->askBlocks(
      this, [r](viewdata::BlockQueries& q) { return viewdata::compute_pool(q, r); },
      [this](viewdata::PoolData d) {
        const bool again = pacer_.done();
        show(std::move(d));
        emit drawn();
        if (again) ask();
      });
}

void PoolView::show(viewdata::PoolData d) {
  const QLocale locale;
  const QString at = state_->timeText(d.at_ns);
  const QString where = d.device < 0 ? tr("Process %1").arg(d.pid)
                                     : tr("Device %1 of process %2").arg(d.device).arg(d.pid);
  const QString live =
      tr("%1, %2 live.").arg(count_text(d.live_blocks, "block", "blocks"), bytes_q(d.live_bytes));
  list_->clear();
  if (d.segments.empty()) {
    if (d.live_blocks == 0) {
      summary_->setText(tr("No blocks live on %1 of process %2 at %3.")
                            .arg(QString::fromStdString(device_text(d.device)))
                            .arg(d.pid)
                            .arg(at));
    } else if (d.device < 0) {
      QString text = tr("This process has no pool segments at %1: host heap blocks are not "
                        "pooled.")
                         .arg(at);
      if (d.empty_mappings > 0)
        text +=
            tr(" Its %1 anonymous mappings (%2) hold no recorded heap block: they are the "
               "allocator's and the interpreter's own arenas.")
                .arg(locale.toString(qulonglong(d.empty_mappings)), bytes_q(d.empty_mapping_bytes));
      summary_->setText(text + QLatin1Char(' ') + live + tr(" The largest:"));
    } else {
      summary_->setText(tr("%1 has no pool segments at %2: no framework pool (PTA) blocks, or "
                           "no driver (HAL) segments around them. %3 The largest:")
                            .arg(where, at, live));
    }
    for (const viewdata::PoolItem& b : d.largest_live) {
      auto* item = new QTreeWidgetItem(
          list_,
          {bytes_q(b.size_bytes), QString::fromLatin1(viewdata::layer_label(b.layer, b.is_mmap)),
           b.owner.empty() ? tr("(no owner)") : QString::fromStdString(b.owner),
           QString::fromStdString(b.name), state_->timeText(b.alloc_ns), hex_text(b.addr)});
      item->setData(0, Qt::UserRole, qlonglong(b.id));
      item->setSelected(b.id == state_->selectedBlock());
    }
    scroll_->hide();
    legend_->hide();
    list_->setVisible(d.live_blocks > 0);
  } else {
    const char* kind = d.source == blocks::PoolSource::kHostMappings
                           ? "anonymous mappings (HOST mmap) around heap blocks"
                           : "driver segments (HAL) around framework pool blocks (PTA)";
    const QString pending =
        d.pending_blocks == 0
            ? QString()
            : tr(" · Active, free pending %1 (%2)")
                  .arg(bytes_q(d.pending_bytes), count_text(d.pending_blocks, "block", "blocks"));
    QString text =
        tr("%1 at %2: %3, %4. Reserved %5 · Allocated %6%7 · Free %8 · "
           "largest free gap %9 · fragmentation %10 (the free bytes outside that gap: no "
           "request larger than it fits without a new segment).")
            .arg(where, at, count_text(d.segments_live, "segment", "segments"),
                 QString::fromLatin1(kind), bytes_q(d.reserved_bytes), bytes_q(d.allocated_bytes),
                 pending, bytes_q(d.free_bytes), bytes_q(d.largest_free_gap))
            .arg(percent(d.fragmentation));
    if (d.empty_mappings > 0)
      text +=
          tr(" %1 more mappings (%2) hold no heap block and are not drawn.")
              .arg(locale.toString(qulonglong(d.empty_mappings)), bytes_q(d.empty_mapping_bytes));
    else if (d.segments_live > d.segments.size())
      text += tr(" Drawing the %1 largest segments.")
                  .arg(locale.toString(qulonglong(d.segments.size())));
    if (d.blocks_truncated) text += tr(" Figures from the largest blocks only (too many to read).");
    if (d.unsegmented_blocks > 0) {
      const bool one = d.unsegmented_blocks == 1;
      text += (d.blocks_truncated ? tr(" Of the blocks read, %1 (%2) %3 outside every segment.")
                                        .arg(QLocale().toString(qulonglong(d.unsegmented_blocks)))
                                  : tr(" %1 (%2) %3 outside every segment.")
                                        .arg(count_text(d.unsegmented_blocks, "block", "blocks")))
                  .arg(bytes_q(d.unsegmented_bytes), one ? tr("lies") : tr("lie"));
    }
    summary_->setText(text);
    legend_->setText(poolLegend(d));
    list_->hide();
    legend_->show();
    scroll_->show();
  }
  const QString behind = blocks_behind_note(*state_, d.covered_until_ns, d.at_ns);
  if (!behind.isEmpty()) summary_->setText(summary_->text() + QLatin1Char(' ') + behind);
  canvas_->show(std::move(d));
}

}  // namespace memtap::gui
