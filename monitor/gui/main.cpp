// memtap-gui: the window. Started by `memtap monitor ...` and `memtap run --gui ...`
// (monitor/cli/window_options.h has the command line, which memtap checked). It records
// live sessions exactly as the headless commands do (viewdata/live_source.h), so closing
// it never loses the recording.
#include <unistd.h>

#include <QElapsedTimer>
#include <QPixmap>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "monitor/cli/window_options.h"
#include "monitor/gui/curves_panel.h"
#include "monitor/gui/frame_stats.h"
#include "monitor/gui/main_window.h"
#include "monitor/gui/window_set.h"
#include "monitor/live/live_support.h"
#include "monitor/viewdata/live_source.h"

using namespace memtap;
using namespace memtap::gui;

namespace {

const char* prefix(const WindowCommand& o) {
  return o.mode == WindowMode::kRun ? "memtap run" : "memtap monitor";
}

bool save_screenshot(MainWindow& window, const WindowCommand& o) {
  const QPixmap picture = window.grab();
  if (picture.isNull() || !picture.save(QString::fromStdString(o.window.screenshot), "PNG")) {
    fprintf(stderr, "%s: cannot write the screenshot to %s\n", prefix(o),
            o.window.screenshot.c_str());
    return false;
  }
  fprintf(stderr, "%s: screenshot written to %s (%dx%d)\n", prefix(o), o.window.screenshot.c_str(),
          picture.width(), picture.height());
  return true;
}

// What --device and --at asked for that the recording lacks, a line each on stderr; true
// if anything was missing. Asked once the window has settled: a replay's devices and end
// are known then, and a window shown or a picture taken without them would silently show
// another device or the last instant.
bool say_what_is_missing(const MainWindow& window, const WindowCommand& o) {
  const QStringList missing = window.missingRequests(QString::fromStdString(o.file));
  for (const QString& line : missing) fprintf(stderr, "%s: %s\n", prefix(o), qPrintable(line));
  return !missing.isEmpty();
}

}  // namespace

int main(int argc, char** argv) {
  QElapsedTimer since_launch;  // for --stats: when the first curves and all the data came
  since_launch.start();
  WindowCommand o;
  std::string error;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (const int code = parse_window_command(args, &o); code >= 0) return code;
  const WindowOptions& w = o.window;
  const bool shot = !w.screenshot.empty();
  // A screenshot is rendered offscreen: no display needed, and no window pops up.
  if (shot) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  if (!display_available()) {
    fprintf(stderr,
            "%s: no display (DISPLAY and WAYLAND_DISPLAY are unset); --screenshot FILE "
            "renders the window without one\n",
            prefix(o));
    return 2;
  }
  install_stop_signals();

  int exit_code = 2;
  std::unique_ptr<viewdata::DataSource> source;
  if (o.mode == WindowMode::kReplay) {
    source = viewdata::open_recording(o.file, &error);
  } else {
    viewdata::LiveOptions live;
    live.listen = o.listen;
    live.out = o.out;
    live.compact = o.compact;
    live.security = o.security;
    live.limits = o.limits;
    live.run = o.run;
    source = viewdata::start_live(live, &error, &exit_code);
  }
  if (!source) {
    fprintf(stderr, "%s: %s\n", prefix(o), error.c_str());
    return o.mode == WindowMode::kReplay ? 2 : exit_code;
  }
  if (o.mode == WindowMode::kListen) {
    fprintf(stderr, "memtap monitor: listening on %s (close the window or Ctrl-C to stop)\n",
            o.listen.c_str());
  }

  MemtapApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("memtap"));
  bool shot_ok = true;
  bool missing = false;  // --device or --at asked for what the recording lacks (--screenshot)
  {
    MainWindow window(source.get());
    // File > Open Recording's windows. Closing this one, memtap's, ends the process and
    // them with it (a live run's recording ends with its window, as before).
    WindowSet others(&window);
    QObject::connect(&window, &MainWindow::closed, &app, &QApplication::closeAllWindows,
                     Qt::QueuedConnection);
    window.resize(w.width, w.height);
    window.showView(w.view);
    if (w.device_given) window.preferDevice(w.device);
    window.show();

    qint64 first_curves_ms = -1, loaded_ms = -1;
    QObject::connect(window.curves(), &CurvesPanel::drawn, &window, [&](int lines) {
      if (lines > 0 && first_curves_ms < 0) first_curves_ms = since_launch.elapsed();
    });
    QObject::connect(&window, &MainWindow::sourceDone, &window,
                     [&] { loaded_ms = since_launch.elapsed(); });
    if (window.sourceFinished()) loaded_ms = since_launch.elapsed();  // before the connect
    // New data, not the last dataAdvanced that says the source has finished: counted from
    // there, a live run's "while data arrived" took in the seconds after the program
    // ended in which the recording was still written and nothing new came (no redraw due).
    QObject::connect(window.state(), &ViewState::dataAdvanced, &window, [&] {
      if (!window.sourceFinished()) app.stats().note_data(app.now_ms());
    });

    // --at and --range, once the data is in.
    if (w.at_peak) window.cursorOnceLoaded(true, 0);
    if (w.at_ns >= 0) window.cursorOnceLoaded(false, w.at_ns);
    if (w.range_from_ns >= 0) window.rangeOnceLoaded(w.range_from_ns, w.range_to_ns);

    // Ctrl-C: --listen ends the recording and the window; --run hands it to the program
    // (ProgramRun forwards it), whose end the window then shows.
    QTimer stop_poll;
    QObject::connect(&stop_poll, &QTimer::timeout, [&] {
      if (interrupted() && o.mode != WindowMode::kRun) {
        source->stop();
        if (source->status().loaded) app.quit();
      }
    });
    stop_poll.start(100);

    // --device or --at asked for what the recording lacks: an open window says so and stays
    // (a --screenshot run says so in the shooter, and takes no picture).
    QTimer checker;
    QObject::connect(&checker, &QTimer::timeout, [&] {
      if (!window.settled()) return;
      checker.stop();
      say_what_is_missing(window, o);
    });
    if (!shot && o.mode == WindowMode::kReplay) checker.start(100);

    QTimer shooter;
    QElapsedTimer since_start, due_since;
    since_start.start();
    bool taken = false;
    QObject::connect(&shooter, &QTimer::timeout, [&] {
      if (!taken) {
        const bool loaded = source->status().loaded;
        if (o.mode == WindowMode::kReplay) {
          // Once everything is loaded, indexed and drawn.
          if (!window.settled()) return;
          if (say_what_is_missing(window, o)) {
            missing = true;  // no picture of another device or instant than asked for
            taken = true;
            app.quit();
            return;
          }
        } else {
          // Live: --screenshot-after into the run (or its end, if it ends sooner), with the
          // answers to the last refresh drawn (waiting for them at most a second).
          if (since_start.elapsed() < w.screenshot_after_ms && !loaded) return;
          if (!due_since.isValid()) due_since.start();
          const bool ready = loaded ? window.settled() : window.client()->pending() == 0;
          if (!ready && due_since.elapsed() < (loaded ? 5000 : 1000)) return;
        }
        shot_ok = save_screenshot(window, o);
        taken = true;
      }
      // A live run goes on to its end after the picture, without the window.
      if (o.mode == WindowMode::kReplay || source->status().loaded) app.quit();
    });
    if (shot) shooter.start(50);
    app.exec();
    if (w.stats) {
      app.stats().print(stderr);
      fprintf(stderr, "memtap-gui: refreshes left to the program: %llu of %llu\n",
              (unsigned long long)window.refreshesSkipped(),
              (unsigned long long)window.refreshTicks());
      // A live window closes (or takes its picture) before the recording is written.
      char loaded[32] = "not yet (live)";
      if (loaded_ms >= 0) snprintf(loaded, sizeof loaded, "%.3f s", double(loaded_ms) / 1000);
      fprintf(stderr, "memtap-gui: first curves drawn %.3f s after launch, everything loaded %s\n",
              double(first_curves_ms) / 1000, loaded);
    }
  }
  if (o.mode == WindowMode::kRun && !source->status().loaded) {
    std::string command;
    for (const std::string& a : o.run.command) command += (command.empty() ? "" : " ") + a;
    fprintf(stderr,
            "memtap run: the window was closed; recording goes on until '%s' ends (Ctrl-C to "
            "stop it)\n",
            command.c_str());
  }
  // --listen: the recording ends with the window. --run: the program goes on to its end.
  source->stop();
  while (o.mode != WindowMode::kReplay && !source->status().loaded) usleep(20000);
  const viewdata::SourceStatus status = source->status();
  source.reset();
  if (!status.error.empty() && o.mode == WindowMode::kReplay) {
    fprintf(stderr, "memtap monitor: %s\n", status.error.c_str());
    return 1;
  }
  if (missing) return 2;
  if (!shot_ok) return 1;
  if (o.mode == WindowMode::kRun) return status.exit_code >= 0 ? status.exit_code : 0;
  return 0;
}
