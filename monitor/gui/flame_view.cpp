// See flame_view.h.
#include "monitor/gui/flame_view.h"

#include <QHBoxLayout>
#include <QVBoxLayout>
#include <algorithm>

#include "monitor/gui/count_text.h"
#include "monitor/viewdata/flame_reader.h"

namespace memtap::gui {

namespace {

// Boxes a redraw reads at most: a chart a few thousand pixels wide and tens of rows deep
// shows no more distinguishable boxes than that.
constexpr size_t kMaxSpans = 4000;

}  // namespace

FlameView::FlameView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  canvas_ = new FlameCanvas(state_, this);
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search function name"));
  search_->setClearButtonEnabled(true);
  search_->setMinimumWidth(220);
  search_->setMaximumWidth(300);
  matches_ = new QLabel(this);
  // Long sources end in "…" (the tooltip has all of it), never widen the window.
  source_ = new ElidedLabel(this);
  source_->setStyleSheet(QStringLiteral("color: #555"));
  source_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  back_ = new QPushButton(tr("Back"), this);
  back_->setToolTip(
      tr("The range before the last zoom (or Backspace, or a double click on "
         "empty space)"));
  back_->setEnabled(false);

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 4, 6, 2);
  bar->addWidget(search_);
  bar->addWidget(matches_);
  bar->addSpacing(12);
  bar->addWidget(source_, 1);
  bar->addWidget(back_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addLayout(bar);
  layout->addWidget(canvas_, 1);

  connect(search_, &QLineEdit::textChanged, this, &FlameView::applySearch);
  connect(back_, &QPushButton::clicked, this, &FlameView::back);
  connect(canvas_, &FlameCanvas::backRequested, this, &FlameView::back);
  connect(canvas_, &FlameCanvas::spanClicked, this, &FlameView::zoomTo);
  for (auto signal : {&ViewState::scopeChanged, &ViewState::rangeSettled,
                      &ViewState::dataAdvancedSlowly, &ViewState::timeAxisChanged}) {
    connect(state_, signal, this, &FlameView::request);
  }
  connect(state_, &ViewState::timeAxisChanged, canvas_, qOverload<>(&QWidget::update));
}

FlameView::~FlameView() = default;

void FlameView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  request();
}

void FlameView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  request();  // a pixel is another length of time
}

void FlameView::request() {
  if (scheduled_) return;
  scheduled_ = true;
  QMetaObject::invokeMethod(this, &FlameView::ask, Qt::QueuedConnection);
}

void FlameView::ask() {
  scheduled_ = false;
  if (!isVisible() || state_->t1() <= state_->t0()) return;  // showEvent asks again
  // One read in flight: one wanted meanwhile is asked when the answer is back.
  if (!pacer_.start()) return;
  const std::string path = client_->source().database_path();
  if (path.empty()) {
    pacer_.cancel();
    canvas_->setMessage(tr("No recording to read the Python trace from yet"));
    return;
  }
  if (!reader_ || reader_->path() != path) {
    // A live recording is renamed once, when finished: index the finished file afresh.
    reader_ = std::make_shared<viewdata::FlameReader>(path, client_->source().event_table());
  }
  viewdata::FlameRequest r;
  r.pid = state_->pid();
  r.t0_ns = state_->t0();
  r.t1_ns = state_->t1();
  const SharedTimeAxis axis = canvas_->axis();
  r.width_px = std::max(axis.right - axis.left, 100);
  r.max_spans = kMaxSpans;
  ++reads_;
  client_->askStore(
      this, [reader = reader_, r] { return reader->read(r); },
      [this](viewdata::FlameData data) {
        const bool again = pacer_.done();
        const bool more = !data.indexed && data.error.empty();
        show(std::move(data));
        if (again || more) ask();
      });
}

void FlameView::show(viewdata::FlameData d) {
  const size_t calls = size_t(std::count_if(
      d.spans.begin(), d.spans.end(), [](const viewdata::FlameSpan& s) { return s.samples == 0; }));
  const QString trace = tr("Python trace (python_trace_%1): %2 at least a pixel wide")
                            .arg(d.pid)
                            .arg(count_text(calls, "call", "calls"));
  const QString stacks = tr("the Python stacks of %1 (a sample at each; one box while "
                            "consecutive samples share a frame)")
                             .arg(count_text(d.samples, "allocation", "allocations"));
  QString source;
  switch (d.source) {
    case viewdata::FlameSource::kTrace:
      source = trace;
      break;
    case viewdata::FlameSource::kAllocationStacks:
      source = tr("No Python trace here: ") + stacks;
      break;
    case viewdata::FlameSource::kTraceAndStacks:
      source = trace + tr("; elsewhere ") + stacks;
      break;
    case viewdata::FlameSource::kNone:
      break;
  }
  if (d.truncated) source += tr("; the narrowest boxes beyond %1 are left out").arg(kMaxSpans);
  if (!d.indexed) {
    source += tr(" (reading the recording: %1%)").arg(int(d.indexed_fraction * 100));
  }
  source_->setFullText(source);

  QString message;
  if (!d.error.empty()) {
    message = QString::fromStdString(d.error);
  } else if (!d.has_trace && !d.has_stacks) {
    message = !d.indexed ? tr("Reading the recording's Python trace and call stacks... %1%")
                               .arg(int(d.indexed_fraction * 100))
                         : tr("This recording has no Python trace (python_trace_%1 table) and "
                              "no allocations with Python call stacks for pid %1.\nRecord with "
                              "`memtap run --stacks python`, or call memtap.tracer.start() in "
                              "the program.")
                               .arg(d.pid);
  } else {
    message = tr("No Python trace slices or allocation call stacks between %1 and %2")
                  .arg(state_->timeText(d.t0_ns), state_->timeText(d.t1_ns));
  }
  canvas_->setMessage(message);
  const int spans = int(d.spans.size());
  canvas_->setData(std::move(d));
  applySearch();
  emit drawn(spans);
}

void FlameView::applySearch() {
  const std::string needle = search_->text().trimmed().toStdString();
  if (needle.empty()) {
    matches_->clear();
    canvas_->setMatches({}, false);
    return;
  }
  viewdata::FlameMatches m = viewdata::search_spans(canvas_->data(), needle);
  matches_->setText(tr("%1, total %2 s")
                        .arg(count_text(m.spans.size(), "match", "matches"))
                        .arg(double(m.total_ns) / 1e9, 0, 'f', 3));
  canvas_->setMatches(std::move(m.spans), true);
}

void FlameView::zoomTo(size_t i) {
  const viewdata::FlameData& d = canvas_->data();
  if (i >= d.spans.size()) return;
  const viewdata::FlameSpan& s = d.spans[i];
  history_.push_back({state_->t0(), state_->t1(), state_->following()});
  back_->setEnabled(true);
  state_->setRange(s.start_ns, std::max(s.end_ns, s.start_ns + 1000));
}

void FlameView::back() {
  if (history_.empty()) return;
  const Range r = history_.back();
  history_.pop_back();
  back_->setEnabled(!history_.empty());
  state_->setRange(r.t0, r.t1, r.following);
}

}  // namespace memtap::gui
