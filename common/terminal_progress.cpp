// See terminal_progress.h.
#include "common/terminal_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace memtap {
namespace {

using Clock = std::chrono::steady_clock;

// Quick work shows nothing: a line drawn and cleared within a blink is noise.
constexpr std::chrono::milliseconds kFirstDraw(250);
constexpr std::chrono::milliseconds kRedraw(100);
// A rate from less time than this jumps about too much to promise a time left.
constexpr double kMinRateSeconds = 0.5;

// 950, 12.3K, 512K, 1.83M, 18.3M, 1.20G: three significant digits are all a moving count
// can show. Each bound is where the rounding would carry into a fourth digit.
std::string count_text(uint64_t n) {
  if (n < 10000) return std::to_string(n);
  // {below, divisor, format}: the first whose bound the value is under.
  struct Step {
    double below;
    double divisor;
    const char* format;
  };
  static constexpr Step kSteps[] = {
      {99.95e3, 1e3, "%.1fK"}, {999.5e3, 1e3, "%.0fK"}, {9.995e6, 1e6, "%.2fM"},
      {99.95e6, 1e6, "%.1fM"}, {999.5e6, 1e6, "%.0fM"}, {9.995e9, 1e9, "%.2fG"},
  };
  const double v = double(n);
  char text[32];
  snprintf(text, sizeof text, "%.1fG", v / 1e9);
  for (const Step& step : kSteps) {
    if (v < step.below) {
      snprintf(text, sizeof text, step.format, v / step.divisor);
      break;
    }
  }
  return text;
}

std::string seconds_text(double s) {
  char text[32];
  if (s < 120) {
    snprintf(text, sizeof text, "%.0f s", s < 1 ? 1.0 : s);
  } else {
    snprintf(text, sizeof text, "%.0f min", s / 60);
  }
  return text;
}

size_t terminal_width(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col;
  return 80;
}

// All of `text` to stderr; a terminal may take it in parts.
void write_all(const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    const ssize_t n = write(STDERR_FILENO, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += size_t(n);
  }
}

}  // namespace

std::string progress_text(const ProgressSample& s, double rate_per_s, double elapsed_s,
                          size_t width) {
  std::string text = "memtap: " + s.what;
  if (s.total != 0) {
    const uint64_t done = s.done < s.total ? s.done : s.total;
    char percent[16];
    snprintf(percent, sizeof percent, " (%llu%%)",
             (unsigned long long)(double(done) * 100 / double(s.total)));
    text += ": " + count_text(done) + " of " + count_text(s.total) + " " + s.unit + percent;
    if (rate_per_s > 0) {
      text += ", " + count_text(uint64_t(rate_per_s)) + " " + s.unit + "/s";
      if (done < s.total)
        text += ", " + seconds_text(double(s.total - done) / rate_per_s) + " left";
    }
  } else {
    if (s.done != 0) text += ": " + count_text(s.done) + " " + s.unit;
    text += "... " + seconds_text(elapsed_s);
  }
  // The last column would wrap the line on some terminals, and a wrapped line cannot be
  // redrawn with '\r'.
  if (width > 0 && text.size() >= width) text.resize(width - 1);
  return text;
}

bool progress_line_wanted(int fd) {
  if (!isatty(fd)) return false;
  const char* term = getenv("TERM");
  if (term != nullptr && strcmp(term, "dumb") == 0) return false;
  // The machine-readable lines are on (live_support.h's progress_interval_ms): a second,
  // redrawn line would garble them.
  const char* lines = getenv("MEMTAP_PROGRESS_MS");
  return lines == nullptr || atoi(lines) <= 0;
}

std::unique_ptr<TerminalProgress> TerminalProgress::start(Sampler sample) {
  if (!progress_line_wanted(STDERR_FILENO)) return nullptr;
  std::unique_ptr<TerminalProgress> progress(new TerminalProgress(std::move(sample)));
  try {
    progress->thread_ = std::thread([p = progress.get()] { p->run(); });
  } catch (const std::system_error&) {
    return nullptr;  // the work goes on without its line
  }
  return progress;
}

TerminalProgress::~TerminalProgress() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void TerminalProgress::draw(const std::string& text) {
  // Spaces over what a longer line left behind: no escape sequences, which a terminal
  // without them would print.
  std::string line = "\r" + text;
  if (text.size() < drawn_) line += std::string(drawn_ - text.size(), ' ') + "\r" + text;
  write_all(line);
  drawn_ = text.size();
}

void TerminalProgress::run() {
  const Clock::time_point started = Clock::now();
  std::string phase;
  Clock::time_point phase_start = started;
  uint64_t phase_done = 0;
  std::unique_lock lock(mutex_);
  if (wake_.wait_for(lock, kFirstDraw, [this] { return stop_; })) return;
  do {
    lock.unlock();
    const ProgressSample s = sample_();
    const Clock::time_point now = Clock::now();
    if (s.what != phase) {
      phase = s.what;
      phase_start = now;
      phase_done = s.done;
    }
    const double in_phase = std::chrono::duration<double>(now - phase_start).count();
    const double rate = in_phase >= kMinRateSeconds && s.done > phase_done
                            ? double(s.done - phase_done) / in_phase
                            : 0;
    draw(progress_text(s, rate, in_phase, terminal_width(STDERR_FILENO)));
    lock.lock();
  } while (!wake_.wait_for(lock, kRedraw, [this] { return stop_; }));
  if (drawn_ != 0) write_all("\r" + std::string(drawn_, ' ') + "\r");
}

}  // namespace memtap
