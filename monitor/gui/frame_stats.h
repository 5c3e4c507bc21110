// How smoothly the window draws: the time each frame's paint took (a frame is one repaint
// of the window, Qt's UpdateRequest on the top-level widget, which paints every view that
// changed) and how many frames each second had. `--stats` prints the histogram at exit; the
// live benchmark reads it (tests/bench/run_gui.sh).
#pragma once

#include <QApplication>
#include <QElapsedTimer>
#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace memtap::gui {

class FrameStats {
 public:
  // Upper bounds of the histogram's buckets, in ms; the last bucket is everything above.
  static constexpr std::array<double, 8> kBucketMs = {2, 5, 10, 16, 25, 33, 50, 100};

  void add_frame(double ms, int64_t now_ms);
  // New data reached the window at now_ms (the clock add_frame's times come from): the
  // redraw rate that matters is the one while data arrives, not after a run has ended.
  void note_data(int64_t now_ms);
  uint64_t frames() const { return frames_; }
  uint64_t frames_over_50ms() const { return over_50_; }
  double max_ms() const { return max_ms_; }
  double percentile_ms(double p) const;  // 0..100, from the kept samples
  // Frames in each whole second the window was drawing (seconds without any frame between
  // two that had some count as 0).
  const std::vector<uint32_t>& per_second() const { return per_second_; }
  void print(FILE* out) const;

 private:
  std::array<uint64_t, kBucketMs.size() + 1> buckets_{};
  uint64_t frames_ = 0;
  uint64_t over_50_ = 0;
  double max_ms_ = 0;
  std::vector<float> samples_;  // every frame's time (a frame is a few bytes; hours fit)
  std::vector<uint32_t> per_second_;
  std::vector<bool> data_second_;  // per_second_'s seconds in which data arrived
  int64_t first_second_ = -1;
  size_t slot(int64_t now_ms);  // per_second_'s index for now_ms, grown to hold it
};

// The window's QApplication: times every frame into stats().
class MemtapApplication : public QApplication {
 public:
  MemtapApplication(int& argc, char** argv);
  bool notify(QObject* receiver, QEvent* event) override;
  FrameStats& stats() { return stats_; }
  int64_t now_ms() const { return clock_.elapsed(); }  // add_frame's clock

 private:
  FrameStats stats_;
  QElapsedTimer clock_;
  bool painted_ = false;  // a widget painted since the window's UpdateRequest began
};

}  // namespace memtap::gui
