// See window_set.h.
#include "monitor/gui/window_set.h"

#include <QMessageBox>
#include <algorithm>
#include <memory>
#include <string>

#include "monitor/gui/main_window.h"

namespace memtap::gui {

WindowSet::WindowSet(MainWindow* first) {
  watch(first);
}

WindowSet::~WindowSet() = default;

void WindowSet::watch(MainWindow* window) {
  connect(window, &MainWindow::openRequested, this,
          [this, window](const QString& path) { open(path, window); });
}

void WindowSet::open(const QString& path, MainWindow* asking) {
  std::string why;
  std::unique_ptr<viewdata::DataSource> source = viewdata::open_recording(path.toStdString(), &why);
  if (!source) {
    cannotOpen(QString::fromStdString(why), asking);
    return;
  }
  Opened opened;
  opened.window = std::make_unique<MainWindow>(source.get());
  opened.source = std::move(source);
  MainWindow* window = opened.window.get();
  window->resize(asking->size());
  watch(window);
  // Shown with its first data, or once loaded without an error; a file that gave nothing
  // but an error is said over the window that asked for it. Asked at once as well: a small
  // file is loaded by the time the window is made, and its signals came before these.
  auto given_up = std::make_shared<bool>(false);
  auto decide = [this, window, asking, given_up] {
    if (*given_up || window->isVisible()) return;
    const viewdata::SourceStatus status = window->client()->status();
    if (window->sourceFinished() && status.events == 0 && !status.error.empty()) {
      *given_up = true;
      cannotOpen(QString::fromStdString(status.error), asking);
      forget(window);
    } else if (status.events != 0 || window->sourceFinished()) {
      window->show();
    }
  };
  connect(window->state(), &ViewState::dataAdvanced, this, decide);
  connect(window, &MainWindow::sourceDone, this, decide);
  connect(window, &MainWindow::closed, this, [this, window] { forget(window); });
  opened_.push_back(std::move(opened));
  decide();
}

void WindowSet::cannotOpen(const QString& message, MainWindow* asking) {
  // Not modal: the window that asked goes on drawing (a live run's too).
  auto* box = new QMessageBox(QMessageBox::Warning, tr("memtap"), message, QMessageBox::Ok, asking);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void WindowSet::forget(MainWindow* window) {
  QMetaObject::invokeMethod(
      this,
      [this, window] {
        std::erase_if(opened_, [window](const Opened& o) { return o.window.get() == window; });
      },
      Qt::QueuedConnection);
}

}  // namespace memtap::gui
