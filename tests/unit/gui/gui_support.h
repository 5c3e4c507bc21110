// The window over a real recording, for tests: opened, shown offscreen at a fixed size, and
// waited on until everything is loaded, indexed and drawn.
#pragma once

#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QMenu>
#include <QMenuBar>
#include <QTest>
#include <functional>
#include <memory>
#include <string>

#include "monitor/gui/main_window.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::test {

// Processes events until `done` or `ms` pass; false (and a test failure naming `what`) then.
inline bool wait_for(const std::function<bool()>& done, const char* what, int ms = 30000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > ms) {
      ADD_FAILURE() << "timed out waiting for " << what;
      return false;
    }
    QApplication::processEvents(QEventLoop::AllEvents, 10);
    QTest::qWait(5);
  }
  return true;
}

struct OpenWindow {
  std::unique_ptr<viewdata::DataSource> source;
  std::unique_ptr<gui::MainWindow> window;
};

// The window over the recording at `path`, shown and settled.
inline OpenWindow open_window(const std::string& path, int width = 1400, int height = 900) {
  OpenWindow w;
  std::string error;
  w.source = viewdata::open_recording(path, &error);
  EXPECT_NE(w.source, nullptr) << error;
  if (!w.source) return w;
  w.window = std::make_unique<gui::MainWindow>(w.source.get());
  w.window->resize(width, height);
  w.window->show();
  wait_for([&] { return w.window->settled(); }, "the window to settle");
  return w;
}

// Waits until the window has answered every question asked so far (views ask on the next
// turn of the event loop after a change, so the loop turns first; the views that ask once
// a chosen range rests ask when ViewState::rangeResting() ends).
inline void settle(gui::MainWindow& window) {
  window.refresh();
  QApplication::processEvents();
  // Both at once: an answer can choose a range (a block brought into view), whose rest then
  // asks again.
  wait_for([&] { return !window.state()->rangeResting() && window.client()->pending() == 0; },
           "the answers");
  QApplication::processEvents();
  wait_for([&] { return !window.state()->rangeResting() && window.client()->pending() == 0; },
           "the answers");
}

// The menu of the window's menu bar titled `title` (without its '&'), or nullptr.
inline QMenu* menu(gui::MainWindow& window, const QString& title) {
  for (QAction* a : window.menuBar()->actions()) {
    if (a->menu() != nullptr && a->text().remove('&') == title) return a->menu();
  }
  return nullptr;
}

// The action of `m` titled `text` (without its '&'), or nullptr.
inline QAction* action(QMenu* m, const QString& text) {
  for (QAction* a : m->actions()) {
    if (a->text().remove('&') == text) return a;
  }
  return nullptr;
}

}  // namespace memtap::test
