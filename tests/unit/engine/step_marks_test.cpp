// StepMarks: each process's steps and marks kept in time order, numbered as the recording
// numbers them, found by time, and thinned evenly (never dropped from one end) past the
// bound.
#include "monitor/engine/step_marks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/engine/mark_event.h"

namespace memtap {
namespace {

using test::mark_event;

std::vector<uint64_t> numbers(const StepMarkTrack& track) {
  std::vector<uint64_t> out;
  for (const StepMark& m : track.kept) out.push_back(m.number);
  return out;
}

TEST(StepMarks, StepsAreNumberedByTheirNameAndMarksByTheirCountPerProcess) {
  StringTable strings;
  StepMarks marks(&strings);
  marks.add(mark_event(MemEventKind::kStep, 7, 100, strings.intern("41")));
  marks.add(mark_event(MemEventKind::kMark, 7, 150, strings.intern("backward")));
  marks.add(mark_event(MemEventKind::kStep, 7, 200, strings.intern("42")));
  marks.add(mark_event(MemEventKind::kStep, 8, 210, strings.intern("warmup")));  // not a number
  marks.add(mark_event(MemEventKind::kStep, 8, 220, strings.intern("12x")));
  marks.add(mark_event(MemEventKind::kMalloc, 7, 230));  // not a step or a mark
  marks.add(mark_event(MemEventKind::kMark, 7, 250, strings.intern("optimizer")));

  ASSERT_NE(marks.steps(7), nullptr);
  EXPECT_EQ(numbers(*marks.steps(7)), (std::vector<uint64_t>{41, 42}));
  EXPECT_EQ(numbers(*marks.steps(8)), (std::vector<uint64_t>{1, 2}));
  ASSERT_NE(marks.marks(7), nullptr);
  EXPECT_EQ(numbers(*marks.marks(7)), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(strings.get(marks.marks(7)->kept[1].name), "optimizer");
  EXPECT_EQ(marks.marks(8), nullptr);
  EXPECT_EQ(marks.steps(9), nullptr);
}

TEST(StepMarks, FindsTheStepUnderWayAndThoseInARange) {
  StringTable strings;
  StepMarks marks(&strings);
  for (int64_t i = 1; i <= 5; ++i) {
    marks.add(mark_event(MemEventKind::kStep, 1, i * 1000, strings.intern(std::to_string(i))));
  }
  const StepMarkTrack& steps = *marks.steps(1);
  EXPECT_EQ(step_mark_at(steps, 999), nullptr);
  EXPECT_EQ(step_mark_at(steps, 1000)->number, 1u);
  EXPECT_EQ(step_mark_at(steps, 2999)->number, 2u);
  EXPECT_EQ(step_mark_at(steps, 1'000'000)->number, 5u);
  const StepMarkSpan span = step_marks_between(steps, 2000, 4500);
  EXPECT_EQ(span.first, 1u);
  EXPECT_EQ(span.last, 4u);  // steps 2, 3, 4
  const StepMarkSpan none = step_marks_between(steps, 5001, 9000);
  EXPECT_EQ(none.first, none.last);
}

TEST(StepMarks, AnOlderOneTakesItsPlaceInTime) {
  StringTable strings;
  StepMarks marks(&strings);
  marks.add(mark_event(MemEventKind::kMark, 1, 100, strings.intern("a")));
  marks.add(mark_event(MemEventKind::kMark, 1, 300, strings.intern("c")));
  marks.add(mark_event(MemEventKind::kMark, 1, 200, strings.intern("b")));
  std::vector<std::string> texts;
  for (const StepMark& m : marks.marks(1)->kept) texts.push_back(strings.get(m.name));
  EXPECT_EQ(texts, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(StepMarks, PastTheBoundEverySecondIsKeptSoTheWholeRunStaysCovered) {
  StringTable strings;
  StepMarks marks(&strings, 8);
  for (int64_t i = 1; i <= 21; ++i) {
    marks.add(mark_event(MemEventKind::kStep, 1, i * 10, strings.intern(std::to_string(i))));
  }
  const StepMarkTrack& steps = *marks.steps(1);
  EXPECT_EQ(steps.seen, 21u);
  EXPECT_EQ(steps.stride, 4u);  // 8 kept of 1..16 at stride 2; the 17th filled it again
  EXPECT_EQ(numbers(steps), (std::vector<uint64_t>{1, 5, 9, 13, 17, 21}));
  EXPECT_LE(steps.kept.size(), 8u);
  EXPECT_EQ(step_mark_at(steps, 125)->number, 9u);  // a thinned track answers by what it kept
}

}  // namespace
}  // namespace memtap
