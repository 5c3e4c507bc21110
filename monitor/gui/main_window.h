// The window: the top bar, the memory curves with the trend overview, the views that the
// selected range drives (lifetime graph, pool, breakdown, flame chart, block and event
// tables) in tabs below, and the findings on the right; the menus above (window_menus.h).
// It owns the shared ViewState and refreshes it from the data source every 100 ms while data
// arrives.
#pragma once

#include <QDockWidget>
#include <QMainWindow>
#include <QStringList>
#include <QTabWidget>
#include <QTimer>
#include <functional>
#include <string>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/refresh_pacer.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

class TopBar;
class CurvesPanel;
class LifetimeView;
class PoolView;
class BreakdownView;
class FlameView;
class BlockTableView;
class EventTableView;
class FindingsView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(viewdata::DataSource* source, QWidget* parent = nullptr);
  ~MainWindow() override;

  ViewState* state() { return state_; }
  EngineClient* client() { return client_; }
  TopBar* topBar() { return top_bar_; }
  CurvesPanel* curves() { return curves_; }
  LifetimeView* lifetime() { return lifetime_; }
  PoolView* pool() { return pool_; }
  BreakdownView* breakdown() { return breakdown_; }
  FlameView* flame() { return flame_; }
  BlockTableView* blockTable() { return block_table_; }
  EventTableView* eventTable() { return event_table_; }
  FindingsView* findings() { return findings_; }
  QDockWidget* findingsDock() { return findings_dock_; }
  QTabWidget* tabs() { return tabs_; }

  // Brings a view (window_options.h's names) to the front; before the window is first
  // shown, as it is shown.
  void showView(const std::string& name);
  // Shows `device` (kHostDevice or a GPU ordinal) once a process has it (--device).
  void preferDevice(int32_t device);
  // Once the source has loaded: the cursor at the Allocated peak of the shown process and
  // device (--at peak), or at `since_start_ns` after the start.
  void setCursorAtPeak();
  void setCursorSinceStart(int64_t since_start_ns);
  // The same once the source has loaded (--at): at once if it already has, which a small
  // recording has by the time the window is made (its first refresh saw it loaded).
  void cursorOnceLoaded(bool at_peak, int64_t since_start_ns);
  // Once the source has loaded (--range): the range every view shows, [from_ns, to_ns]
  // after the start (cut at the session's end).
  void rangeOnceLoaded(int64_t from_ns, int64_t to_ns);
  // What --device (preferDevice), --at (cursorOnceLoaded) and --range (rangeOnceLoaded) asked
  // for that a replayed
  // recording lacks, once settled(): a line each after the recording's name `file`, in
  // memtap check's words ("x.db: no device 5 in the recording (its devices: cpu, 0)");
  // empty when it has all, and while live (a device can still come).
  QStringList missingRequests(const QString& file) const;
  // Everything the source has is loaded, indexed and drawn: no question is waiting.
  bool settled() const;
  // The source finished loading or recording (sourceDone was emitted).
  bool sourceFinished() const { return done_; }
  // Runs one refresh now (tests; the timer does it every 100 ms, less often while the
  // window leaves the CPU to the program: refresh_pacer.h).
  void refresh();
  // The timer's ticks so far, and the refreshes it skipped for the program (--stats).
  uint64_t refreshTicks() const { return refresh_pacer_.ticks(); }
  uint64_t refreshesSkipped() const { return refresh_pacer_.skipped(); }

 signals:
  // The source finished loading (replay) or recording (live); once.
  void sourceDone();
  // File > Open Recording chose a file, or one was dropped on the window (WindowSet opens
  // it).
  void openRequested(const QString& path);
  // The window was closed.
  void closed();

 protected:
  void showEvent(QShowEvent* event) override;
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  ViewState* state_;
  std::string view_at_show_;  // showView() before the first show
  EngineClient* client_;
  TopBar* top_bar_;
  CurvesPanel* curves_;
  QTabWidget* tabs_;
  LifetimeView* lifetime_;
  PoolView* pool_;
  BreakdownView* breakdown_;
  FlameView* flame_;
  BlockTableView* block_table_;
  EventTableView* event_table_;
  FindingsView* findings_;
  QDockWidget* findings_dock_;
  QTimer timer_;
  RefreshPacer refresh_pacer_;
  bool done_ = false;
  void onceLoaded(const std::function<void()>& apply);  // now, or when sourceDone comes

  int64_t at_ns_ = -1;  // cursorOnceLoaded's instant since the start (-1: none, or the peak)
  int64_t range_from_ns_ = -1;  // rangeOnceLoaded's start since the start (-1: none)
  int quiet_refreshes_ = 0;     // refreshes since anything changed (settled() wants two)
  viewdata::SourceStatus last_;
};

}  // namespace memtap::gui
