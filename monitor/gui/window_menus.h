// The window's menus: File (open another recording, save or copy a picture of the window,
// close, quit), View (the tabs by their names, Ctrl+1 onwards; the steps and marks over the
// curves shown or hidden; the findings shown or hidden, Ctrl+0) and Help (which memtap, and
// what this window shows).
//
// A picture is the whole window as it is on screen, as `memtap monitor --screenshot` takes
// it: what a bug report or a review needs, without a screenshot tool.
#pragma once

#include <QString>

namespace memtap::gui {

class MainWindow;

// Adds the menu bar to `window`. File > Open Recording emits MainWindow::openRequested.
void add_window_menus(MainWindow* window);

// The window's picture as a PNG at `path`; false with *error naming the file when it cannot
// be written.
bool save_window_picture(MainWindow* window, const QString& path, QString* error);
// The window's picture on the clipboard.
void copy_window_picture(MainWindow* window);

}  // namespace memtap::gui
