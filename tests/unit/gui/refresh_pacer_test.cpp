// RefreshPacer (monitor/gui/refresh_pacer.h): behind a program whose threads fill the cores,
// the live window moves its views only as often as its share of a core pays for, and at
// least once a second; otherwise at every tick. The clocks are given; the last test drives a
// real window whose source says the program fills the cores.
#include "monitor/gui/refresh_pacer.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/unit/common/burn_cpu.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

constexpr uint64_t kMs = 1'000'000;

// The share of a program that fills the cores: limited, the cores busy, the window's threads
// at `view_permille` (the recording's at half a core, which they must not follow).
std::shared_ptr<CpuShare> program_fills_the_cores(uint32_t view_permille) {
  auto share = std::make_shared<CpuShare>();
  share->limited = true;
  share->permille = CpuShare::kMaxPermille;
  share->view_permille = view_permille;
  share->cores_busy = [] { return true; };
  return share;
}

TEST(RefreshPacer, WithoutAShareEveryTickMoves) {
  gui::RefreshPacer pacer(nullptr);
  uint64_t cpu = 0;
  for (uint64_t t = 1000 * kMs; t < 3000 * kMs; t += 100 * kMs) {
    EXPECT_TRUE(pacer.due(t, cpu));
    cpu += 100 * kMs;  // however much each costs
  }
  EXPECT_EQ(pacer.skipped(), 0u);
}

// Each move costs 20 ms of the window thread's CPU and the window keeps to a tenth of a core:
// after the burst a move every other tick (10 ms earned a tick), and the thread's CPU over the
// run stays within its share.
TEST(RefreshPacer, BehindAProgramThatFillsTheCoresTheMovesKeepToTheWindowsShare) {
  gui::RefreshPacer pacer(program_fills_the_cores(100));
  uint64_t cpu = 0;
  int moves = 0, ticks = 0;
  const uint64_t start = 1000 * kMs, end = start + 10'000 * kMs;
  for (uint64_t t = start; t < end; t += 100 * kMs, ++ticks) {
    if (!pacer.due(t, cpu)) continue;
    ++moves;
    cpu += 20 * kMs;
  }
  EXPECT_EQ(ticks, 100);
  EXPECT_EQ(pacer.skipped(), uint64_t(ticks - moves));
  // A tenth of the 10 s, the 20 ms burst, and the move that overdrew.
  EXPECT_LE(cpu, 1000 * kMs + 20 * kMs + 20 * kMs);
  EXPECT_GE(moves, 49);  // and no fewer than the share pays for
}

// A move that costs far more than the share: the views still move once a second.
TEST(RefreshPacer, TheViewsAreNeverLeftMoreThanASecondBehind) {
  gui::RefreshPacer pacer(program_fills_the_cores(CpuShare::kMinPermille));
  uint64_t cpu = 0, last_move = 0;
  for (uint64_t t = 1000 * kMs; t < 6000 * kMs; t += 100 * kMs) {
    if (!pacer.due(t, cpu)) continue;
    if (last_move != 0) {
      EXPECT_EQ(t - last_move, 1000 * kMs) << "at " << t / kMs << " ms";
    }
    last_move = t;
    cpu += 500 * kMs;
  }
  EXPECT_EQ(pacer.skipped(), 45u);  // 9 ticks after each of the 5 moves
}

TEST(RefreshPacer, OnceTheProgramHasEndedOrBesideAnIdleCoreEveryTickMoves) {
  auto share = program_fills_the_cores(CpuShare::kMinPermille);
  share->limited = false;
  gui::RefreshPacer ended(share);
  auto idle = program_fills_the_cores(CpuShare::kMinPermille);
  idle->cores_busy = [] { return false; };
  gui::RefreshPacer beside_idle(idle);
  uint64_t cpu = 0;
  for (uint64_t t = 1000 * kMs; t < 3000 * kMs; t += 100 * kMs) {
    EXPECT_TRUE(ended.due(t, cpu));
    EXPECT_TRUE(beside_idle.due(t, cpu));
    cpu += 100 * kMs;
  }
}

// A recording opened from a file, said by its source to be live behind a program that fills
// the cores at a thousandth of a core for the window.
class ProgramFillsTheCoresSource final : public viewdata::DataSource {
 public:
  ProgramFillsTheCoresSource(std::unique_ptr<viewdata::DataSource> inner,
                             std::shared_ptr<CpuShare> share)
      : inner_(std::move(inner)), share_(std::move(share)) {}
  void post(viewdata::EngineQuery query) override { inner_->post(std::move(query)); }
  viewdata::BlockIndex& blocks() override { return inner_->blocks(); }
  viewdata::SourceStatus status() const override { return inner_->status(); }
  std::string database_path() const override { return inner_->database_path(); }
  std::string event_table() const override { return inner_->event_table(); }
  std::shared_ptr<const CpuShare> cpu_share() const override { return share_; }

 private:
  std::unique_ptr<viewdata::DataSource> inner_;
  std::shared_ptr<CpuShare> share_;
};

// The window's timer asks the pacer: its thread, having used more than its share, skips the
// ticks that follow. Without the pacer every tick refreshes and none is skipped.
TEST(RefreshPacer, TheWindowSkipsItsTimersRefreshesWhileItsThreadOwesTheProgram) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string path = dir.file("r.db");
  b.write(path);
  std::string error;
  auto inner = viewdata::open_recording(path, &error);
  ASSERT_NE(inner, nullptr) << error;
  auto share = program_fills_the_cores(1);
  ProgramFillsTheCoresSource source(std::move(inner), share);
  gui::MainWindow window(&source);
  window.resize(1200, 800);
  window.show();
  // The pacer's accounting starts at the timer's first tick.
  ASSERT_TRUE(test::wait_for([&] { return window.refreshTicks() >= 1; }, "the first tick"));
  // 100 ms of CPU, 80 ms past the burst: 80 s to pay back at a thousandth of a core.
  const uint64_t before = window.refreshesSkipped();
  test::burn_cpu(std::chrono::milliseconds(100));
  ASSERT_TRUE(test::wait_for([&] { return window.refreshesSkipped() >= before + 2; },
                             "the window's timer to skip its refreshes"));
  // With the program ended the views move at every tick.
  share->limited = false;
  const uint64_t skipped = window.refreshesSkipped();
  ASSERT_TRUE(test::wait_for([&] { return window.settled(); }, "the window to settle"));
  EXPECT_EQ(window.refreshesSkipped(), skipped);
}

}  // namespace
}  // namespace memtap
