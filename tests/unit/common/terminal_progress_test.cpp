// The progress line's text (common/terminal_progress.h): what a person reads while memtap
// finishes a recording or reads a large file.
#include "common/terminal_progress.h"

#include <gtest/gtest.h>

namespace memtap {
namespace {

TEST(TerminalProgress, SaysDoneOfTotalWithUnitPercentageRateAndTimeLeft) {
  ProgressSample s;
  s.what = "writing the recording";
  s.done = 1234567;
  s.total = 1832620;
  EXPECT_EQ(progress_text(s, 300000, 4, 200),
            "memtap: writing the recording: 1.23M of 1.83M rows (67%), 300K rows/s, 2 s left");
}

TEST(TerminalProgress, LeavesOutRateAndTimeLeftUntilARateIsKnown) {
  ProgressSample s;
  s.what = "reading big.db";
  s.done = 5000;
  s.total = 20000;
  EXPECT_EQ(progress_text(s, 0, 0.1, 200), "memtap: reading big.db: 5000 of 20.0K rows (25%)");
}

TEST(TerminalProgress, SaysElapsedTimeWhereNoTotalIsKnown) {
  ProgressSample s;
  s.what = "building msMemScope's indexes";
  EXPECT_EQ(progress_text(s, 0, 3.4, 200), "memtap: building msMemScope's indexes... 3 s");
  s.what = "reading x.csv";
  s.done = 42;
  EXPECT_EQ(progress_text(s, 10, 130, 200), "memtap: reading x.csv: 42 rows... 2 min");
}

TEST(TerminalProgress, NeverSaysMoreThanAllAndNoTimeLeftOnceDone) {
  ProgressSample s;
  s.what = "analysing big.db";
  s.unit = "events";
  s.done = 12;
  s.total = 10;
  EXPECT_EQ(progress_text(s, 5, 2, 200),
            "memtap: analysing big.db: 10 of 10 events (100%), 5 events/s");
}

TEST(TerminalProgress, CountsKeepThreeDigitsWithoutRoundingIntoAFourth) {
  ProgressSample s;
  s.what = "reading big.db";
  s.done = 9998977;
  s.total = 99990000;
  EXPECT_EQ(progress_text(s, 0, 0, 200), "memtap: reading big.db: 10.0M of 100M rows (9%)");
}

// A line as wide as the terminal wraps on some terminals, and a wrapped line cannot be
// redrawn in place.
TEST(TerminalProgress, StaysNarrowerThanTheTerminal) {
  ProgressSample s;
  s.what = "writing the recording";
  s.done = 1;
  s.total = 2;
  EXPECT_EQ(progress_text(s, 0, 0, 20), "memtap: writing the");
}

}  // namespace
}  // namespace memtap
