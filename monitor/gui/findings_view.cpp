// See findings_view.h.
#include "monitor/gui/findings_view.h"

#include <QMouseEvent>
#include <QScrollArea>
#include <algorithm>

namespace memtap::gui {
namespace {

bool same(const viewdata::Finding& a, const viewdata::Finding& b) {
  return a.kind == b.kind && a.title == b.title && a.detail == b.detail && a.t_ns == b.t_ns &&
         a.range_t0_ns == b.range_t0_ns && a.range_t1_ns == b.range_t1_ns;
}

// The text with a place to break after each '.', '/', '_', ':' and '@' that is not before a
// digit or a space: owners, stacks and
// file names are words longer than a card is wide ("model.encoder.layer0.attention"), and
// a label cuts a word it cannot break. The mark (a zero-width space) is invisible.
QString breakable(const QString& text) {
  QString out;
  out.reserve(text.size() + text.size() / 8);
  for (int i = 0; i < text.size(); ++i) {
    out += text[i];
    // Not inside a number ("1.5 MiB", "+0.478 s", "train.py:42").
    const bool inside = i + 1 < text.size() && !text[i + 1].isSpace() && !text[i + 1].isDigit();
    if (inside && QStringView(u"./_:@").contains(text[i])) out += QChar(0x200B);
  }
  return out;
}

}  // namespace

FindingCard::FindingCard(const viewdata::Finding& f, const QString& time, QWidget* parent)
    : QFrame(parent) {
  setObjectName(QStringLiteral("finding"));
  setFrameShape(QFrame::StyledPanel);
  const bool link = f.t_ns != 0 || f.block_filter.has_value() || f.block.has_value();
  if (link) setCursor(Qt::PointingHandCursor);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 6);
  layout->setSpacing(2);
  auto* title = new QLabel(
      QStringLiteral("<b>%1</b>").arg(breakable(QString::fromStdString(f.title)).toHtmlEscaped()),
      this);
  title->setTextFormat(Qt::RichText);
  title->setWordWrap(true);
  layout->addWidget(title);
  auto* detail = new QLabel(breakable(QString::fromStdString(f.detail)), this);
  detail->setTextFormat(Qt::PlainText);
  detail->setWordWrap(true);
  layout->addWidget(detail);
  if (!time.isEmpty()) {
    auto* when = new QLabel(time, this);
    when->setStyleSheet(QStringLiteral("color: #1a5fb4"));
    layout->addWidget(when);
  }
  setCurrent(false);
}

void FindingCard::setCurrent(bool on) {
  setStyleSheet(on ? QStringLiteral("#finding { background: #dbe8fb; border: 1px solid #1a5fb4; }")
                   : QStringLiteral("#finding { background: palette(base); }"));
}

void FindingCard::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) emit clicked();
  QFrame::mousePressEvent(event);
}

FindingsView::FindingsView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  // However narrow the window, a card keeps room for its words: about 26 characters a line
  // (the window's minimum width grows by it, not the cards' text cut).
  setMinimumWidth(fontMetrics().averageCharWidth() * 26 + 40);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  empty_ = new QLabel(tr("No findings yet"), this);
  empty_->setWordWrap(true);
  empty_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  empty_->setStyleSheet(QStringLiteral("color: #555"));
  layout->addWidget(empty_);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_ = new QWidget(scroll);
  list_layout_ = new QVBoxLayout(list_);
  list_layout_->setContentsMargins(0, 0, 0, 0);
  list_layout_->setSpacing(6);
  list_layout_->addStretch(1);
  scroll->setWidget(list_);
  layout->addWidget(scroll, 1);

  connect(state_, &ViewState::scopeChanged, this, [this] {
    answered_ = false;
    request();
  });
  // Findings change with new data only (while live or loading); the engine answers for the
  // whole session, whatever the range.
  connect(state_, &ViewState::dataAdvancedSlowly, this, &FindingsView::request);
  show({});
}

QString FindingsView::emptyText() const {
  return findings_.empty() ? empty_->text() : QString();
}

void FindingsView::request() {
  if (scheduled_) return;
  scheduled_ = true;
  QMetaObject::invokeMethod(this, &FindingsView::ask, Qt::QueuedConnection);
}

void FindingsView::ask() {
  scheduled_ = false;
  if (!state_->hasScope()) {  // no process chosen yet, or none to choose
    const viewdata::SourceStatus status = client_->status();
    if (!viewdata::more_may_come(status) && status.events == 0) {
      empty_->setText(tr("The recording has no memory events: nothing to find"));
    }
    return;
  }
  if (state_->loading()) {
    empty_->setText(state_->loadingText());
    return;
  }
  if (!pacer_.start()) return;  // asked again when the answer is back
  const uint32_t pid = state_->pid();
  const int32_t device = state_->device();
  const viewdata::SourceStatus status = client_->status();
  const bool running =
      std::any_of(status.processes.begin(), status.processes.end(),
                  [pid](const viewdata::ProcessEntry& p) { return p.pid == pid && p.running; });
  client_->ask(
      this,
      [pid, device, running](const viewdata::EngineView& e) {
        return viewdata::compute_findings(e, pid, device, running);
      },
      [this, pid, device](std::vector<viewdata::Finding> findings) {
        const bool again = pacer_.done();
        if (pid == state_->pid() && device == state_->device()) {
          answered_ = true;
          show(std::move(findings));
        }
        if (again) ask();
      });
}

void FindingsView::show(std::vector<viewdata::Finding> findings) {
  const bool unchanged = findings.size() == findings_.size() &&
                         std::equal(findings.begin(), findings.end(), findings_.begin(), same);
  if (unchanged && !cards_.empty()) {
    findings_ = std::move(findings);  // filters and blocks may have been refined
    emit drawn(int(findings_.size()));
    return;
  }
  findings_ = std::move(findings);
  for (FindingCard* c : cards_) delete c;
  cards_.clear();
  current_ = size_t(-1);
  for (size_t i = 0; i < findings_.size(); ++i) {
    const viewdata::Finding& f = findings_[i];
    auto* card = new FindingCard(f, f.t_ns != 0 ? state_->timeText(f.t_ns) : QString(), list_);
    list_layout_->insertWidget(int(i), card);
    connect(card, &FindingCard::clicked, this, [this, i] { open(i); });
    cards_.push_back(card);
  }
  const bool loaded = client_->status().loaded;
  empty_->setText(!answered_ || !loaded
                      ? tr("No findings yet")
                      : tr("No memory events for this process and device: nothing to find"));
  empty_->setVisible(findings_.empty());
  emit drawn(int(findings_.size()));
}

void FindingsView::open(size_t i) {
  if (i >= findings_.size()) return;
  const viewdata::Finding f = findings_[i];
  if (current_ < cards_.size()) cards_[current_]->setCurrent(false);
  current_ = i;
  cards_[i]->setCurrent(true);
  if (f.t_ns != 0) {
    // Show the stretch the finding is about, or keep the range's width around its moment,
    // when what it is about lies outside the range.
    int64_t a = f.range_t0_ns != 0 ? f.range_t0_ns : f.t_ns;
    int64_t b = f.range_t1_ns != 0 ? f.range_t1_ns : f.t_ns;
    if (a < state_->t0() || b > state_->t1()) {
      if (b > a) {
        const int64_t margin = (b - a) / 10;
        state_->setRange(a - margin, b + margin);
      } else {
        const int64_t half = std::max<int64_t>((state_->t1() - state_->t0()) / 2, 1'000'000);
        state_->setRange(f.t_ns - half, f.t_ns + half);
      }
    }
    state_->setCursor(f.t_ns);
  }
  if (f.block_filter) state_->setBlockFilter(QString::fromStdString(*f.block_filter));
  if (f.block) {
    const uint32_t pid = state_->pid();
    const int32_t device = state_->device();
    const viewdata::FindingBlock block = *f.block;
    client_->askBlocks(
        this,
        [pid, device, block](viewdata::BlockQueries& q) {
          return viewdata::find_finding_block(q, pid, device, block).value_or(-1);
        },
        [this](int64_t id) {
          if (id >= 0) state_->selectBlock(id);
        });
  }
  if (!f.view.empty()) emit state_->viewRequested(QString::fromStdString(f.view));
}

}  // namespace memtap::gui
