// AskPacer: a view keeps one question in flight; those wanted meanwhile become one more
// question when the answer is back, never none and never several.
#include "monitor/gui/ask_pacer.h"

#include <gtest/gtest.h>

namespace memtap {
namespace {

// A view as the window's views use the pacer: ask() sends when it may; an answer coming back
// asks again when the pacer says so. Answers are delivered by the test, one at a time.
struct FakeView {
  gui::AskPacer pacer;
  int sent = 0;
  int pending = 0;  // sent, not yet answered

  void ask() {
    if (!pacer.start()) return;
    ++sent;
    ++pending;
  }
  void answer() {
    ASSERT_GT(pending, 0);
    --pending;
    if (pacer.done()) ask();
  }
};

TEST(AskPacer, AQuestionGoesWhenNoneIsInFlight) {
  gui::AskPacer pacer;
  EXPECT_FALSE(pacer.inFlight());
  EXPECT_TRUE(pacer.start());
  EXPECT_TRUE(pacer.inFlight());
  EXPECT_FALSE(pacer.done());  // nothing wanted meanwhile
  EXPECT_FALSE(pacer.inFlight());
  EXPECT_TRUE(pacer.start());  // and the next one goes at once
}

TEST(AskPacer, QuestionsWantedMeanwhileBecomeOneMoreWhenTheAnswerIsBack) {
  FakeView v;
  v.ask();
  v.ask();
  v.ask();
  v.ask();
  EXPECT_EQ(v.sent, 1);  // one in flight at a time
  EXPECT_EQ(v.pending, 1);
  v.answer();
  EXPECT_EQ(v.sent, 2);  // the three wanted meanwhile: asked once
  EXPECT_EQ(v.pending, 1);
  EXPECT_TRUE(v.pacer.inFlight());
  v.answer();
  EXPECT_EQ(v.sent, 2);  // nothing wanted since: done
  EXPECT_EQ(v.pending, 0);
  EXPECT_FALSE(v.pacer.inFlight());
}

TEST(AskPacer, TheNoteToAskAgainIsClearedOnceUsed) {
  gui::AskPacer pacer;
  ASSERT_TRUE(pacer.start());
  EXPECT_FALSE(pacer.start());
  EXPECT_TRUE(pacer.done());
  ASSERT_TRUE(pacer.start());
  EXPECT_FALSE(pacer.done());  // the earlier note does not ask a second time
}

TEST(AskPacer, ACancelledQuestionLeavesNothingInFlight) {
  gui::AskPacer pacer;
  ASSERT_TRUE(pacer.start());
  pacer.cancel();
  EXPECT_FALSE(pacer.inFlight());
  EXPECT_TRUE(pacer.start());  // not refused as if one were on its way
  EXPECT_FALSE(pacer.done());
}

}  // namespace
}  // namespace memtap
