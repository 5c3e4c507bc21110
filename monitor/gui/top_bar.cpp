// See top_bar.h.
#include "monitor/gui/top_bar.h"

#include <QHBoxLayout>
#include <QVBoxLayout>
#include <limits>
#include <set>

#include "monitor/gui/count_text.h"
#include "monitor/report/units.h"

namespace memtap::gui {

namespace {

// The block index is said to be behind from this many events waiting (or any on disk): a
// live session's queue holds a batch or two (8,192 rows each) as a matter of course.
constexpr size_t kBlocksBehindEvents = 100'000;
// Less behind than this the view is said to be up to date.
constexpr int64_t kUpToDateNs = 1'000'000;
// From this far behind the view's lag is said with the counts, which always show, rather
// than with the extras that go first in a narrow window; and the block views are said to be
// behind the curves, however few events wait.
constexpr int64_t kFarBehindNs = 1'000'000'000;

QString process_label(uint32_t pid, const viewdata::SourceStatus& status) {
  for (const viewdata::ProcessEntry& p : status.processes) {
    if (p.pid != pid) continue;
    QString label = QStringLiteral("pid %1").arg(pid);
    if (p.rank >= 0) label = QStringLiteral("rank %1/%2 · ").arg(p.rank).arg(p.world_size) + label;
    if (!p.hostname.empty())
      label += QStringLiteral(" @ %1").arg(QString::fromStdString(p.hostname));
    return label;
  }
  return QStringLiteral("pid %1").arg(pid);
}

// A replayed recording whose writer stopped (a full disk): the bar says so, and how far into
// the session its events go, which is where its curves end (the writer stops behind the
// events, so that is before the stop itself, which the tooltip tells with the reason).
QString stop_text(const RecordingStop& stop, bool unfinished) {
  QString text = stop.disk_full ? TopBar::tr("recording stopped (disk full)")
                                : TopBar::tr("recording stopped (write failed)");
  if (stop.first_ns != 0 && stop.recorded_until_ns >= stop.first_ns) {
    text += TopBar::tr(": events up to +%1 only")
                .arg(QString::fromStdString(duration_text(stop.recorded_until_ns - stop.first_ns)));
  }
  if (unfinished) text += TopBar::tr(", see memtap recover");
  return text;
}

}  // namespace

TopBar::TopBar(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  auto* rows = new QVBoxLayout(this);
  rows->setContentsMargins(6, 4, 6, 4);
  rows->setSpacing(2);
  selectors_ = new QHBoxLayout();
  selectors_->setContentsMargins(0, 0, 0, 0);
  rows->addLayout(selectors_);
  auto* layout = selectors_;
  process_ = new QComboBox(this);
  process_->setToolTip(tr("Process (rank and host where known)"));
  process_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  device_ = new QComboBox(this);
  device_->setToolTip(
      tr("Device: the host's memory, or an accelerator's (GPU, NPU) by its number"));
  group_by_ = new QComboBox(this);
  group_by_->addItem(tr("Overall"), int(timeline::GroupBy::kOverall));
  group_by_->addItem(tr("Layer / Component"), int(timeline::GroupBy::kLayer));
  group_by_->addItem(tr("Owner"), int(timeline::GroupBy::kOwner));
  group_by_->addItem(tr("Stream"), int(timeline::GroupBy::kStream));
  group_by_->setToolTip(tr("Group the curves by"));
  fragmentation_ = new QCheckBox(tr("Fragmentation"), this);
  fragmentation_->setToolTip(tr("Show Reserved - Allocated as a curve"));
  live_ = new QPushButton(this);
  live_->setCheckable(true);
  live_->setToolTip(tr("Follow the newest data (Live), or hold the view (Paused)"));
  status_ = new QLabel(this);
  // The status line gives way when the window is narrow rather than widen it.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);

  layout->addWidget(new QLabel(tr("Process"), this));
  layout->addWidget(process_);
  layout->addWidget(new QLabel(tr("Device"), this));
  layout->addWidget(device_);
  layout->addWidget(new QLabel(tr("Group by"), this));
  layout->addWidget(group_by_);
  layout->addWidget(fragmentation_);
  layout->addWidget(live_);
  layout->addWidget(status_, 1);
  // Holds the selectors at their width when the status line is on its own row.
  layout->addStretch(0);
  showFollowing(state_->following());

  connect(process_, &QComboBox::activated, this, [this] {
    process_chosen_ = true;
    fillDevices();
  });
  connect(device_, &QComboBox::activated, this, [this] {
    if (device_->currentIndex() < 0) return;
    device_chosen_ = true;
    state_->setScope(uint32_t(process_->currentData().toUInt()), device_->currentData().toInt());
  });
  connect(group_by_, &QComboBox::activated, this,
          [this] { state_->setGroupBy(timeline::GroupBy(group_by_->currentData().toInt())); });
  connect(fragmentation_, &QCheckBox::toggled, state_, &ViewState::setFragmentation);
  connect(live_, &QPushButton::clicked, this, [this](bool on) { state_->setFollowing(on); });
  connect(state_, &ViewState::followingChanged, this, &TopBar::showFollowing);
  connect(state_, &ViewState::groupByChanged, this, [this] {
    group_by_->setCurrentIndex(group_by_->findData(int(state_->groupBy())));
    fragmentation_->setEnabled(state_->groupBy() == timeline::GroupBy::kOverall);
  });
}

void TopBar::showFollowing(bool on) {
  live_->setChecked(on);
  live_->setText(on ? tr("● Live") : tr("❚❚ Paused"));
}

void TopBar::refresh(const viewdata::SourceStatus& status) {
  last_status_ = status;
  QStringList parts;
  if (!status.error.empty()) {
    parts << QString::fromStdString(status.error);
  } else if (!status.loaded && !status.live) {
    parts << tr("loading %1%").arg(int(status.load_fraction * 100));
  } else if (status.writing) {
    // Nothing more arrives (the rate would be stale); SQLite may still be seconds behind.
    parts << (status.rows_to_write != 0
                  ? tr("writing: %1 to go").arg(count_text(status.rows_to_write, "row", "rows"))
                  : tr("completing the recording"));
  } else if (status.live) {
    parts << tr("%1 events/s").arg(QLocale().toString(qlonglong(status.events_per_s)));
  } else {
    parts << (status.exit_code >= 0 ? tr("finished (exit code %1)").arg(status.exit_code)
                                    : tr("loaded"));
  }
  parts << count_text(status.events, "event", "events");
  parts << tr("%1 dropped").arg(QLocale().toString(qulonglong(status.events_dropped)));
  // Said in the bar, not only in its tooltip: the data ends where the recording stopped or
  // was cut (its monitor killed). After the counts, which must show however narrow the
  // window (the bar cuts its end): the stop's text is long.
  if (!status.stopped.reason.empty()) {
    parts << stop_text(status.stopped, status.unfinished);
  } else if (status.unfinished) {
    parts << tr("not finished: cut, see memtap recover");
  }
  // A PyTorch snapshot without time_us: its time axis is an order, not seconds.
  if (status.synthetic_time) parts << tr("times made up (no time_us)");
  // The block views read the window's block index, which may fall behind a live flood (its
  // events wait on disk) and, past what the disk may hold, drop events (never from the
  // recording): say so, as for the agents' drops.
  const viewdata::BlockIndexStatus blocks = client_->source().blocks().status();
  if (!blocks.error.empty()) {
    parts << tr("block index failed: %1").arg(QString::fromStdString(blocks.error));
  } else if (blocks.events_dropped != 0) {
    QString miss =
        tr("block views miss %1").arg(count_text(blocks.events_dropped, "event", "events"));
    // After the run: the index is built again from the recording, which has them.
    if (status.blocks_reindexing) miss += tr(": reading them from the recording");
    parts << miss;
  } else if (blocks.spooled_events != 0 || blocks.queued_events >= kBlocksBehindEvents ||
             (blocks.queued_events != 0 &&
              blocks.indexed_until_ns < status.last_ns - kFarBehindNs)) {
    // Their graph hatches what the index has not reached; this says why. Fewer events than
    // the count's bound may still be seconds of the program's time: a training loop's
    // events, each costlier to index than a storm's, left the lifetime graph 2.5 s behind
    // the curves with 83,486 events waiting, and the bar silent.
    parts << tr("block views %1 behind").arg(count_text(blocks.queued_events, "event", "events"));
  }
  // Shown while they fit, the last to go first; the whole line is the tooltip. (At 1600
  // pixels, the end of a flood's line read "recording 302", cut in the middle.)
  QStringList extras;
  if (status.live) {
    QString lag =
        status.lag_ns < kUpToDateNs
            ? tr("view up to date")
            : tr("view %1 behind").arg(QString::fromStdString(duration_text(status.lag_ns)));
    // Behind a program, not the analyses: which one (ranks may differ), and the tooltip why.
    if (status.lag_ns >= kUpToDateNs && status.lagging_pid != 0)
      lag += tr(" pid %1").arg(status.lagging_pid);
    // Far behind, the curves' end is not the present: said however narrow the window.
    (status.lag_ns >= kFarBehindNs ? parts : extras) << lag;
  }
  if (status.recording_bytes != 0) {
    extras << tr("recording %1")
                  .arg(QString::fromStdString(bytes_text(double(status.recording_bytes))));
  }
  const QString separator = QStringLiteral("  ·  ");
  QString text = parts.join(separator);
  placeStatus(status_->fontMetrics().horizontalAdvance(text));
  const QString whole = (parts + extras).join(separator);
  for (const QString& extra : extras) {
    const QString longer = text + separator + extra;
    if (status_->fontMetrics().horizontalAdvance(longer) > status_->width()) break;
    text = longer;
  }
  // Only what changed: each of these repaints (and re-lays out) the bar.
  if (status_->text() != text) status_->setText(text);
  alignStatus();
  const QString style = status.events_dropped != 0 || !status.error.empty() || status.unfinished ||
                                !status.stopped.reason.empty() || blocks.events_dropped != 0 ||
                                !blocks.error.empty()
                            ? QStringLiteral("color: #b00020")
                            : QString();
  if (status_->styleSheet() != style) status_->setStyleSheet(style);
  QString tip = text != whole ? whole : QString();
  if (!status.warning.empty()) {
    if (!tip.isEmpty()) tip += '\n';
    tip += QString::fromStdString(status.warning);
  }
  // Why the view is behind: where the newer events wait.
  if (status.live && status.lag_ns >= kUpToDateNs) {
    if (!tip.isEmpty()) tip += '\n';
    tip += status.lagging_pid != 0
               ? tr("The view is behind %1: its newer events have not come yet. Its agent "
                    "sends them when the program leaves it a core (the program comes first); a "
                    "stopped process sends none")
                     .arg(process_label(status.lagging_pid, status))
               : tr("The view is behind the programs: memtap is still taking in their newer "
                    "events, and while they keep every core busy it keeps to a small share of "
                    "one (the programs come first)");
  }
  // Why the block views miss events: their spool was full, or the disk refused it.
  if (blocks.events_dropped != 0 && !blocks.spool_error.empty()) {
    if (!tip.isEmpty()) tip += '\n';
    tip += QString::fromStdString(blocks.spool_error);
  }
  if (status_->toolTip() != tip) status_->setToolTip(tip);
  const bool can_follow = status.live || !status.loaded;
  if (live_->isEnabled() != can_follow) live_->setEnabled(can_follow);

  relabelProcesses();
  // The processes and devices change only with new events.
  if (asking_scopes_ || (status.events == scopes_events_ && process_->count() != 0)) return;
  asking_scopes_ = true;
  scopes_events_ = status.events;
  client_->ask(
      this, [](const viewdata::EngineView& e) { return viewdata::list_scopes(e); },
      [this](std::vector<viewdata::ScopeEntry> scopes) {
        asking_scopes_ = false;
        setScopes(scopes);
      });
}

void TopBar::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  placeStatus(needed_width_);
}

void TopBar::placeStatus(int needed_width) {
  needed_width_ = needed_width;
  // The selectors' layout has placed the Live button by now (a layout handles its widget's
  // resize before the widget does), at the same place whichever row the line is on.
  const int room = contentsRect().right() - live_->geometry().right() - selectors_->spacing();
  // Back beside them only with room to spare: live, the counts' digits come and go every
  // tick, and the line must not jump between the rows with them.
  const int slack =
      status_below_ ? status_->fontMetrics().horizontalAdvance(QStringLiteral("0000000")) : 0;
  const bool below = needed_width + slack > room;
  if (below == status_below_) return;
  status_below_ = below;
  auto* rows = static_cast<QVBoxLayout*>(layout());
  if (below) {
    selectors_->removeWidget(status_);
    rows->addWidget(status_);
  } else {
    rows->removeWidget(status_);
    selectors_->insertWidget(selectors_->indexOf(live_) + 1, status_, 1);
  }
  rows->activate();
  alignStatus();
}

void TopBar::alignStatus() {
  // Beside the selectors, at the right edge while it fits; on a row of its own, at the left,
  // under the selectors it continues. When it does not fit, its start (the state, the events
  // and the drops) shows and the end is cut, not the other way round.
  const Qt::Alignment align =
      status_below_ || status_->fontMetrics().horizontalAdvance(status_->text()) > status_->width()
          ? Qt::AlignLeft
          : Qt::AlignRight;
  if (!(status_->alignment() & align)) status_->setAlignment(align | Qt::AlignVCenter);
}

void TopBar::setScopes(const std::vector<viewdata::ScopeEntry>& scopes) {
  if (scopes.empty()) return;
  const bool changed =
      scopes.size() != scopes_.size() ||
      !std::equal(scopes.begin(), scopes.end(), scopes_.begin(), [](const auto& a, const auto& b) {
        return a.pid == b.pid && a.device == b.device;
      });
  if (!changed && process_->count() != 0) return;
  scopes_ = scopes;
  std::set<uint32_t> pids;
  for (const viewdata::ScopeEntry& s : scopes_) pids.insert(s.pid);
  const uint32_t current = state_->pid();
  process_->clear();
  for (uint32_t pid : pids) process_->addItem(process_label(pid, last_status_), pid);
  const int index = process_->findData(current);
  process_->setCurrentIndex(index >= 0 ? index : 0);
  fillDevices();
  applyPreferredDevice();
  applyDefaultProcess();
}

void TopBar::relabelProcesses() {
  // Labels gain rank and host once a process's Hello is known: live, when it arrives; a
  // replay, once loaded, which can be after the scopes were listed (then no new event
  // would ever list them again).
  const std::pair<size_t, int> now{last_status_.processes.size(), process_->count()};
  if (now == labelled_) return;
  labelled_ = now;
  for (int i = 0; i < process_->count(); ++i) {
    const QString label = process_label(process_->itemData(i).toUInt(), last_status_);
    if (process_->itemText(i) != label) process_->setItemText(i, label);
  }
  applyDefaultProcess();
}

void TopBar::applyDefaultProcess() {
  if (process_chosen_ || has_preferred_device_ || process_->count() == 0) return;
  int best = -1, best_rank = std::numeric_limits<int>::max();
  for (const viewdata::ProcessEntry& p : last_status_.processes) {
    if (p.rank < 0 || p.rank >= best_rank) continue;
    const int index = process_->findData(p.pid);
    if (index < 0) continue;
    best = index;
    best_rank = p.rank;
  }
  if (best < 0 || best == process_->currentIndex()) return;
  process_->setCurrentIndex(best);
  fillDevices();
}

void TopBar::preferDevice(int32_t device) {
  device_chosen_ = true;
  process_chosen_ = true;  // the process that has the device
  has_preferred_device_ = true;
  preferred_device_ = device;
  applyPreferredDevice();
}

void TopBar::applyPreferredDevice() {
  if (!has_preferred_device_) return;
  const viewdata::ScopeEntry* pick = nullptr;
  for (const viewdata::ScopeEntry& s : scopes_) {
    if (s.device != preferred_device_) continue;
    if (!pick || s.pid == state_->pid()) pick = &s;
  }
  if (!pick) return;  // not yet: the next scopes may bring it
  has_preferred_device_ = false;
  state_->setScope(pick->pid, pick->device);
  process_->setCurrentIndex(process_->findData(pick->pid));
  fillDevices();
}

void TopBar::fillDevices() {
  const uint32_t pid = process_->currentData().toUInt();
  int32_t current = state_->pid() == pid ? state_->device() : kHostDevice;
  device_->clear();
  for (const viewdata::ScopeEntry& s : scopes_) {
    if (s.pid != pid) continue;
    // Nobody chose: from the host to the process's first GPU (top_bar.h), once.
    if (!device_chosen_ && current == kHostDevice && s.device >= 0) current = s.device;
    // As the report names it: the recordings are of GPUs and of NPUs alike.
    device_->addItem(QString::fromStdString(device_text(s.device)), s.device);
  }
  const int index = device_->findData(current);
  device_->setCurrentIndex(index >= 0 ? index : 0);
  if (device_->currentIndex() >= 0) {
    state_->setScope(pid, device_->currentData().toInt());
  }
}

}  // namespace memtap::gui
