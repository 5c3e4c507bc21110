// memtap_bench_gui FILE [ROUNDS]: the window over a recording, offscreen, as a user works it.
// Prints when the first curves were drawn and when everything was loaded (ms since start),
// then for each kind of interaction (zoom in, scroll, select a range elsewhere, zoom out)
// the time from the change to the redrawn window (the answer drawn and the frame painted),
// median and max over ROUNDS (default 20), and when the exact points from the recording
// replaced the envelope (zooms into the past). Ends with the process' peak RSS. Passes or
// fails nothing (tests/bench/run_gui.sh reads its RESULT lines).
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "monitor/gui/curves_panel.h"
#include "monitor/gui/main_window.h"
#include "monitor/viewdata/data_source.h"

using namespace memtap;

namespace {

constexpr int kExactRounds = 2;

// A /proc/self/status figure in KB (VmHWM: the peak resident set; RssAnon: the process' own
// memory now, without the recording's pages that SQLite maps and the kernel can drop).
long status_kb(const char* field) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  const size_t n = strlen(field);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      kb = atol(line + n + 1);
      break;
    }
  }
  fclose(f);
  return kb;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: memtap_bench_gui FILE [ROUNDS]\n");
    return 2;
  }
  setenv("QT_QPA_PLATFORM", "offscreen", 1);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  QElapsedTimer clock;
  clock.start();
  QApplication app(argc, argv);
  const int rounds = argc > 2 ? atoi(argv[2]) : 20;
  std::string error;
  auto source = viewdata::open_recording(argv[1], &error);
  if (!source) {
    fprintf(stderr, "memtap_bench_gui: %s\n", error.c_str());
    return 1;
  }
  gui::MainWindow window(source.get());
  window.resize(1600, 1000);
  window.show();
  qint64 first_ms = -1, loaded_ms = -1;
  int drawn = 0;
  QObject::connect(window.curves(), &gui::CurvesPanel::drawn, [&](int lines) {
    ++drawn;
    if (lines > 0 && first_ms < 0) first_ms = clock.elapsed();
  });
  QObject::connect(&window, &gui::MainWindow::sourceDone, [&] { loaded_ms = clock.elapsed(); });
  auto spin = [&](auto done, int limit_ms) {
    QElapsedTimer t;
    t.start();
    while (!done() && t.elapsed() < limit_ms) QApplication::processEvents(QEventLoop::AllEvents, 5);
    return done();
  };
  spin([&] { return window.settled(); }, 600000);
  printf("first curves drawn %.3f s after start, everything loaded %.3f s, settled %.3f s\n",
         double(first_ms) / 1000, double(loaded_ms) / 1000, double(clock.elapsed()) / 1000);

  gui::ViewState* state = window.state();
  const int64_t origin = state->origin(), end = state->sessionEnd();
  const int64_t span = end - origin;
  struct Kind {
    const char* name;
    std::vector<double> ms, exact_ms;
  };
  std::vector<Kind> kinds = {
      {"zoom_in", {}, {}}, {"scroll", {}, {}}, {"select", {}, {}}, {"zoom_out", {}, {}}};
  const gui::CurvesChart* chart = window.curves()->chart();
  for (int r = 0; r < rounds; ++r) {
    // A different place in the session each round, so no answer repeats the last.
    const int64_t centre =
        origin + span / 8 + int64_t(double(span) * 0.75 * r / std::max(1, rounds - 1));
    const int64_t t0s[] = {centre - span / 40, centre - span / 40 + span / 80, centre + span / 100,
                           origin};
    const int64_t t1s[] = {centre + span / 40, centre + span / 40 + span / 80, centre + span / 30,
                           end};
    for (size_t k = 0; k < kinds.size(); ++k) {
      QElapsedTimer t;
      t.start();
      const int before = drawn;
      state->setRange(t0s[k], t1s[k]);
      spin([&] { return drawn > before && chart->data().t0_ns == state->t0(); }, 60000);
      QApplication::processEvents();  // the frame that shows it
      kinds[k].ms.push_back(double(t.nsecsElapsed()) / 1e6);
      // Zooms into the past are then refined from the recording: a replay of the process up
      // to the range's end, seconds on a large file, so timed in the first rounds only.
      if (r < kExactRounds && viewdata::needs_detail(chart->data())) {
        spin([&] { return !viewdata::needs_detail(chart->data()); }, 60000);
        kinds[k].exact_ms.push_back(double(t.nsecsElapsed()) / 1e6);
      }
    }
  }
  for (const Kind& k : kinds) {
    printf("%-8s redraw: median %6.1f ms, max %6.1f ms", k.name, median(k.ms),
           *std::max_element(k.ms.begin(), k.ms.end()));
    if (!k.exact_ms.empty()) {
      printf("; every point from the recording: median %.0f ms (%zu rounds)", median(k.exact_ms),
             k.exact_ms.size());
    }
    printf("\n");
  }
  std::vector<double> all;
  for (const Kind& k : kinds) all.insert(all.end(), k.ms.begin(), k.ms.end());
  printf(
      "peak RSS %ld KB (the recording's mapped pages included); own memory now (RssAnon) %ld KB\n",
      status_kb("VmHWM"), status_kb("RssAnon"));
  printf("RESULT gui_first_curves_s=%.3f\nRESULT gui_loaded_s=%.3f\n", double(first_ms) / 1000,
         double(loaded_ms) / 1000);
  printf("RESULT gui_redraw_median_ms=%.1f\nRESULT gui_redraw_max_ms=%.1f\n", median(all),
         *std::max_element(all.begin(), all.end()));
  printf("RESULT gui_anon_kb=%ld\n", status_kb("RssAnon"));
  return 0;
}
