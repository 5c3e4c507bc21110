// The window's menus, used as a user uses them: View's shortcuts bring each view forward and
// hide or show the findings; File saves and copies a picture of the window and opens another
// recording in a window of its own, which goes with its recording when closed; a file that
// cannot be opened is named in a message, and no window opens.
#include "monitor/gui/window_menus.h"

#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QTabWidget>
#include <QUrl>
#include <fstream>

#include "monitor/gui/main_window.h"
#include "monitor/gui/window_set.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

std::string small_recording(const test::TempDir& dir, const std::string& name) {
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 1000, "weights");
  b.malloc(2, 0x2000, 3000, "activations");
  b.free(5, 0x2000);
  const std::string path = dir.file(name);
  b.write(path);
  return path;
}

// The action of `m` whose shortcut is `keys`, or nullptr.
QAction* by_shortcut(QMenu* m, const QKeySequence& keys) {
  for (QAction* a : m->actions()) {
    if (a->shortcut() == keys) return a;
  }
  return nullptr;
}

// Waits for a shown window titled after `file` (the window set shows one with its first
// data); nullptr if none came.
gui::MainWindow* wait_for_window_of(const QString& file) {
  gui::MainWindow* found = nullptr;
  const std::string what = "the window of " + file.toStdString();
  test::wait_for(
      [&] {
        for (QWidget* top : QApplication::topLevelWidgets()) {
          auto* m = qobject_cast<gui::MainWindow*>(top);
          if (m != nullptr && m->isVisible() && m->windowTitle().endsWith(file)) found = m;
        }
        return found != nullptr;
      },
      what.c_str());
  return found;
}

TEST(WindowMenus, ViewsShortcutsBringEachViewForwardAndHideTheFindings) {
  test::TempDir dir;
  auto w = test::open_window(small_recording(dir, "r.db"));
  ASSERT_TRUE(w.window);
  QMenu* view = test::menu(*w.window, "View");
  ASSERT_NE(view, nullptr);
  QTabWidget* tabs = w.window->tabs();
  for (int i = 0; i < tabs->count(); ++i) {
    QAction* a = by_shortcut(view, QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    ASSERT_NE(a, nullptr) << "Ctrl+" << i + 1;
    EXPECT_EQ(a->text(), tabs->tabText(i));
    a->trigger();
    EXPECT_EQ(tabs->currentIndex(), i) << a->text().toStdString();
  }
  QAction* findings = by_shortcut(view, QKeySequence(Qt::CTRL | Qt::Key_0));
  ASSERT_NE(findings, nullptr);
  EXPECT_EQ(findings->text(), "Findings");
  ASSERT_TRUE(w.window->findingsDock()->isVisible());
  findings->trigger();
  EXPECT_FALSE(w.window->findingsDock()->isVisible());
  findings->trigger();
  EXPECT_TRUE(w.window->findingsDock()->isVisible());
  // --view findings brings a closed dock back too.
  w.window->findingsDock()->close();
  w.window->showView("findings");
  EXPECT_TRUE(w.window->findingsDock()->isVisible());
}

// Every File action has its keys, Quit too where the platform binds none (offscreen, as on a
// bare X server: QKeySequence::Quit is empty there).
TEST(WindowMenus, FileActionsHaveKeysWithoutADesktopsBindings) {
  test::TempDir dir;
  auto w = test::open_window(small_recording(dir, "r.db"));
  ASSERT_TRUE(w.window);
  QMenu* file = test::menu(*w.window, "File");
  ASSERT_NE(file, nullptr);
  for (QAction* a : file->actions()) {
    if (a->isSeparator()) continue;
    EXPECT_FALSE(a->shortcut().isEmpty()) << a->text().toStdString();
  }
  QAction* quit = by_shortcut(file, QKeySequence(Qt::CTRL | Qt::Key_Q));
  ASSERT_NE(quit, nullptr);
  EXPECT_EQ(quit->text().remove('&'), "Quit");
}

TEST(WindowMenus, ThePictureOfTheWindowIsSavedAndCopied) {
  test::TempDir dir;
  auto w = test::open_window(small_recording(dir, "r.db"), 1200, 800);
  ASSERT_TRUE(w.window);
  QMenu* file = test::menu(*w.window, "File");
  ASSERT_NE(file, nullptr);
  EXPECT_NE(by_shortcut(file, QKeySequence::Save), nullptr);
  EXPECT_NE(by_shortcut(file, QKeySequence::Open), nullptr);

  const QString png = QString::fromStdString(dir.file("window.png"));
  QString error;
  ASSERT_TRUE(gui::save_window_picture(w.window.get(), png, &error)) << error.toStdString();
  const QImage saved(png);
  EXPECT_EQ(saved.size(), w.window->size());

  const QString nowhere = QString::fromStdString(dir.file("no/such/dir/window.png"));
  EXPECT_FALSE(gui::save_window_picture(w.window.get(), nowhere, &error));
  EXPECT_TRUE(error.startsWith(nowhere)) << error.toStdString();

  QAction* copy = by_shortcut(file, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
  ASSERT_NE(copy, nullptr);
  QApplication::clipboard()->clear();
  copy->trigger();
  EXPECT_EQ(QApplication::clipboard()->image().size(), w.window->size());
}

TEST(WindowSet, AnotherRecordingOpensInAWindowOfItsOwnThatGoesWhenClosed) {
  test::TempDir dir;
  auto w = test::open_window(small_recording(dir, "first.db"), 1000, 700);
  ASSERT_TRUE(w.window);
  gui::WindowSet set(w.window.get());
  emit w.window->openRequested(QString::fromStdString(small_recording(dir, "second.db")));
  ASSERT_EQ(set.openedCount(), 1u);
  gui::MainWindow* second = wait_for_window_of("second.db");
  ASSERT_NE(second, nullptr);
  ASSERT_NE(second, w.window.get());
  EXPECT_EQ(second->size(), w.window->size());
  ASSERT_TRUE(test::wait_for([&] { return second->settled(); }, "the second window to settle"));
  EXPECT_EQ(second->client()->status().events, w.window->client()->status().events);

  second->close();
  ASSERT_TRUE(test::wait_for([&] { return set.openedCount() == 0; }, "the closed window to go"));
  EXPECT_TRUE(w.window->isVisible()) << "the first window stays";
}

// A recording dropped on the window opens as File > Open Recording opens it.
TEST(WindowSet, ARecordingDroppedOnTheWindowOpens) {
  test::TempDir dir;
  auto w = test::open_window(small_recording(dir, "first.db"));
  ASSERT_TRUE(w.window);
  gui::WindowSet set(w.window.get());
  QMimeData data;
  data.setUrls({QUrl::fromLocalFile(QString::fromStdString(small_recording(dir, "dropped.db")))});
  const QPoint at(w.window->width() / 2, w.window->height() / 2);
  QDragEnterEvent enter(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w.window.get(), &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w.window.get(), &drop);
  EXPECT_EQ(set.openedCount(), 1u);
  EXPECT_NE(wait_for_window_of("dropped.db"), nullptr);
}

// Not a recording, and no file at all: a message over the window that asked names the file
// and says why; no window opens, and none is left behind.
TEST(WindowSet, AFileThatCannotBeReadIsNamedInAMessageAndOpensNothing) {
  test::TempDir dir;
  auto w = test::open_window(small_recording(dir, "first.db"));
  ASSERT_TRUE(w.window);
  gui::WindowSet set(w.window.get());
  const std::string notes = dir.file("notes.txt");
  std::ofstream(notes) << "not a recording\n";
  for (const std::string& path : {notes, dir.file("missing.db")}) {
    set.open(QString::fromStdString(path), w.window.get());
    QMessageBox* box = nullptr;
    ASSERT_TRUE(test::wait_for(
        [&] { return (box = w.window->findChild<QMessageBox*>()) != nullptr && box->isVisible(); },
        "the message"));
    EXPECT_TRUE(box->text().contains(QString::fromStdString(path))) << box->text().toStdString();
    ASSERT_TRUE(test::wait_for([&] { return set.openedCount() == 0; }, "nothing left open"));
    for (QWidget* top : QApplication::topLevelWidgets()) {
      auto* m = qobject_cast<gui::MainWindow*>(top);
      EXPECT_TRUE(m == nullptr || m == w.window.get() || !m->isVisible()) << path;
    }
    delete box;
  }
}

}  // namespace
}  // namespace memtap
