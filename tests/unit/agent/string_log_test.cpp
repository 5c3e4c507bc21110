// The string log on its own (agent/string_log.cpp, agent/sender/string_drain.cpp): ids per
// text, the bound, concurrent interning against a concurrent reader that follows the
// sender's protocol (records first, then texts), and ids left unpublished (a thread that is
// slow, or gone after fork()).
#include "agent/string_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/sender/string_drain.h"

namespace memtap {
namespace {

uint32_t intern(const std::string& text) {
  return string_log_intern(text.data(), text.size());
}

// Each test starts from an empty log of `bytes` (the old mapping is left behind: the log
// is made for a process that never gives it back).
void fresh_log(uint64_t bytes) {
  g_string_log.map.store(nullptr);
  g_string_log.map_failed.store(false);
  g_string_log.lost.store(0);
  string_log_set_limit(bytes);
}

std::map<uint32_t, std::string> read_all(StringCursor* cursor) {
  std::vector<StringText> texts;
  read_new_strings(&g_string_log, cursor, SIZE_MAX, &texts);
  std::map<uint32_t, std::string> out;
  for (const StringText& t : texts) out[t.id] = std::string(t.text, t.length);
  return out;
}

TEST(StringLog, SameTextSameIdAndEveryTextReadOnce) {
  fresh_log(1 << 20);
  const uint32_t a = intern("alpha"), b = intern("beta");
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(intern("alpha"), a);
  EXPECT_EQ(intern(std::string("alpha\0x", 7)), intern(std::string("alpha\0x", 7)));
  EXPECT_NE(intern(std::string("alpha\0x", 7)), a) << "length is part of the text";
  EXPECT_EQ(string_log_intern("", 0), 0u);

  StringCursor cursor;
  std::map<uint32_t, std::string> texts = read_all(&cursor);
  EXPECT_EQ(texts.at(a), "alpha");
  EXPECT_EQ(texts.at(b), "beta");
  EXPECT_EQ(texts.size(), 3u);
  EXPECT_TRUE(read_all(&cursor).empty()) << "read once";
  const uint32_t c = intern("gamma");
  EXPECT_EQ(read_all(&cursor), (std::map<uint32_t, std::string>{{c, "gamma"}}));
  StringCursor again;  // a new monitor, a fork() child: from the start
  EXPECT_EQ(read_all(&again).size(), 4u);
}

TEST(StringLog, FullLogRefusesCountsAndStillFindsWhatItHolds) {
  fresh_log(1 << 20);
  const uint32_t first = intern("first");
  uint32_t refused = 0, last = 0;
  for (int i = 0; refused < 10; ++i) {
    uint32_t id = intern(std::string(200, 'x') + std::to_string(i));
    refused += id == 0;
    if (id) last = id;
  }
  EXPECT_GT(last, 1000u);
  EXPECT_EQ(g_string_log.lost.load(), 10u);
  EXPECT_EQ(intern("first"), first);
  EXPECT_EQ(string_log_intern(std::string(kMaxInternBytes + 1, 'y').data(), kMaxInternBytes + 1),
            0u);
  EXPECT_EQ(g_string_log.lost.load(), 11u) << "text over the limit counts too";
  StringCursor cursor;
  EXPECT_EQ(read_all(&cursor).size(), last);
}

TEST(StringLog, LargeBacklogIsReadInBoundedPieces) {
  fresh_log(16 << 20);
  for (int i = 0; i < 5000; ++i) intern(std::string(1000, 'z') + std::to_string(i));
  StringCursor cursor;
  size_t pieces = 0, total = 0;
  for (bool done = false; !done; ++pieces) {
    std::vector<StringText> texts;
    done = read_new_strings(&g_string_log, &cursor, 100000, &texts);
    size_t bytes = 0;
    for (const StringText& t : texts) bytes += t.length;
    EXPECT_LE(bytes, 100000u + 1010u);
    total += texts.size();
  }
  EXPECT_EQ(total, 5000u);
  EXPECT_GE(pieces, 50u);
}

// Writers intern overlapping texts and then "record" the id (a release store, as a
// record's commit); a reader takes the records (acquire) and then the texts, as the sender
// does, and must know the text of every id it has seen in a record.
TEST(StringLog, ConcurrentWritersAgreeAndTheReaderNeverMissesAText) {
  fresh_log(64 << 20);
  constexpr int kWriters = 4, kTexts = 20000;
  struct Recorded {
    std::atomic<uint32_t> count{0};
    uint32_t ids[kTexts];
  };
  std::vector<Recorded> recorded(kWriters);
  std::atomic<bool> go{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      while (!go.load()) {
      }
      Recorded& r = recorded[size_t(w)];
      for (int i = 0; i < kTexts; ++i) {
        int n = (i * (w + 1) * 7919) % kTexts;  // each writer its own order
        r.ids[i] = intern("text-" + std::to_string(n));
        r.count.store(uint32_t(i + 1), std::memory_order_release);
      }
    });
  }
  std::map<uint32_t, std::string> known;
  StringCursor cursor;
  size_t missing = 0;
  std::vector<uint32_t> seen(kWriters, 0);
  go.store(true);
  for (bool all_done = false; !all_done;) {
    all_done = true;
    std::vector<uint32_t> ids;
    for (int w = 0; w < kWriters; ++w) {
      uint32_t n = recorded[size_t(w)].count.load(std::memory_order_acquire);
      for (uint32_t i = seen[size_t(w)]; i < n; ++i) ids.push_back(recorded[size_t(w)].ids[i]);
      seen[size_t(w)] = n;
      all_done = all_done && n == kTexts;
    }
    for (auto& [id, text] : read_all(&cursor)) known[id] = text;
    for (uint32_t id : ids) missing += known.count(id) == 0;
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(missing, 0u) << "ids recorded before their text could be read";
  for (int i = 0; i < kTexts; ++i) {
    int n = (i * 7919) % kTexts;  // writer 0's order
    EXPECT_EQ(known.at(recorded[0].ids[i]), "text-" + std::to_string(n));
  }
  // One id per text: all writers together produced exactly kTexts distinct ids.
  std::set<uint32_t> ids;
  std::map<std::string, uint32_t> id_of;
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kTexts; ++i) {
      uint32_t id = recorded[size_t(w)].ids[i];
      ids.insert(id);
      auto [it, fresh] = id_of.emplace(known.at(id), id);
      EXPECT_EQ(it->second, id) << it->first;
    }
  }
  EXPECT_EQ(ids.size(), size_t(kTexts));
  EXPECT_EQ(g_string_log.lost.load(), 0u);
}

// An id taken but not yet published: the reader passes it, keeps reading later ones, and
// delivers it once published; after fork() an id whose thread is gone becomes a tombstone.
TEST(StringLog, UnpublishedIdsAreWaitedForAndTombstonedAfterFork) {
  fresh_log(1 << 20);
  const uint32_t a = intern("a");
  StringLogMap* m = g_string_log.map.load();
  const uint32_t slow = m->next_id.fetch_add(1);  // a thread between taking and publishing
  const uint32_t b = intern("b");
  StringCursor cursor;
  EXPECT_EQ(read_all(&cursor), (std::map<uint32_t, std::string>{{a, "a"}, {b, "b"}}));
  // It publishes: an entry with text "late".
  const uint32_t late = intern("late");
  uint64_t at = m->offsets[late].load();
  m->offsets[slow].store(at);
  std::map<uint32_t, std::string> next = read_all(&cursor);
  EXPECT_EQ(next.at(slow), "late");
  EXPECT_EQ(next.at(late), "late");

  const uint32_t gone = m->next_id.fetch_add(1);  // its thread does not exist in the child
  const uint32_t c = intern("c");
  string_log_after_fork_child();
  EXPECT_EQ(m->offsets[gone].load(), kStringTombstone);
  EXPECT_NE(m->offsets[c].load(), kStringTombstone);
  StringCursor child;  // the child's sender starts over and is not held up
  std::map<uint32_t, std::string> all = read_all(&child);
  EXPECT_EQ(all.count(gone), 0u);
  EXPECT_EQ(all.at(c), "c");
  EXPECT_TRUE(child.waiting.empty());
}

}  // namespace
}  // namespace memtap
