// Whether the live window moves its views to the newest data at this tick of its refresh
// timer, or leaves the CPU to the program (docs/design-notes.md, monitor/gui "Pacing").
//
// Each move makes every visible view ask again and draw, which is most of what the window's
// thread does while a program runs. Behind a program whose own threads fill every core, the
// thread keeps to the share a thread serving only the window keeps to
// (CpuShare::view_permille): a tick that finds it over its share is skipped, but never for
// longer than kLongestWaitNs, so the curves still follow the run. What the user does (zoom,
// hover, a click) is answered at once either way: only the timer's moves wait. Plain state
// on the window's thread; the clocks are given, so that tests drive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "common/cpu_share.h"

namespace memtap::gui {

class RefreshPacer {
 public:
  // The longest the views are left behind the data while the program fills the cores.
  static constexpr int64_t kLongestWaitNs = 1'000'000'000;

  // No share (a recording opened from a file): every tick moves the views.
  explicit RefreshPacer(std::shared_ptr<const CpuShare> share) : share_(std::move(share)) {
    if (share_) pacer_.emplace(share_.get(), CpuPacer::Follows::kView);
  }

  // At a tick, `wall_ns` on the monotonic clock and `cpu_ns` of the window thread's CPU
  // time: whether the views move now. False while the thread owes CPU to the program, until
  // kLongestWaitNs after the last move.
  bool due(uint64_t wall_ns, uint64_t cpu_ns) {
    ++ticks_;
    if (!pacer_) return true;
    const int64_t owed = pacer_->owed_wait_ns(wall_ns, cpu_ns, pacer_->busy_probe());
    if (owed > 0 && last_move_ns_ != 0 && wall_ns - last_move_ns_ < uint64_t(kLongestWaitNs)) {
      ++skipped_;
      return false;
    }
    last_move_ns_ = wall_ns;
    return true;
  }

  // The ticks so far, and those skipped (the window's --stats).
  uint64_t ticks() const { return ticks_; }
  uint64_t skipped() const { return skipped_; }

 private:
  std::shared_ptr<const CpuShare> share_;
  std::optional<CpuPacer> pacer_;
  uint64_t last_move_ns_ = 0;
  uint64_t ticks_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace memtap::gui
