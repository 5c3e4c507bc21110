// MEMTAP_EXECED_FROM, the entry that carries an instance's last word across exec().
#include "agent/exec_handoff.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <string>

namespace memtap {
namespace {

TEST(ExecHandoff, TheEntryReadsBackForTheSamePid) {
  const MemtapExecHandoff h{0xfedcba9876543210ull, 123456789012ull, UINT64_MAX, 0x5ec7e7, 1};
  char entry[kExecHandoffEntryBytes];
  ASSERT_TRUE(format_exec_handoff(4242, h, entry, sizeof entry));
  EXPECT_STREQ(entry,
               "MEMTAP_EXECED_FROM=4242,fedcba9876543210,123456789012,18446744073709551615,5ec7e7");
  EXPECT_TRUE(is_exec_handoff_entry(entry));
  MemtapExecHandoff back{};
  ASSERT_TRUE(parse_exec_handoff(entry + sizeof kExecHandoffName, 4242, &back));
  EXPECT_EQ(back.instance_id, h.instance_id);
  EXPECT_EQ(back.events_sent, h.events_sent);
  EXPECT_EQ(back.dropped_total, h.dropped_total);
  EXPECT_EQ(back.instance_secret, h.instance_secret);
  EXPECT_EQ(back.said, 1);
}

TEST(ExecHandoff, TheLongestEntryFitsAndAShortBufferIsRefused) {
  const MemtapExecHandoff h{UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, 1};
  char entry[kExecHandoffEntryBytes];
  ASSERT_TRUE(format_exec_handoff(UINT32_MAX, h, entry, sizeof entry));
  const size_t needed = strlen(entry) + 1;
  EXPECT_FALSE(format_exec_handoff(UINT32_MAX, h, entry, needed - 1));
  EXPECT_TRUE(format_exec_handoff(UINT32_MAX, h, entry, needed));
  EXPECT_FALSE(format_exec_handoff(1, h, entry, 0));
}

// A child that inherited the variable, or text that is not ours, says nothing.
TEST(ExecHandoff, AnotherPidsOrMalformedValueSaysNothing) {
  const MemtapExecHandoff untouched{1, 2, 3, 4, 0};
  for (const char* value :
       {"41,ab,1,2,5", "", "42", "42,ab,1", "42,ab,1,2", "42,ab,1,2,", "42,,1,2,5", "42,xy,1,2,5",
        "42,ab,1,2,5,6", "42,AB,1,2,5", "-42,ab,1,2,5", "42,ab,18446744073709551616,2,5",
        "42,10000000000000000,1,2,5", " 42,ab,1,2,5", "42,ab,1,2,5 "}) {
    MemtapExecHandoff h = untouched;
    EXPECT_FALSE(parse_exec_handoff(value, 42, &h)) << value;
    EXPECT_EQ(h.instance_id, 1u) << value;
    EXPECT_EQ(h.said, 0) << value;
  }
  MemtapExecHandoff h{};
  EXPECT_FALSE(parse_exec_handoff(nullptr, 42, &h));
  EXPECT_TRUE(parse_exec_handoff("42,ab,1,2,5", 42, &h));
  EXPECT_EQ(h.instance_id, 0xabu);
  EXPECT_EQ(h.instance_secret, 5u);
  EXPECT_FALSE(is_exec_handoff_entry("MEMTAP_EXECED_FROMX=1"));
  EXPECT_FALSE(is_exec_handoff_entry("MEMTAP_EXECED_FRO=1"));
}

// Taken once: the program never sees it, whether it was for this pid or not.
TEST(ExecHandoff, TakingItUnsetsIt) {
  ASSERT_EQ(setenv(kExecHandoffName, "7,1f,30,5,c0ffee", 1), 0);
  MemtapExecHandoff h = take_exec_handoff(7);
  EXPECT_EQ(h.said, 1);
  EXPECT_EQ(h.instance_id, 0x1fu);
  EXPECT_EQ(h.events_sent, 30u);
  EXPECT_EQ(h.dropped_total, 5u);
  EXPECT_EQ(h.instance_secret, 0xc0ffeeu);
  EXPECT_EQ(getenv(kExecHandoffName), nullptr);
  EXPECT_EQ(take_exec_handoff(7).said, 0);

  ASSERT_EQ(setenv(kExecHandoffName, "8,1f,30,5,c0ffee", 1), 0);
  EXPECT_EQ(take_exec_handoff(7).said, 0);
  EXPECT_EQ(getenv(kExecHandoffName), nullptr);
}

}  // namespace
}  // namespace memtap
