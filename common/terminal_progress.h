// A progress line on the user's terminal for long work with nothing else to say: finishing a
// recording, reading a large file.
//
// One plain-text line on stderr, redrawn in place with '\r' at most ten times a second and
// cleared at the end: what is being done, how far (done of total with its unit, a
// percentage), the rate and the time left once a total is known. It is drawn only for a
// person: when stderr is a terminal whose TERM is not "dumb", and not while
// MEMTAP_PROGRESS_MS asks for the machine-readable progress lines (live_support.h), which
// are the scripts' form. Pipes and CI logs get nothing, not even a '\r'.
//
// The work does not call into the display: a thread of the display asks `sample` how far
// it got (reading counters the work keeps), so the work's own threads never wait on a
// terminal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace memtap {

struct ProgressSample {
  std::string what;    // "writing the recording", "reading x.db"; the rate restarts with it
  uint64_t done = 0;   // in `unit`s
  uint64_t total = 0;  // 0: not known (then neither percentage, rate nor time left)
  const char* unit = "rows";
};

// The line for `s` (without "\r"), at most `width` characters: `rate_per_s` <= 0 leaves out
// the rate and the time left, `elapsed_s` is said where no total is known.
// "memtap: writing the recording: 1.2M of 1.8M rows (67%), 512K rows/s, 2 s left".
std::string progress_text(const ProgressSample& s, double rate_per_s, double elapsed_s,
                          size_t width);

// Whether a progress line may be drawn on `fd`: a terminal, TERM not "dumb", and
// MEMTAP_PROGRESS_MS not asking for the machine-readable lines.
bool progress_line_wanted(int fd);

class TerminalProgress {
 public:
  using Sampler = std::function<ProgressSample()>;
  // Starts drawing on stderr (after a short delay, so quick work shows nothing), or nullptr
  // where progress_line_wanted(2) says no (or no thread can be had). `sample` is called
  // from the display's thread.
  static std::unique_ptr<TerminalProgress> start(Sampler sample);
  // Stops drawing and clears the line, leaving the cursor where the line began.
  ~TerminalProgress();
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

 private:
  explicit TerminalProgress(Sampler sample) : sample_(std::move(sample)) {}
  void run();
  void draw(const std::string& text);

  Sampler sample_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  size_t drawn_ = 0;   // characters on the line now (the display's thread only)
  std::thread thread_;
};

}  // namespace memtap
