// The windows of one memtap-gui process: the one memtap started (a recording, or a live
// run) and those opened from its File menu, each over a recording of its own.
//
// An opened window owns its recording and goes, with it, when it is closed; the first one is
// main.cpp's, whose end (the live run's) follows it. An opened window is shown once its
// recording has given it something to show: a file that cannot be read (not a recording,
// one that is cut before its first row) gets a message over the window that asked, naming
// the file and why, and no window. One that fails later shows what it read, and the top bar
// says why the rest is missing.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "monitor/viewdata/data_source.h"

namespace memtap::gui {

class MainWindow;

class WindowSet : public QObject {
  Q_OBJECT

 public:
  // `first` is not owned; its File > Open Recording opens here.
  explicit WindowSet(MainWindow* first);
  ~WindowSet() override;

  // Opens the recording at `path` in a window of its own at `asking`'s size, or says why it
  // cannot (in a message over `asking`, not modal).
  void open(const QString& path, MainWindow* asking);
  // The windows opened here and not yet closed (or given up: the file could not be read).
  size_t openedCount() const { return opened_.size(); }

 private:
  void watch(MainWindow* window);
  void cannotOpen(const QString& message, MainWindow* asking);
  void forget(MainWindow* window);  // later: not inside one of its own events

  struct Opened {
    std::unique_ptr<viewdata::DataSource> source;  // outlives its window: declared first
    std::unique_ptr<MainWindow> window;
  };
  std::vector<Opened> opened_;
};

}  // namespace memtap::gui
