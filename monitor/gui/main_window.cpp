// See main_window.h.
#include "monitor/gui/main_window.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QSplitter>
#include <QToolBar>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>
#include <memory>
#include <set>

#include "common/clock.h"
#include "monitor/gui/block_table_view.h"
#include "monitor/gui/breakdown_view.h"
#include "monitor/gui/curves_panel.h"
#include "monitor/gui/event_table_view.h"
#include "monitor/gui/findings_view.h"
#include "monitor/gui/flame_view.h"
#include "monitor/gui/lifetime_view.h"
#include "monitor/gui/peak_cursor.h"
#include "monitor/gui/pool_view.h"
#include "monitor/gui/top_bar.h"
#include "monitor/gui/window_menus.h"
#include "monitor/report/units.h"

namespace memtap::gui {

MainWindow::MainWindow(viewdata::DataSource* source, QWidget* parent)
    : QMainWindow(parent),
      state_(new ViewState(this)),
      client_(new EngineClient(source, this)),
      refresh_pacer_(source->cpu_share()) {
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  // The top bar spans the whole window, the findings dock included.
  top_bar_ = new TopBar(state_, client_, this);
  auto* bar = new QToolBar(tr("Top bar"), this);
  bar->setObjectName(QStringLiteral("top_bar"));
  bar->setMovable(false);
  bar->setFloatable(false);
  bar->addWidget(top_bar_);
  addToolBar(Qt::TopToolBarArea, bar);

  auto* split = new QSplitter(Qt::Vertical, central);
  curves_ = new CurvesPanel(state_, client_, split);
  tabs_ = new QTabWidget(split);
  lifetime_ = new LifetimeView(state_, client_, tabs_);
  pool_ = new PoolView(state_, client_, tabs_);
  breakdown_ = new BreakdownView(state_, client_, tabs_);
  flame_ = new FlameView(state_, client_, tabs_);
  block_table_ = new BlockTableView(state_, client_, tabs_);
  event_table_ = new EventTableView(state_, client_, tabs_);
  tabs_->addTab(lifetime_, tr("Block lifetimes"));
  tabs_->addTab(pool_, tr("Pool"));
  tabs_->addTab(breakdown_, tr("Breakdown"));
  tabs_->addTab(flame_, tr("Flame chart"));
  tabs_->addTab(block_table_, tr("Blocks"));
  tabs_->addTab(event_table_, tr("Events"));
  split->addWidget(curves_);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 5);
  split->setStretchFactor(1, 4);
  layout->addWidget(split, 1);
  setCentralWidget(central);

  findings_ = new FindingsView(state_, client_, this);
  findings_dock_ = new QDockWidget(tr("Findings"), this);
  findings_dock_->setObjectName(QStringLiteral("findings"));
  findings_dock_->setWidget(findings_);
  // Closable: View > Findings (Ctrl+0) brings it back.
  findings_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                              QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::RightDockWidgetArea, findings_dock_);
  resizeDocks({findings_dock_}, {340}, Qt::Horizontal);
  add_window_menus(this);
  setAcceptDrops(true);

  setWindowTitle(QStringLiteral("memtap — %1").arg(QString::fromStdString(source->status().title)));
  connect(state_, &ViewState::viewRequested, this,
          [this](const QString& name) { showView(name.toStdString()); });
  connect(&timer_, &QTimer::timeout, this, [this] {
    if (refresh_pacer_.due(monotonic_ns(), thread_cpu_ns())) refresh();
  });
  timer_.start(100);
  refresh();
}

MainWindow::~MainWindow() = default;

void MainWindow::refresh() {
  const viewdata::SourceStatus status = client_->status();
  top_bar_->refresh(status);
  // The block index built again from the recording: the block views ask the new one.
  const bool reindexed = status.blocks_generation != last_.blocks_generation;
  const bool changed = status.events != last_.events || status.last_ns != last_.last_ns ||
                       status.loaded != last_.loaded || reindexed;
  last_ = status;
  if (!status.live && !status.loaded) state_->setLoading(status.load_fraction);
  if (status.first_ns != 0) state_->setSession(status.first_ns, status.last_ns);
  if (changed) {
    quiet_refreshes_ = 0;
  } else {
    ++quiet_refreshes_;
  }
  if (status.loaded && !done_) {
    done_ = true;
    // Views that show the range's end ask once more now that it is final.
    state_->finishData();
    emit sourceDone();
  } else if (done_ && reindexed) {
    state_->finishData();
  }
}

bool MainWindow::settled() const {
  if (!last_.loaded || last_.blocks_reindexing || client_->pending() != 0 || quiet_refreshes_ < 2) {
    return false;
  }
  if (state_->rangeResting()) return false;
  const viewdata::BlockIndexStatus b = client_->source().blocks().status();
  return b.queued_events == 0;
}

QStringList MainWindow::missingRequests(const QString& file) const {
  QStringList missing;
  if (last_.live || !done_) return missing;
  const auto device_name = [](int32_t d) { return QString::fromStdString(device_option_text(d)); };
  // The top bar found no process with the device once the recording's scopes were listed.
  if (top_bar_->preferredDevicePending()) {
    std::set<int32_t> devices;
    for (const viewdata::ScopeEntry& s : top_bar_->scopes()) devices.insert(s.device);
    QStringList names;
    for (int32_t d : devices) names << device_name(d);
    missing << tr("%1: no device %2 in the recording (its devices: %3)")
                   .arg(file, device_name(top_bar_->preferredDevice()),
                        names.isEmpty() ? tr("none") : names.join(QStringLiteral(", ")));
  }
  const int64_t length_ns = state_->sessionEnd() - state_->origin();
  if (at_ns_ > length_ns) {
    missing << tr("%1: --at %2 is past the recording's end (%3 after its start)")
                   .arg(file, QString::fromStdString(duration_text(at_ns_)),
                        QString::fromStdString(duration_text(length_ns)));
  }
  if (range_from_ns_ >= length_ns) {
    missing << tr("%1: --range begins at %2, past the recording's end (%3 after its start)")
                   .arg(file, QString::fromStdString(duration_text(range_from_ns_)),
                        QString::fromStdString(duration_text(length_ns)));
  }
  return missing;
}

void MainWindow::preferDevice(int32_t device) {
  top_bar_->preferDevice(device);
}

void MainWindow::showView(const std::string& name) {
  // The lifetime tab stays in front until the window is shown: shown, its graph is laid out
  // and tells the curves the room its addresses take (ViewState::timeAxisMinLeft). Behind
  // another tab it would be laid out only when first brought forward, and the curves would
  // move right then.
  if (!isVisible()) {
    view_at_show_ = name;
    return;
  }
  QWidget* views[] = {nullptr, lifetime_, pool_, breakdown_, flame_, block_table_, event_table_};
  const char* names[] = {"curves", "lifetime", "pool", "breakdown", "flame", "blocks", "events"};
  for (size_t i = 0; i < std::size(names); ++i) {
    if (name == names[i] && views[i] != nullptr) tabs_->setCurrentWidget(views[i]);
  }
  if (name == "findings") {
    findings_dock_->show();  // closed from its title bar or View > Findings
    findings_dock_->raise();
  }
}

void MainWindow::showEvent(QShowEvent* event) {
  // The children were shown (and the lifetime graph laid out) before this event.
  QMainWindow::showEvent(event);
  if (view_at_show_.empty()) return;
  const std::string view = std::move(view_at_show_);
  view_at_show_.clear();
  showView(view);
}

// Files dropped on the window open as File > Open Recording opens them, a window each.
void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile()) {
      event->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile()) emit openRequested(url.toLocalFile());
  }
  event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QMainWindow::closeEvent(event);
  emit closed();
}

void MainWindow::setCursorAtPeak() {
  // --device N --at peak: the peak of that device, once the top bar has chosen it (the
  // scopes can be listed after the source is loaded); not the host's, chosen meanwhile.
  move_cursor_to_peak(state_, client_, this,
                      [this] { return !top_bar_->preferredDevicePending(); });
}

void MainWindow::cursorOnceLoaded(bool at_peak, int64_t since_start_ns) {
  at_ns_ = at_peak ? -1 : since_start_ns;
  onceLoaded([this, at_peak, since_start_ns] {
    if (at_peak) {
      setCursorAtPeak();
    } else {
      setCursorSinceStart(since_start_ns);
    }
  });
}

void MainWindow::rangeOnceLoaded(int64_t from_ns, int64_t to_ns) {
  range_from_ns_ = from_ns;
  onceLoaded([this, from_ns, to_ns] {
    const int64_t origin = state_->origin();
    const int64_t end = std::max(state_->sessionEnd(), origin + from_ns + 1);
    state_->setRange(origin + from_ns, std::min(origin + to_ns, end));
  });
}

void MainWindow::onceLoaded(const std::function<void()>& apply) {
  if (done_) {
    apply();
  } else {
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = connect(this, &MainWindow::sourceDone, this, [apply, once] {
      disconnect(*once);
      apply();
    });
  }
}

void MainWindow::setCursorSinceStart(int64_t since_start_ns) {
  state_->setCursor(state_->origin() + since_start_ns);
}

}  // namespace memtap::gui
