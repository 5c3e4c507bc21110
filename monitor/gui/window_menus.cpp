// See window_menus.h.
#include "monitor/gui/window_menus.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QImageWriter>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QPixmap>
#include <QTabWidget>

#include "monitor/gui/main_window.h"

namespace memtap::gui {

namespace {

// The recording this window shows ("" while it has no file yet), for the dialogs to start
// beside it.
QFileInfo recording_file(MainWindow* window) {
  return QFileInfo(QString::fromStdString(window->client()->source().recording_path()));
}

// The desktop's keys for `key`, or `fallback` where the platform theme has none: without a
// desktop (a bare X server, or a remote display) Qt binds Quit to nothing at all.
QList<QKeySequence> keys_or(QKeySequence::StandardKey key, const QKeySequence& fallback) {
  QList<QKeySequence> keys = QKeySequence::keyBindings(key);
  if (keys.isEmpty()) keys << fallback;
  return keys;
}

void add_file_menu(MainWindow* window) {
  QMenu* file = window->menuBar()->addMenu(QObject::tr("&File"));
  QAction* open = file->addAction(QObject::tr("&Open Recording..."));
  open->setShortcut(QKeySequence::Open);
  open->setToolTip(
      QObject::tr("Open a recording (memtap's or msMemScope's .db, their .csv, "
                  "CANN's profiler .csv, a PyTorch snapshot) in another window"));
  QObject::connect(open, &QAction::triggered, window, [window] {
    const QFileInfo shown = recording_file(window);
    const QString path = QFileDialog::getOpenFileName(
        window, QObject::tr("Open a recording"),
        shown.fileName().isEmpty() ? QString() : shown.absolutePath(),
        QObject::tr("Recordings (*.db *.csv *.pickle *.pkl);;All files (*)"));
    if (!path.isEmpty()) emit window->openRequested(path);
  });
  file->addSeparator();
  QAction* save = file->addAction(QObject::tr("&Save Picture..."));
  save->setShortcut(QKeySequence::Save);
  QObject::connect(save, &QAction::triggered, window, [window] {
    // Beside the recording, named after it: leak.db's picture is leak.png.
    const QFileInfo shown = recording_file(window);
    const QString suggested = shown.fileName().isEmpty()
                                  ? QStringLiteral("memtap.png")
                                  : shown.absolutePath() + '/' + shown.completeBaseName() + ".png";
    const QString path =
        QFileDialog::getSaveFileName(window, QObject::tr("Save a picture of the window"), suggested,
                                     QObject::tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    QString error;
    if (!save_window_picture(window, path, &error)) {
      QMessageBox::warning(window, QObject::tr("memtap"), error);
    }
  });
  QAction* copy = file->addAction(QObject::tr("&Copy Picture"));
  copy->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
  QObject::connect(copy, &QAction::triggered, window, [window] { copy_window_picture(window); });
  file->addSeparator();
  QAction* close = file->addAction(QObject::tr("&Close Window"));
  close->setShortcut(QKeySequence::Close);
  QObject::connect(close, &QAction::triggered, window, &QWidget::close);
  QAction* quit = file->addAction(QObject::tr("&Quit"));
  quit->setShortcuts(keys_or(QKeySequence::Quit, QKeySequence(Qt::CTRL | Qt::Key_Q)));
  QObject::connect(quit, &QAction::triggered, qApp, &QApplication::closeAllWindows);
}

void add_view_menu(MainWindow* window) {
  QMenu* view = window->menuBar()->addMenu(QObject::tr("&View"));
  // The tabs below the curves, by their own names and in their order, Ctrl+1 onwards; the
  // curves themselves are always shown.
  QTabWidget* tabs = window->tabs();
  for (int i = 0; i < tabs->count(); ++i) {
    QAction* action = view->addAction(tabs->tabText(i));
    if (i < 9) action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    QObject::connect(action, &QAction::triggered, tabs, [tabs, i] { tabs->setCurrentIndex(i); });
  }
  view->addSeparator();
  // The steps, marks and OOMs over the curves: on, unless a dense run's lines are in the way.
  QAction* marks = view->addAction(QObject::tr("&Steps, Marks and Ranges"));
  marks->setCheckable(true);
  marks->setChecked(window->state()->stepMarks());
  QObject::connect(marks, &QAction::toggled, window->state(), &ViewState::setStepMarks);
  // Hidden, it leaves its width to the curves and the views.
  QAction* findings = window->findingsDock()->toggleViewAction();
  findings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  view->addAction(findings);
}

void add_help_menu(MainWindow* window) {
  QMenu* help = window->menuBar()->addMenu(QObject::tr("&Help"));
  QAction* about = help->addAction(QObject::tr("&About memtap"));
  QObject::connect(about, &QAction::triggered, window, [window] {
    QMessageBox::about(
        window, QObject::tr("About memtap"),
        QObject::tr("<p><b>memtap %1</b>: a live memory profiler for training runs.</p>"
                    "<p>This window shows %2.</p>"
                    "<p>Recordings are SQLite files in the msMemScope DB format, which "
                    "msMemScope and MindStudio Insight open too; <tt>memtap report</tt> "
                    "summarises one on the command line.</p>")
            .arg(QStringLiteral(MEMTAP_VERSION),
                 QString::fromStdString(window->client()->status().title).toHtmlEscaped()));
  });
  help->addAction(QObject::tr("About &Qt"), qApp, &QApplication::aboutQt);
}

}  // namespace

void add_window_menus(MainWindow* window) {
  add_file_menu(window);
  add_view_menu(window);
  add_help_menu(window);
}

bool save_window_picture(MainWindow* window, const QString& path, QString* error) {
  const QPixmap picture = window->grab();
  QImageWriter writer(path, "png");
  if (picture.isNull() || !writer.write(picture.toImage())) {
    *error =
        QObject::tr("%1: cannot write the picture (%2)")
            .arg(path, picture.isNull() ? QObject::tr("nothing to draw") : writer.errorString());
    return false;
  }
  return true;
}

void copy_window_picture(MainWindow* window) {
  QApplication::clipboard()->setPixmap(window->grab());
}

}  // namespace memtap::gui
