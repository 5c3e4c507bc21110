// The steps, marks and OOMs the curves draw on their time axis, from a recording the real
// writer made: those of the range asked, the step under way at any instant, an OOM only on
// its own device, and a long range thinned to round numbers.
#include "monitor/viewdata/step_marks_data.h"

#include <gtest/gtest.h>

#include "monitor/viewdata/curves_data.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::CurvesData;
using viewdata::CurvesRequest;
using viewdata::StepMarksData;
using viewdata::TimeMark;

CurvesData curves(viewdata::DataSource& source, uint32_t pid, int32_t device, int64_t t0 = 0,
                  int64_t t1 = 0, size_t columns = 1000) {
  CurvesRequest r;
  r.pid = pid;
  r.device = device;
  r.t0_ns = t0;
  r.t1_ns = t1;
  r.max_points = columns;
  return test::engine_query(source,
                            [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
}

std::vector<uint64_t> numbers(const std::vector<TimeMark>& marks) {
  std::vector<uint64_t> out;
  for (const TimeMark& m : marks) out.push_back(m.number);
  return out;
}

TEST(StepMarksData, TheRangesStepsAndMarksAndTheStepUnderWay) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100);
  for (int step = 1; step <= 4; ++step) {
    b.step(10 * step, uint64_t(step));
    b.malloc(10 * step + 1, 0x2000 + uint64_t(step) * 0x100, 64);
    b.mark(10 * step + 5, "backward");
  }
  b.mark(47, "optimizer");
  b.malloc(50, 0x9000, 32);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);

  const StepMarksData all = curves(*source, b.pid(), kHostDevice).step_marks;
  EXPECT_EQ(numbers(all.steps), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(all.every_step);
  EXPECT_EQ(all.step_stride, 1u);
  EXPECT_EQ(all.step_before.number, 0u);
  ASSERT_EQ(all.marks.size(), 5u);
  EXPECT_EQ(all.marks[0].text, "backward");
  EXPECT_EQ(all.marks[0].ts_ns, b.at(15));
  EXPECT_EQ(all.marks[4].text, "optimizer");
  EXPECT_TRUE(all.ooms.empty());

  // From +25 ms to +36 ms: step 3 began inside, step 2 was under way as it began.
  const StepMarksData part = curves(*source, b.pid(), kHostDevice, b.at(25), b.at(36)).step_marks;
  EXPECT_EQ(numbers(part.steps), (std::vector<uint64_t>{3}));
  EXPECT_EQ(part.step_before.number, 2u);
  EXPECT_EQ(numbers(part.marks), (std::vector<uint64_t>{2, 3}));  // +25 and +35
  ASSERT_NE(viewdata::step_at(part, b.at(29)), nullptr);
  EXPECT_EQ(viewdata::step_at(part, b.at(29))->number, 2u);
  EXPECT_EQ(viewdata::step_at(part, b.at(30))->number, 3u);
  EXPECT_EQ(viewdata::step_at(all, b.at(5))->number, 0u) << "before the first step";

  // What Allocated did over a step, for the hover: 164 B as step 2 began (the first block
  // and step 1's), 228 B as step 3 began. Not for the last step (its end is not known yet),
  // nor before the first.
  const CurvesData whole = curves(*source, b.pid(), kHostDevice);
  const std::optional<viewdata::StepChange> step_2 = viewdata::allocated_over_step(whole, b.at(25));
  ASSERT_TRUE(step_2.has_value());
  EXPECT_EQ(step_2->start_bytes, 164);
  EXPECT_EQ(step_2->end_bytes, 228);
  EXPECT_FALSE(viewdata::allocated_over_step(whole, b.at(45)).has_value());
  EXPECT_FALSE(viewdata::allocated_over_step(whole, b.at(5)).has_value());
  CurvesData grouped = whole;
  grouped.group_by = timeline::GroupBy::kOwner;
  EXPECT_FALSE(viewdata::allocated_over_step(grouped, b.at(25)).has_value());

  // A step's span, as a double-click selects it: to the next step, even past the range.
  int64_t begin = 0, end = 0;
  ASSERT_TRUE(viewdata::step_span_at(part, b.at(33), part.steps.back().ts_ns, &begin, &end));
  EXPECT_EQ(begin, b.at(30));
  EXPECT_EQ(end, b.at(40));
  ASSERT_TRUE(viewdata::step_span_at(all, b.at(45), b.at(50), &begin, &end));
  EXPECT_EQ(begin, b.at(40));
  EXPECT_EQ(end, b.at(50)) << "the last step: to the range's end";
  EXPECT_FALSE(viewdata::step_span_at(all, b.at(5), b.at(50), &begin, &end));
}

// Each step's peak of Allocated, from the engine's step figures: what the step held at its
// most, 1 MiB above both its ends here; the step under way at the range's start has its own,
// and the last, still under way, its peak so far.
TEST(StepMarksData, EachStepsPeakIsTheMostItHeld) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100);
  for (int step = 1; step <= 3; ++step) {
    b.step(10 * step, uint64_t(step));
    b.malloc(10 * step + 1, 0x2000 + uint64_t(step) * 0x100, 1000);
    b.malloc(10 * step + 2, 0x100000, 1 << 20);
    b.free(10 * step + 4, 0x100000);
  }
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const StepMarksData all = curves(*source, b.pid(), kHostDevice).step_marks;
  ASSERT_EQ(all.steps.size(), 3u);
  EXPECT_EQ(all.steps[0].peak_bytes, 100 + 1000 + (1 << 20));
  EXPECT_EQ(all.steps[1].peak_bytes, 100 + 2000 + (1 << 20));
  EXPECT_EQ(all.steps[2].peak_bytes, 100 + 3000 + (1 << 20)) << "the step under way, so far";
  EXPECT_EQ(all.step_before.peak_bytes, kUnknown) << "no step before the first";

  const StepMarksData part = curves(*source, b.pid(), kHostDevice, b.at(25), b.at(36)).step_marks;
  EXPECT_EQ(part.step_before.number, 2u);
  EXPECT_EQ(part.step_before.peak_bytes, 100 + 2000 + (1 << 20));
  ASSERT_EQ(part.steps.size(), 1u);
  EXPECT_EQ(part.steps[0].peak_bytes, 100 + 3000 + (1 << 20));
}

// A long run: the peaks of its first 1000 steps (the ones two runs share) and of its
// latest 1000 (the ones a user watching it hovers over) are known, not those between.
TEST(StepMarksData, TheFirstAndTheLatestStepsPeaksAreKnownInALongRun) {
  test::TempDir dir;
  test::RecordingBuilder b;
  constexpr int kSteps = 2600;
  for (int k = 1; k <= kSteps; ++k) {
    b.step(k, uint64_t(k));
    b.malloc(k + 0.1, 0x100000, 1000 + uint64_t(k));
    b.free(k + 0.2, 0x100000);
  }
  const std::string path = dir.file("long.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  // Steps [first, last] listed over their span, with their peaks (-1: unknown).
  const auto peaks = [&](int first, int last) {
    const StepMarksData d =
        curves(*source, b.pid(), kHostDevice, b.at(first + 0.05), b.at(last + 0.5)).step_marks;
    std::vector<std::pair<uint64_t, int64_t>> out;
    for (const TimeMark& m : d.steps) out.push_back({m.number, m.peak_bytes});
    return out;
  };
  using Peaks = std::vector<std::pair<uint64_t, int64_t>>;
  EXPECT_EQ(peaks(998, 1000), (Peaks{{999, 1999}, {1000, 2000}}));
  EXPECT_EQ(peaks(1300, 1302), (Peaks{{1301, kUnknown}, {1302, kUnknown}}));
  EXPECT_EQ(peaks(1600, 1602), (Peaks{{1601, 2601}, {1602, 2602}})) << "the latest 1000";
  EXPECT_EQ(peaks(2598, 2600), (Peaks{{2599, 3599}, {2600, 3600}})) << "the last under way";
}

TEST(StepMarksData, AnOomIsDrawnOnItsOwnDeviceWithTheCallAndTheSize) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string path = dir.file("oom.db");
  test::write_oom_after_a_step(b, path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);

  // The range the window asks (the curves' own end is the device's last block).
  const StepMarksData gpu = curves(*source, b.pid(), 0, b.at(3), b.at(10)).step_marks;
  ASSERT_EQ(gpu.ooms.size(), 1u);
  EXPECT_EQ(gpu.ooms[0].ts_ns, b.at(4));
  EXPECT_EQ(gpu.ooms[0].text, "cudaMalloc asked 8.0 MiB");
  EXPECT_EQ(gpu.step_before.number, 1u) << "the process's steps, on each of its devices";
  EXPECT_TRUE(curves(*source, b.pid(), kHostDevice, b.at(3), b.at(10)).step_marks.ooms.empty());
}

TEST(StepMarksData, ManyStepsAreDrawnAtARoundStrideAndListedWhileTheyFit) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::steps_a_millisecond_apart(b, 1000);
  const std::string path = dir.file("long.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);

  // 400 columns: 50 lines at most (one per 8 columns), so every 20th step is drawn; all
  // 1000 are listed (up to 4 a column), so the hover knows each.
  const StepMarksData wide = curves(*source, b.pid(), kHostDevice, 0, 0, 400).step_marks;
  EXPECT_TRUE(wide.every_step);
  EXPECT_EQ(wide.steps.size(), 1000u);
  EXPECT_EQ(wide.step_stride, 20u);
  size_t drawn = 0;
  for (const TimeMark& s : wide.steps) drawn += viewdata::step_drawn(wide, s) ? 1 : 0;
  EXPECT_EQ(drawn, 50u);
  EXPECT_EQ(viewdata::step_at(wide, b.at(500.7))->number, 500u);

  // 100 columns: more steps than it lists; those 8 columns (80 ms) apart, and no step is
  // named.
  const StepMarksData narrow = curves(*source, b.pid(), kHostDevice, 0, 0, 100).step_marks;
  EXPECT_FALSE(narrow.every_step);
  EXPECT_EQ(narrow.steps.size(), 13u);  // steps 1, 81, ..., 961
  EXPECT_EQ(narrow.steps.front().number, 1u);
  EXPECT_GE(narrow.steps.back().number, 900u);
  EXPECT_EQ(narrow.steps_in_range, 1000u);
  EXPECT_EQ(viewdata::step_at(narrow, b.at(500.7)), nullptr);
  // The hover says where it is among the steps it lists instead.
  const viewdata::StepsAround around = viewdata::steps_around(narrow, b.at(500.7));
  EXPECT_EQ(around.before->number, 481u);
  EXPECT_EQ(around.after->number, 561u);
  EXPECT_EQ(viewdata::steps_around(narrow, b.at(999.5)).after->number, 0u) << "none after";
}

// A file's step numbers are whatever its Name says: two steps named 0 are on every stride,
// two of the largest number on none below it. The stride's search ends, and the first of
// them is drawn alone.
TEST(StepMarksData, StepNumbersNoStrideSeparatesEndWithTheFirstDrawnAlone) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x100, 16);
  b.step(10, 0);
  b.step(10.001, 0);
  b.step(20, UINT64_MAX);
  b.step(20.001, UINT64_MAX);
  b.malloc(30, 0x200, 16);
  const std::string path = dir.file("odd.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  for (const auto& [t0, t1] : {std::pair(b.at(5), b.at(15)), std::pair(b.at(15), b.at(25))}) {
    const StepMarksData d = curves(*source, b.pid(), kHostDevice, t0, t1, 1000).step_marks;
    ASSERT_EQ(d.steps.size(), 2u);
    EXPECT_TRUE(d.first_alone);
    EXPECT_TRUE(viewdata::step_drawn(d, d.steps[0]));
    EXPECT_FALSE(viewdata::step_drawn(d, d.steps[1]));
  }
  EXPECT_EQ(viewdata::round_at_least(UINT64_MAX), UINT64_MAX);
}

TEST(StepMarksData, RoundStrides) {
  EXPECT_EQ(viewdata::round_at_least(0), 1u);
  EXPECT_EQ(viewdata::round_at_least(1), 1u);
  EXPECT_EQ(viewdata::round_at_least(3), 5u);
  EXPECT_EQ(viewdata::round_at_least(6), 10u);
  EXPECT_EQ(viewdata::round_at_least(20), 20u);
  EXPECT_EQ(viewdata::round_at_least(101), 200u);
}

// Twenty steps a millisecond apart in one stretch of a long range, and marks among them:
// the lines are kept apart there (in the live multirank example they drew a grey block),
// though the range as a whole has room for many more.
TEST(StepMarksData, StepsAndMarksThatCrowdInOneStretchAreKeptApartThere) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x100, 16);
  for (int step = 1; step <= 20; ++step) {
    b.step(1000 + step, uint64_t(step));
    b.mark(1000.5 + step, "allreduce");
  }
  b.malloc(2001, 0x200, 16);
  const std::string path = dir.file("crowd.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  // 1000 columns over 2 s: 2 ms a column, so lines 16 ms apart at least, marks 12 ms.
  const StepMarksData d = curves(*source, b.pid(), kHostDevice, 0, 0, 1000).step_marks;
  EXPECT_TRUE(d.every_step);
  EXPECT_EQ(d.steps.size(), 20u) << "listed, for the hover";
  EXPECT_EQ(d.step_stride, 20u);
  size_t drawn = 0;
  for (const TimeMark& s : d.steps) drawn += viewdata::step_drawn(d, s) ? 1 : 0;
  EXPECT_EQ(drawn, 1u);
  EXPECT_EQ(d.marks_in_range, 20u);
  // Steps 2-4 alone, as crowded: every 5th would draw none, so the first is drawn alone.
  const StepMarksData few =
      curves(*source, b.pid(), kHostDevice, b.at(1001.5), b.at(1004.5), 1).step_marks;
  ASSERT_EQ(few.steps.size(), 3u);
  EXPECT_TRUE(few.first_alone);
  EXPECT_TRUE(viewdata::step_drawn(few, few.steps[0]));
  EXPECT_FALSE(viewdata::step_drawn(few, few.steps[1]));
  EXPECT_FALSE(viewdata::step_drawn(few, few.steps[2]));
  ASSERT_EQ(d.marks.size(), 2u);  // +1001.5 and +1013.5 ms
  EXPECT_EQ(d.marks[1].ts_ns, b.at(1013.5));
}

}  // namespace
}  // namespace memtap
