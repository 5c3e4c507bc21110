// See breakdown_view.h.
#include "monitor/gui/breakdown_view.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "monitor/gui/chart_style.h"
#include "monitor/gui/count_text.h"
#include "monitor/gui/peak_cursor.h"
#include "monitor/report/units.h"
#include "monitor/viewdata/treemap_layout.h"

namespace memtap::gui {
namespace {

using Level = viewdata::BreakdownNode::Level;

QString numbers_text(const viewdata::BreakdownNode& n) {
  return QStringLiteral("%1 · %2%")
      .arg(QString::fromStdString(bytes_text(double(n.bytes))))
      .arg(n.share * 100, 0, 'f', 1);
}

// Owners are told apart by lightness within their layer's hue; stacks vary a little less.
QColor shade(const QColor& base, Level level, size_t index, bool other) {
  if (other) {
    const QColor grey = QColor(0xb0, 0xb0, 0xb0);
    return QColor((base.red() + 3 * grey.red()) / 4, (base.green() + 3 * grey.green()) / 4,
                  (base.blue() + 3 * grey.blue()) / 4);
  }
  if (level == Level::kLayer) return base;
  static const int owner_factors[] = {100, 130, 80, 155, 115, 70, 140, 90};
  static const int stack_factors[] = {112, 124, 104, 136, 118, 130, 108, 142};
  const int f = level == Level::kOwner ? owner_factors[index % std::size(owner_factors)]
                                       : stack_factors[index % std::size(stack_factors)];
  return f >= 100 ? base.lighter(f) : base.darker(10000 / f);
}

QColor text_color(const QColor& fill) {
  const double y = 0.299 * fill.redF() + 0.587 * fill.greenF() + 0.114 * fill.blueF();
  return y > 0.55 ? QColor(0x10, 0x10, 0x10) : QColor(0xff, 0xff, 0xff);
}

}  // namespace

BreakdownMap::BreakdownMap(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 120);
  setMouseTracking(true);
}

void BreakdownMap::setData(viewdata::BreakdownData data, const QString& empty_text) {
  data_ = std::move(data);
  empty_ = empty_text;
  layoutBoxes();
  update();
}

void BreakdownMap::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  layoutBoxes();
}

void BreakdownMap::layoutBoxes() {
  boxes_.clear();
  if (data_.bytes == 0) return;
  place(data_.layers, QRectF(rect()).adjusted(2, 2, -2, -2), QColor(), QString());
}

void BreakdownMap::place(const std::vector<viewdata::BreakdownNode>& nodes, const QRectF& area,
                         const QColor& parent_color, const QString& path) {
  std::vector<double> values;
  for (const viewdata::BreakdownNode& n : nodes) values.push_back(double(n.bytes));
  const std::vector<viewdata::TreemapRect> rects =
      viewdata::squarify(values, {area.x(), area.y(), area.width(), area.height()});
  const QFontMetricsF fm(font());
  const double line = fm.height();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const viewdata::BreakdownNode& n = nodes[i];
    const viewdata::TreemapRect& t = rects[i];
    const QRectF r = QRectF(t.x, t.y, t.w, t.h).adjusted(1, 1, -1, -1);
    if (r.width() < 1 || r.height() < 1) continue;
    Box b;
    b.rect = r;
    b.level = n.level;
    b.label = QString::fromStdString(n.label);
    b.numbers = numbers_text(n);
    b.filter = QString::fromStdString(n.filter);
    const QColor base = n.level == Level::kLayer ? layer_color(n.layer, n.is_mmap) : parent_color;
    b.color = shade(base, n.level, i, n.folded != 0);
    const QString here = path.isEmpty() ? b.label : path + QStringLiteral(" › ") + b.label;
    b.tip = QStringLiteral("%1\n%2 (%3%) in %4")
                .arg(here, QString::fromStdString(bytes_text(double(n.bytes))))
                .arg(n.share * 100, 0, 'f', 1)
                .arg(count_text(n.blocks, "block", "blocks"));
    if (n.level == Level::kStack && n.full != n.label) {
      b.tip += QStringLiteral("\n\n") + QString::fromStdString(n.full);
    }
    // A parent keeps a strip for its name and shows its children below it, when they fit.
    const QRectF inner = r.adjusted(3, line + 4, -3, -3);
    const bool nest = !n.children.empty() && inner.width() >= 24 && inner.height() >= 16;
    b.leaf = !nest;
    // The name is drawn only where enough of it shows to recognise it (all of it, or ten
    // characters); the tooltip tells the rest.
    QFont bold = font();
    bold.setBold(true);
    const QFontMetricsF bfm(bold);
    const double width = r.width() - 8;
    const QString numbers = QStringLiteral("  ") + b.numbers;
    if (!b.leaf && bfm.horizontalAdvance(b.label) + fm.horizontalAdvance(numbers) <= width) {
      b.shown = b.label;
      b.numbers_inline = true;
    } else {
      b.shown = bfm.elidedText(b.label, b.leaf ? Qt::ElideMiddle : Qt::ElideRight, width);
    }
    b.labelled =
        (b.shown == b.label || b.shown.size() >= 11) && (!b.leaf || r.height() >= 2 * line + 4);
    boxes_.push_back(b);
    if (nest) place(n.children, inner, b.color, here);
  }
}

const BreakdownMap::Box* BreakdownMap::boxAt(const QPointF& pos) const {
  const Box* found = nullptr;
  for (const Box& b : boxes_) {  // parents come before their children: the last one wins
    if (b.rect.contains(pos)) found = &b;
  }
  return found;
}

void BreakdownMap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (boxes_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, empty_);
    return;
  }
  const QFontMetricsF fm(font());
  const double line = fm.height();
  for (const Box& b : boxes_) {
    p.setPen(QPen(b.color.darker(140), 1));
    p.setBrush(b.color);
    p.drawRect(b.rect);
    if (!b.labelled) continue;
    p.setPen(text_color(b.color));
    const QRectF text = b.rect.adjusted(4, 2, -4, -2);
    const QRectF first(text.x(), text.y(), text.width(), line);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(first, Qt::AlignLeft | Qt::AlignVCenter, b.shown);
    const double name_width = QFontMetricsF(bold).horizontalAdvance(b.shown);
    p.setFont(font());
    if (b.leaf) {
      p.drawText(first.translated(0, line), Qt::AlignLeft | Qt::AlignVCenter,
                 fm.elidedText(b.numbers, Qt::ElideRight, text.width()));
    } else if (b.numbers_inline) {
      // A parent's strip: its numbers after its name.
      p.drawText(first.adjusted(name_width, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 QStringLiteral("  ") + b.numbers);
    }
  }
}

void BreakdownMap::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  // The innermost box that names something the block table can filter by.
  const Box* hit = nullptr;
  for (const Box& b : boxes_) {
    if (b.rect.contains(event->position()) && !b.filter.isEmpty()) hit = &b;
  }
  if (hit != nullptr) emit boxClicked(hit->filter);
}

bool BreakdownMap::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const Box* b = boxAt(help->pos());
    if (b != nullptr) {
      QToolTip::showText(help->globalPos(), b->tip, this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

BreakdownView::BreakdownView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout();
  header_ = new QLabel(tr("No data yet"), this);
  QFont bold = header_->font();
  bold.setBold(true);
  header_->setFont(bold);
  at_peak_ = new QPushButton(tr("At peak"), this);
  at_peak_->setToolTip(tr("Move the cursor to where Allocated peaked"));
  top->addWidget(header_, 1);
  top->addWidget(at_peak_);
  layout->addLayout(top);
  map_ = new BreakdownMap(this);
  layout->addWidget(map_, 1);

  connect(at_peak_, &QPushButton::clicked, this,
          [this] { move_cursor_to_peak(state_, client_, this); });
  connect(map_, &BreakdownMap::boxClicked, this, [this](const QString& filter) {
    state_->setBlockFilter(filter);
    emit state_->viewRequested(QStringLiteral("blocks"));
  });
  connect(state_, &ViewState::cursorChanged, this, &BreakdownView::request);
  connect(state_, &ViewState::scopeChanged, this, &BreakdownView::request);
  connect(state_, &ViewState::dataAdvancedSlowly, this, &BreakdownView::request);
  // Without a cursor of its own the view shows the range's end.
  connect(state_, &ViewState::rangeSettled, this, [this] {
    if (!state_->cursorSet()) request();
  });
}

void BreakdownView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (stale_) request();
}

void BreakdownView::request() {
  stale_ = true;
  if (scheduled_ || !isVisible()) return;  // hidden: asked when shown
  scheduled_ = true;
  QMetaObject::invokeMethod(this, &BreakdownView::ask, Qt::QueuedConnection);
}

void BreakdownView::ask() {
  scheduled_ = false;
  if (!state_->hasScope() || state_->sessionEnd() <= state_->origin()) return;
  if (state_->loading()) {
    header_->setText(state_->loadingText());
    return;
  }
  if (!pacer_.start()) return;  // asked again when the answer is back
  stale_ = false;
  const uint32_t pid = state_->pid();
  const int32_t device = state_->device();
  const int64_t t = state_->cursor();
  client_->askBlocks(
      this,
      [pid, device, t](viewdata::BlockQueries& q) {
        return viewdata::compute_breakdown(q, pid, device, t);
      },
      [this](viewdata::BreakdownData d) {
        const bool again = pacer_.done();
        const QString when = state_->timeText(d.t_ns);
        const QString behind = blocks_behind_note(*state_, d.covered_until_ns, d.t_ns);
        header_->setText(
            QString::fromStdString(viewdata::breakdown_heading(d, when.toStdString())) +
            (behind.isEmpty() ? QString() : QStringLiteral(". ") + behind));
        const size_t boxes = viewdata::breakdown_boxes(d);
        map_->setData(std::move(d), tr("Nothing allocated at %1").arg(when));
        emit drawn(int(boxes));
        if (again) ask();
      });
}

}  // namespace memtap::gui
