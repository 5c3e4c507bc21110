// The block index: events paired into blocks as the engine pairs them, stored in its
// temporary SQLite file, and the views' queries over them (ranges, instants, text, sorted
// pages), whether blocks are still young in memory, promoted or freed; and the index fed by
// a real replay of a recording the real writer made.
#include "monitor/viewdata/block_index.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <type_traits>

#include "monitor/engine/timeline/timeline.h"
#include "monitor/viewdata/breakdown_data.h"
#include "monitor/viewdata/lifetime_data.h"
#include "tests/e2e/process_runner.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::BlockColumn;
using viewdata::BlockFilter;
using viewdata::BlockGroup;
using viewdata::BlockIndex;
using viewdata::BlockIndexOptions;
using viewdata::BlockPage;
using viewdata::BlockQueries;
using viewdata::BlockRow;
using viewdata::BlockSet;
using viewdata::compute_lifetime;
using viewdata::kStillLive;
using viewdata::LifetimeRequest;

constexpr uint32_t kPid = 7;

// Events fed to an index as the engine's thread feeds it.
class Feed {
 public:
  explicit Feed(BlockIndexOptions options = {}) {
    std::string error;
    index_ = BlockIndex::create(options, &error);
    EXPECT_NE(index_, nullptr) << error;
  }

  BlockIndex& index() { return *index_; }

  MemEvent& malloc(int64_t ts, uint64_t addr, uint64_t size) {
    MemEvent& e = event(ts, addr, MemEventKind::kMalloc);
    e.size_bytes = size;
    e.allocation_id = ++allocations_;
    return e;
  }
  MemEvent& free(int64_t ts, uint64_t addr) { return event(ts, addr, MemEventKind::kFree); }
  uint32_t text(const std::string& s) { return strings_.intern(s); }

  // Gives what was made so far to the index.
  void add() {
    index_->add(events_.data(), events_.size(), strings_);
    events_.clear();
  }

  // f(BlockQueries&) on the index's thread, after every event added so far.
  template <class F>
  auto ask(F f) {
    add();
    using R = std::invoke_result_t<F&, BlockQueries&>;
    std::promise<R> result;
    index_->post([&](BlockQueries& q) { result.set_value(f(q)); });
    return result.get_future().get();
  }

  BlockSet largest(const BlockFilter& f, size_t limit = 1000) {
    return ask([&](BlockQueries& q) { return q.largest(f, limit); });
  }

 private:
  MemEvent& event(int64_t ts, uint64_t addr, MemEventKind kind) {
    MemEvent& e = events_.emplace_back();
    e.ts_ns = ts;
    e.pid = kPid;
    e.tid = kPid;
    e.device = kHostDevice;
    e.kind = kind;
    e.layer = Layer::kHost;
    e.addr = addr;
    return e;
  }

  std::unique_ptr<BlockIndex> index_;
  StringTable strings_;
  std::vector<MemEvent> events_;
  uint64_t allocations_ = 0;
};

BlockFilter host() {
  BlockFilter f;
  f.pid = kPid;
  f.device = kHostDevice;
  return f;
}

BlockFilter at(int64_t t) {
  BlockFilter f = host();
  f.t0_ns = f.t1_ns = t;
  return f;
}

BlockFilter range(int64_t t0, int64_t t1) {
  BlockFilter f = host();
  f.t0_ns = t0;
  f.t1_ns = t1;
  return f;
}

std::vector<int64_t> ids_of(const std::vector<BlockRow>& rows) {
  std::vector<int64_t> ids;
  for (const BlockRow& r : rows) ids.push_back(r.id);
  return ids;
}

TEST(BlockIndex, AFreeClosesTheBlockLiveAtItsAddress) {
  Feed feed;
  feed.malloc(100, 0x1000, 64);
  feed.malloc(110, 0x2000, 32);
  feed.free(150, 0x1000);
  const BlockSet s = feed.largest(host());
  ASSERT_EQ(s.blocks.size(), 2u);
  EXPECT_EQ(s.matching_blocks, 2u);
  EXPECT_EQ(s.matching_bytes, 96u);
  const BlockRow& a = s.blocks[0];
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.addr, 0x1000u);
  EXPECT_EQ(a.size_bytes, 64u);
  EXPECT_EQ(a.alloc_ns, 100);
  EXPECT_EQ(a.free_ns, 150);
  EXPECT_EQ(a.allocation_id, 1u);
  EXPECT_EQ(a.pid, kPid);
  EXPECT_EQ(a.tid, kPid);
  EXPECT_EQ(s.blocks[1].id, 2);
  EXPECT_EQ(s.blocks[1].free_ns, kStillLive);
  const viewdata::BlockIndexStatus st = feed.index().status();
  EXPECT_EQ(st.events_added, 3u);
  EXPECT_EQ(st.events_indexed, 3u);
  EXPECT_EQ(st.blocks, 2u);
  EXPECT_EQ(st.unmatched_frees, 0u);
  EXPECT_EQ(st.indexed_until_ns, 150);
  EXPECT_EQ(st.queued_events, 0u);
  EXPECT_TRUE(st.error.empty()) << st.error;
}

// The largest pid on the host makes the scope key that also marks "no scope looked up
// yet": its blocks are paired like any other process's (its first MALLOC got no scope).
TEST(BlockIndex, TheLargestPidIsAProcessLikeAnyOther) {
  Feed feed;
  feed.malloc(100, 0x1000, 64).pid = 4294967295u;
  feed.free(150, 0x1000).pid = 4294967295u;
  BlockFilter f = host();
  f.pid = 4294967295u;
  const BlockSet s = feed.largest(f);
  ASSERT_EQ(s.blocks.size(), 1u);
  EXPECT_EQ(s.blocks[0].free_ns, 150);
  EXPECT_EQ(feed.index().status().unmatched_frees, 0u);
}

TEST(BlockIndex, AMallocOverALiveBlockClosesTheOldOneThen) {
  Feed feed;
  feed.malloc(100, 0x1000, 64);
  feed.malloc(200, 0x1000, 128);
  feed.free(300, 0x1000);
  const BlockSet s = feed.largest(host());
  ASSERT_EQ(s.blocks.size(), 2u);
  EXPECT_EQ(s.blocks[0].id, 2);
  EXPECT_EQ(s.blocks[0].alloc_ns, 200);
  EXPECT_EQ(s.blocks[0].free_ns, 300);
  EXPECT_EQ(s.blocks[1].id, 1);
  EXPECT_EQ(s.blocks[1].free_ns, 200);
  EXPECT_EQ(feed.index().status().unmatched_frees, 0u);
}

TEST(BlockIndex, AFreeThatFindsNoBlockIsCountedAndIgnored) {
  Feed feed;
  feed.free(50, 0x1000);  // before any block of the process
  feed.malloc(100, 0x1000, 64);
  feed.free(150, 0x1000);
  feed.free(160, 0x1000);  // twice
  feed.free(170, 0x9000);  // never allocated
  const BlockSet s = feed.largest(host());
  ASSERT_EQ(s.blocks.size(), 1u);
  EXPECT_EQ(s.blocks[0].free_ns, 150);
  EXPECT_EQ(feed.index().status().unmatched_frees, 3u);
  EXPECT_EQ(feed.index().status().blocks, 1u);
}

TEST(BlockIndex, HeapAndMappingAtTheSameAddressAreDifferentBlocks) {
  Feed feed;
  feed.malloc(100, 0x1000, 64);
  feed.malloc(110, 0x1000, 4096).is_mmap = true;
  feed.free(120, 0x1000).is_mmap = true;  // the mapping, not the heap block
  const BlockSet s = feed.largest(host());
  ASSERT_EQ(s.blocks.size(), 2u);
  EXPECT_TRUE(s.blocks[0].is_mmap);
  EXPECT_EQ(s.blocks[0].layer, Layer::kHost);
  EXPECT_EQ(s.blocks[0].free_ns, 120);
  EXPECT_FALSE(s.blocks[1].is_mmap);
  EXPECT_EQ(s.blocks[1].free_ns, kStillLive);
  // The filter tells them apart.
  BlockFilter mappings = host();
  mappings.mmap = true;
  EXPECT_EQ(feed.largest(mappings).matching_bytes, 4096u);
  BlockFilter heap = host();
  heap.layer = Layer::kHost;
  heap.mmap = false;
  EXPECT_EQ(feed.largest(heap).matching_bytes, 64u);
  heap.mmap.reset();
  EXPECT_EQ(feed.largest(heap).matching_blocks, 2u);
}

TEST(BlockIndex, DevicesLayersAndProcessesAreApart) {
  Feed feed;
  feed.malloc(100, 0x1000, 10);
  MemEvent& d0 = feed.malloc(101, 0x1000, 20);
  d0.device = 0;
  d0.layer = Layer::kPta;
  MemEvent& hal = feed.malloc(102, 0x1000, 30);
  hal.device = 0;
  hal.layer = Layer::kHal;
  MemEvent& d1 = feed.malloc(103, 0x1000, 40);
  d1.device = 1;
  d1.layer = Layer::kPta;
  feed.malloc(104, 0x1000, 50).pid = kPid + 1;
  MemEvent& f = feed.free(110, 0x1000);  // the PTA block of device 0 only
  f.device = 0;
  f.layer = Layer::kPta;
  BlockFilter dev0 = host();
  dev0.device = 0;
  const BlockSet s = feed.largest(dev0);
  ASSERT_EQ(s.blocks.size(), 2u);
  EXPECT_EQ(s.blocks[0].layer, Layer::kHal);
  EXPECT_EQ(s.blocks[0].free_ns, kStillLive);
  EXPECT_EQ(s.blocks[1].layer, Layer::kPta);
  EXPECT_EQ(s.blocks[1].free_ns, 110);
  dev0.layer = Layer::kPta;
  EXPECT_EQ(feed.largest(dev0).matching_bytes, 20u);
  EXPECT_EQ(feed.largest(host()).matching_bytes, 10u);
  BlockFilter other = host();
  other.pid = kPid + 1;
  EXPECT_EQ(feed.largest(other).matching_bytes, 50u);
  const auto scopes = feed.ask([](BlockQueries& q) { return q.scopes(); });
  const std::vector<std::pair<uint32_t, int32_t>> expected = {
      {kPid, kHostDevice}, {kPid, 0}, {kPid, 1}, {kPid + 1, kHostDevice}};
  EXPECT_EQ(scopes, expected);
}

TEST(BlockIndex, RangesIncludeBlocksAllocatedAtTheirEndAndExcludeThoseFreedAtTheirStart) {
  Feed feed;
  feed.malloc(100, 0x1000, 1);  // [100, 200)
  feed.free(200, 0x1000);
  feed.malloc(300, 0x2000, 2);  // [300, 400)
  feed.free(400, 0x2000);
  feed.malloc(500, 0x3000, 4);  // [500, live)
  const auto bytes = [&](const BlockFilter& f) { return feed.largest(f).matching_bytes; };
  EXPECT_EQ(bytes(range(200, 300)), 2u) << "freed at t0: out; allocated at t1: in";
  EXPECT_EQ(bytes(range(199, 299)), 1u);
  EXPECT_EQ(bytes(range(201, 499)), 2u);
  EXPECT_EQ(bytes(range(0, 1000)), 7u);
  EXPECT_EQ(bytes(range(0, 99)), 0u);
  EXPECT_EQ(bytes(at(100)), 1u) << "live from the instant it is allocated";
  EXPECT_EQ(bytes(at(200)), 0u) << "not at the instant it is freed";
  EXPECT_EQ(bytes(at(399)), 2u);
  EXPECT_EQ(bytes(at(1'000'000)), 4u);
  EXPECT_EQ(bytes(range(300, 200)), 0u) << "an empty range";
}

// A session's worth of blocks: short-lived ones, others living across every level of
// lifetime, some never freed, reused addresses, two layers and a mapping.
void random_session(Feed& feed, uint64_t seed, int blocks) {
  std::mt19937_64 rng(seed);
  struct Pending {
    int64_t free_ts;
    uint64_t addr;
    bool mmap;
  };
  std::multimap<int64_t, Pending> frees;
  const uint32_t owners[] = {0, feed.text("model@layer1"), feed.text("model@layer2")};
  const uint32_t stacks[] = {0, feed.text("train.py:10 forward"), feed.text("train.py:20 step")};
  int64_t ts = 1'000'000;
  for (int i = 0; i < blocks; ++i) {
    ts += 1 + int64_t(rng() % 1000);
    while (!frees.empty() && frees.begin()->first <= ts) {
      const Pending p = frees.begin()->second;
      feed.free(frees.begin()->first, p.addr).is_mmap = p.mmap;
      frees.erase(frees.begin());
    }
    const bool mmap = rng() % 20 == 0;
    const uint64_t addr = 0x10000 + (rng() % 4000) * 0x100;  // some reuse while live
    MemEvent& e = feed.malloc(ts, addr, 1 + rng() % 100000);
    e.is_mmap = mmap;
    e.owner = owners[rng() % 3];
    e.stack_python = stacks[rng() % 3];
    e.tid = uint32_t(rng() % 4);
    const int kind = int(rng() % 10);
    if (kind == 9) continue;  // never freed
    // Lifetimes from 1 us up to ~1 s: every level for a promote_after_ns of 1 ms.
    const int64_t life = kind < 6 ? int64_t(rng() % 1000) : int64_t(1) << (10 + rng() % 20);
    frees.insert({ts + life, {ts + life, addr, mmap}});
    if (i % 500 == 0) feed.add();
  }
  feed.add();
}

struct Answers {
  std::vector<std::tuple<uint64_t, uint64_t, std::vector<int64_t>>> largest;
  std::vector<std::vector<std::tuple<int, bool, std::string, std::string, uint64_t, uint64_t>>>
      groups;
  std::vector<std::vector<int64_t>> pages;
  bool operator==(const Answers& o) const {
    return largest == o.largest && groups == o.groups && pages == o.pages;
  }
};

Answers answers(Feed& feed, int64_t first, int64_t last) {
  return feed.ask([&](BlockQueries& q) {
    Answers a;
    const int64_t span = last - first;
    for (int i = 0; i <= 10; ++i) {
      const int64_t t = first + span * i / 10;
      for (const BlockFilter& f : {at(t), range(t - span / 50, t), range(t, t + span / 7)}) {
        const BlockSet s = q.largest(f, 20);
        a.largest.emplace_back(s.matching_blocks, s.matching_bytes, ids_of(s.blocks));
      }
      std::vector<std::tuple<int, bool, std::string, std::string, uint64_t, uint64_t>> groups;
      for (const BlockGroup& g : q.live_groups(at(t)))
        groups.emplace_back(int(g.layer), g.is_mmap, g.owner, g.stack, g.bytes, g.blocks);
      a.groups.push_back(groups);
      a.pages.push_back(
          ids_of(q.page(range(t, t + span / 20), BlockColumn::kLifetime, true, 0, 1'000'000).rows));
    }
    a.largest.emplace_back(q.largest(host(), 50).matching_bytes, 0,
                           ids_of(q.largest(host(), 50).blocks));
    return a;
  });
}

TEST(BlockIndex, AnswersAreTheSameWhetherBlocksArePromotedEarlyOrNever) {
  BlockIndexOptions early;
  early.promote_after_ns = 1000;  // 1 us: nearly every block is stored live, then closed
  BlockIndexOptions never;
  never.promote_after_ns = int64_t(1) << 60;  // every block waits in memory until freed
  Feed a(early), b(never);
  random_session(a, 1, 20000);
  random_session(b, 1, 20000);
  const int64_t last = a.index().status().indexed_until_ns;
  const Answers before_a = answers(a, 1'000'000, last);
  EXPECT_TRUE(before_a == answers(b, 1'000'000, last));
  EXPECT_GT(std::get<0>(before_a.largest[5]), 0u) << "the session has blocks live midway";
  // The same once the input ended and every young block is stored.
  a.index().finish_input();
  b.index().finish_input();
  const Answers after_a = answers(a, 1'000'000, last);
  EXPECT_TRUE(after_a == before_a);
  EXPECT_TRUE(after_a == answers(b, 1'000'000, last));
}

// Instants and ranges against a plain list of the blocks, with promote_after_ns shorter
// and longer than a run of ids (AllocSpans: 1024 ids, ~0.5 ms here), so that windows
// one level or one id run too short would miss blocks.
TEST(BlockIndex, LiveAtAnInstantAndInARangeMatchEveryBlockTheSessionHad) {
  for (int64_t promote : {10'000, 2'000'000}) {
    BlockIndexOptions options;
    options.promote_after_ns = promote;
    Feed feed(options);
    random_session(feed, 2, 20000);
    feed.index().finish_input();
    bool truncated = true;
    const std::vector<BlockRow> every =
        feed.ask([&](BlockQueries& q) { return q.all(host(), 1'000'000, &truncated); });
    EXPECT_FALSE(truncated);
    ASSERT_EQ(every.size(), 20000u);
    const int64_t last = feed.index().status().indexed_until_ns;
    for (int64_t t = 1'000'000; t <= last; t += (last - 1'000'000) / 97) {
      for (const BlockFilter& f : {at(t), range(t, t + promote / 3)}) {
        uint64_t blocks = 0, bytes = 0;
        for (const BlockRow& r : every) {
          if (r.alloc_ns <= f.t1_ns && r.free_ns > f.t0_ns) ++blocks, bytes += r.size_bytes;
        }
        const BlockSet s = feed.largest(f, 5);
        EXPECT_EQ(s.matching_blocks, blocks) << promote << " " << f.t0_ns << " " << f.t1_ns;
        EXPECT_EQ(s.matching_bytes, bytes) << promote << " " << f.t0_ns << " " << f.t1_ns;
      }
    }
  }
}

TEST(BlockIndex, YoungBlocksStillInMemoryAreSeenByEveryQuery) {
  BlockIndexOptions options;
  options.promote_after_ns = int64_t(1) << 60;
  Feed feed(options);
  feed.malloc(100, 0x1000, 64).owner = feed.text("young@owner");
  feed.malloc(110, 0x2000, 32);
  feed.malloc(120, 0x3000, 16);
  feed.free(130, 0x3000);
  EXPECT_EQ(feed.largest(at(125)).matching_bytes, 112u);
  EXPECT_EQ(feed.largest(at(200)).matching_bytes, 96u);
  const auto found = feed.ask([](BlockQueries& q) { return q.find(1); });
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->owner, "young@owner");
  EXPECT_EQ(found->free_ns, kStillLive);
  const auto groups = feed.ask([](BlockQueries& q) { return q.live_groups(at(200)); });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].owner, "young@owner");
  EXPECT_EQ(groups[0].bytes, 64u);
  const BlockPage page =
      feed.ask([](BlockQueries& q) { return q.page(host(), BlockColumn::kId, false, 0, 10); });
  EXPECT_EQ(ids_of(page.rows), (std::vector<int64_t>{1, 2, 3}));
  // A young block freed after a query is seen freed by the next one.
  feed.free(140, 0x1000);
  EXPECT_EQ(feed.largest(at(200)).matching_bytes, 32u);
  EXPECT_EQ(feed.ask([](BlockQueries& q) { return q.find(1); })->free_ns, 140);
}

TEST(BlockIndex, PromotedBlocksAreClosedAtTheirFree) {
  BlockIndexOptions options;
  options.promote_after_ns = 10;
  Feed feed(options);
  feed.malloc(100, 0x1000, 64);
  feed.malloc(200, 0x2000, 1);  // moves event time past the first block's promotion
  EXPECT_EQ(feed.ask([](BlockQueries& q) { return q.find(1); })->free_ns, kStillLive);
  feed.free(5000, 0x1000);
  feed.malloc(5001, 0x3000, 1);
  EXPECT_EQ(feed.ask([](BlockQueries& q) { return q.find(1); })->free_ns, 5000);
  EXPECT_EQ(feed.largest(at(4999)).matching_bytes, 65u);
  EXPECT_EQ(feed.largest(at(5000)).matching_bytes, 1u);
  // Long after the last allocation: the stored live block and the young one.
  EXPECT_EQ(feed.largest(at(1'000'000)).matching_bytes, 2u);
  EXPECT_EQ(feed.largest(range(1'000'000, 2'000'000)).matching_blocks, 2u);
}

TEST(BlockIndex, TheTextFilterIsACaseInsensitiveSubstringOfAnyTextField) {
  Feed feed;
  feed.malloc(100, 0x1000, 1).owner = feed.text("Model@Encoder");
  feed.malloc(101, 0x2000, 2).name = feed.text("aten::MatMul");
  feed.malloc(102, 0x3000, 4).stack_python = feed.text("train.py:12 ENCODE_batch");
  feed.malloc(103, 0x4000, 8).stack_c = feed.text("libtorch.so encoder_kernel");
  feed.malloc(104, 0x5000, 16).owner = feed.text("optimizer");
  feed.malloc(105, 0x6000, 32).owner = feed.text("50%_done");
  const auto bytes = [&](const std::string& text) {
    BlockFilter f = host();
    f.text = text;
    return feed.largest(f).matching_bytes;
  };
  EXPECT_EQ(bytes("encod"), 1u + 4 + 8);
  EXPECT_EQ(bytes("ENCODER"), 1u + 8);
  EXPECT_EQ(bytes("matmul"), 2u);
  EXPECT_EQ(bytes("OPTIM"), 16u);
  EXPECT_EQ(bytes("%"), 32u) << "wildcards are text";
  EXPECT_EQ(bytes("_d"), 32u);
  EXPECT_EQ(bytes("nothing like it"), 0u);
  EXPECT_EQ(bytes(""), 63u);
  // Strings that arrive after a filter was used are matched too.
  feed.malloc(106, 0x7000, 64).name = feed.text("Encoder_Late");
  EXPECT_EQ(bytes("encod"), 1u + 4 + 8 + 64);
}

TEST(BlockIndex, PagesSortOnEveryColumnAndPageStably) {
  Feed feed;
  const uint32_t owners[] = {feed.text("b-owner"), feed.text("A-owner"), 0, feed.text("c")};
  const uint32_t names[] = {feed.text("zeta"), 0, feed.text("Alpha"), feed.text("mu")};
  struct Made {
    int64_t alloc, free;
    uint64_t addr, size;
    uint32_t tid;
    Layer layer;
    bool mmap;
  };
  const Made made[] = {
      {100, 900, 0x5000, 300, 3, Layer::kHost, false},
      {110, kStillLive, 0x1000, 100, 1, Layer::kHost, true},
      {120, 130, 0x9000, 300, 2, Layer::kHostPinned, false},
      {140, kStillLive, 0x3000, 50, 2, Layer::kHost, false},
      {150, 400, 0x7000, 700, 1, Layer::kHost, false},
      {160, 170, 0x2000, 100, 4, Layer::kHost, true},
      {180, kStillLive, 0x8000, 5, 3, Layer::kHostPinned, false},
  };
  std::vector<std::pair<int64_t, size_t>> frees;
  for (size_t i = 0; i < std::size(made); ++i) {
    // Let frees due by now come first.
    std::sort(frees.begin(), frees.end());
    while (!frees.empty() && frees.front().first <= made[i].alloc) {
      const Made& m = made[frees.front().second];
      MemEvent& f = feed.free(frees.front().first, m.addr);
      f.layer = m.layer;
      f.is_mmap = m.mmap;
      frees.erase(frees.begin());
    }
    MemEvent& e = feed.malloc(made[i].alloc, made[i].addr, made[i].size);
    e.tid = made[i].tid;
    e.layer = made[i].layer;
    e.is_mmap = made[i].mmap;
    e.owner = owners[i % 4];
    e.name = names[i % 4];
    e.allocation_id = 1000 - i * 7;
    if (made[i].free != kStillLive) frees.emplace_back(made[i].free, i);
  }
  std::sort(frees.begin(), frees.end());
  for (const auto& [ts, i] : frees) {
    MemEvent& f = feed.free(ts, made[i].addr);
    f.layer = made[i].layer;
    f.is_mmap = made[i].mmap;
  }
  const std::vector<BlockRow> rows = feed.ask(
      [](BlockQueries& q) { return q.page(host(), BlockColumn::kId, false, 0, 100).rows; });
  ASSERT_EQ(rows.size(), std::size(made));
  const int64_t newest = feed.index().status().indexed_until_ns;
  const auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(c));
    return s;
  };
  // Each column's value as the expected order compares it.
  const auto value = [&](const BlockRow& r,
                         BlockColumn c) -> std::tuple<int64_t, uint64_t, std::string> {
    switch (c) {
      case BlockColumn::kId:
        return {r.id, 0, ""};
      case BlockColumn::kAddr:
        return {0, r.addr, ""};
      case BlockColumn::kSize:
        return {0, r.size_bytes, ""};
      case BlockColumn::kAllocTime:
        return {r.alloc_ns, 0, ""};
      case BlockColumn::kFreeTime:
        return {r.free_ns, 0, ""};
      case BlockColumn::kLifetime:
        return {(r.free_ns == kStillLive ? newest : r.free_ns) - r.alloc_ns, 0, ""};
      case BlockColumn::kLayer:
        return {int64_t(r.layer) * 2 + r.is_mmap, 0, ""};
      case BlockColumn::kOwner:
        return {0, 0, lower(r.owner)};
      case BlockColumn::kName:
        return {0, 0, lower(r.name)};
      case BlockColumn::kThread:
        return {r.tid, 0, ""};
      case BlockColumn::kAllocationId:
        return {0, r.allocation_id, ""};
    }
    return {};
  };
  for (int c = 0; c <= int(BlockColumn::kAllocationId); ++c) {
    const BlockColumn column = BlockColumn(c);
    for (bool descending : {false, true}) {
      std::vector<BlockRow> expected = rows;
      std::stable_sort(expected.begin(), expected.end(), [&](const BlockRow& x, const BlockRow& y) {
        return descending ? value(y, column) < value(x, column)
                          : value(x, column) < value(y, column);
      });
      // Pages of 3 rows, put together, are the whole sorted table.
      std::vector<int64_t> paged;
      for (size_t offset = 0; offset < rows.size() + 3; offset += 3) {
        const BlockPage p = feed.ask(
            [&](BlockQueries& q) { return q.page(host(), column, descending, offset, 3); });
        EXPECT_EQ(p.total_rows, rows.size());
        EXPECT_EQ(p.offset, offset);
        const std::vector<int64_t> ids = ids_of(p.rows);
        paged.insert(paged.end(), ids.begin(), ids.end());
      }
      EXPECT_EQ(paged, ids_of(expected)) << "column " << c << (descending ? " descending" : "");
    }
  }
  // Live blocks sort after every freed one by free time.
  const BlockPage by_free =
      feed.ask([](BlockQueries& q) { return q.page(host(), BlockColumn::kFreeTime, false, 4, 3); });
  for (const BlockRow& r : by_free.rows) EXPECT_EQ(r.free_ns, kStillLive);
  // A filter pages only what it matches.
  BlockFilter pinned = host();
  pinned.layer = Layer::kHostPinned;
  const BlockPage p =
      feed.ask([&](BlockQueries& q) { return q.page(pinned, BlockColumn::kSize, true, 0, 10); });
  EXPECT_EQ(p.total_rows, 2u);
  EXPECT_EQ(ids_of(p.rows), (std::vector<int64_t>{3, 7}));
}

TEST(BlockIndex, FindGivesABlockByIdWithItsText) {
  Feed feed;
  MemEvent& e = feed.malloc(100, 0x1000, 64);
  e.owner = feed.text("owner@a");
  e.name = feed.text("aten::add");
  e.stack_python = feed.text("x.py:1");
  e.stack_c = feed.text("libc.so malloc");
  e.tid = 42;
  feed.free(200, 0x1000);
  feed.index().finish_input();
  const auto r = feed.ask([](BlockQueries& q) { return q.find(1); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->owner, "owner@a");
  EXPECT_EQ(r->name, "aten::add");
  EXPECT_EQ(r->stack_python, "x.py:1");
  EXPECT_EQ(r->stack_c, "libc.so malloc");
  EXPECT_EQ(r->tid, 42u);
  EXPECT_EQ(r->free_ns, 200);
  EXPECT_FALSE(feed.ask([](BlockQueries& q) { return q.find(2); }).has_value());
  EXPECT_FALSE(feed.ask([](BlockQueries& q) { return q.find(0); }).has_value());
}

TEST(BlockIndex, LiveGroupsFollowTheEnginesStackRule) {
  Feed feed;
  const uint32_t own = feed.text("model");
  const uint32_t py = feed.text("train.py:5");
  const uint32_t c = feed.text("libfoo.so");
  const uint32_t op = feed.text("aten::mm");
  MemEvent& a = feed.malloc(100, 0x1000, 10);
  a.owner = own;
  a.stack_python = py;
  a.stack_c = c;
  MemEvent& b = feed.malloc(101, 0x2000, 20);
  b.owner = own;
  b.stack_python = py;
  b.name = op;
  MemEvent& d = feed.malloc(102, 0x3000, 40);
  d.owner = own;
  d.stack_c = c;
  d.name = op;
  feed.malloc(103, 0x4000, 80).name = op;
  feed.malloc(104, 0x5000, 160).is_mmap = true;
  feed.malloc(105, 0x6000, 1000);
  feed.free(106, 0x6000);
  const auto groups = feed.ask([](BlockQueries& q) { return q.live_groups(at(200)); });
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_TRUE(groups[0].is_mmap);
  EXPECT_EQ(groups[0].bytes, 160u);
  EXPECT_EQ(groups[1].stack, "aten::mm");
  EXPECT_EQ(groups[1].owner, "");
  EXPECT_EQ(groups[2].stack, "libfoo.so");
  EXPECT_EQ(groups[2].owner, "model");
  EXPECT_EQ(groups[3].stack, "train.py:5");
  EXPECT_EQ(groups[3].bytes, 30u);
  EXPECT_EQ(groups[3].blocks, 2u);
  // The instant is t1; t0 does not matter.
  BlockFilter f = at(105);
  f.t0_ns = 0;
  const auto then = feed.ask([&](BlockQueries& q) { return q.live_groups(f); });
  uint64_t total = 0;
  for (const BlockGroup& g : then) total += g.bytes;
  EXPECT_EQ(total, 1310u);
}

TEST(BlockIndex, WithoutASpoolEventsPastTheQueueBoundAreDroppedAndCounted) {
  BlockIndexOptions options;
  options.max_queued_events = 4;
  options.max_spool_bytes = 0;
  Feed feed(options);
  for (int i = 0; i < 100; ++i) feed.malloc(1000 + i, 0x1000 + i * 16, 8);
  feed.add();  // one batch: 4 fit, 96 do not
  // A query runs after the events added before it: the status then counts them.
  const viewdata::BlockIndexStatus s = feed.ask([&](BlockQueries&) { return 0; }) == 0
                                           ? feed.index().status()
                                           : viewdata::BlockIndexStatus{};
  EXPECT_EQ(s.events_added, 100u);
  EXPECT_EQ(s.events_dropped, 96u);
  EXPECT_EQ(s.events_indexed, 4u);
  EXPECT_EQ(s.dropped_from_ns, 1004);
  EXPECT_EQ(s.dropped_to_ns, 1099);
  EXPECT_EQ(feed.largest(host()).matching_blocks, 4u);
  // Many small batches: whatever is dropped, the counts add up and nothing breaks.
  for (int i = 0; i < 2000; ++i) {
    feed.free(2000 + i, 0x1000 + (i % 100) * 16);
    feed.malloc(2000 + i, 0x1000 + (i % 100) * 16, 8);
    feed.add();
  }
  const BlockSet all = feed.largest(host());
  const viewdata::BlockIndexStatus end = feed.index().status();
  EXPECT_EQ(end.events_added, 4100u);
  EXPECT_EQ(end.events_indexed + end.events_dropped, end.events_added);
  EXPECT_EQ(all.matching_blocks, end.blocks);
}

// A live index in a flood: past its queue, events wait on disk rather than be dropped, and
// the index takes every one of them, with their texts, in order.
TEST(BlockIndex, EventsPastTheQueueWaitOnDiskAndAreAllIndexed) {
  BlockIndexOptions options;
  options.max_queued_events = 4;
  Feed feed(options);
  const uint32_t owner = feed.text("optimizer state");
  for (int i = 0; i < 100; ++i) feed.malloc(1000 + i, 0x1000 + i * 16, 8).owner = owner;
  feed.add();  // one batch, larger than the queue
  for (int i = 0; i < 2000; ++i) {
    feed.free(2000 + 2 * i, 0x1000 + (i % 100) * 16);
    feed.malloc(2001 + 2 * i, 0x1000 + (i % 100) * 16, 8 + i % 3);
    feed.add();
  }
  feed.index().finish_input();  // taken after everything that waits on disk
  const BlockSet all = feed.largest(host());
  const viewdata::BlockIndexStatus s = feed.index().status();
  EXPECT_EQ(s.events_added, 4100u);
  EXPECT_EQ(s.events_dropped, 0u);
  EXPECT_EQ(s.events_indexed, 4100u);
  EXPECT_EQ(s.unmatched_frees, 0u);
  EXPECT_EQ(s.queued_events, 0u);
  EXPECT_EQ(s.spooled_events, 0u);
  EXPECT_EQ(s.spool_error, "");
  EXPECT_EQ(all.matching_blocks, 2100u);
  EXPECT_EQ(all.matching_bytes, 100u * 8 + 667u * 8 + 667u * 9 + 666u * 10);
  const auto first = feed.ask([](BlockQueries& q) { return q.find(1); });
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->owner, "optimizer state");
  EXPECT_EQ(first->alloc_ns, 1000);
  EXPECT_EQ(first->free_ns, 2000);
  const auto last = feed.ask([](BlockQueries& q) { return q.find(2100); });
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->alloc_ns, 2001 + 2 * 1999);
  EXPECT_EQ(last->free_ns, viewdata::kStillLive);
}

// A view asks while the index is behind a flood: it is answered from what is indexed, not
// after the whole backlog on disk.
TEST(BlockIndex, AQueryIsAnsweredAheadOfTheEventsWaitingOnDisk) {
  BlockIndexOptions options;
  options.max_queued_events = 4;
  Feed feed(options);
  test::HeldBlockIndex held(feed.index());
  for (int i = 0; i < 4; ++i) feed.malloc(100 + i, 0x1000 + i * 16, 8);
  feed.add();  // fits the queue
  for (int i = 0; i < 100; ++i) feed.malloc(200 + i, 0x2000 + i * 16, 8);
  feed.add();  // does not: on disk
  const viewdata::BlockIndexStatus behind = feed.index().status();
  EXPECT_EQ(behind.spooled_events, 100u);
  EXPECT_EQ(behind.queued_events, 104u);
  EXPECT_EQ(behind.events_dropped, 0u);
  std::promise<std::tuple<uint64_t, int64_t, int64_t>> seen;
  feed.index().post([&](BlockQueries& q) {
    LifetimeRequest r;
    r.pid = kPid;
    r.device = kHostDevice;
    r.t0_ns = 0;
    r.t1_ns = 1000;
    EXPECT_EQ(viewdata::compute_breakdown(q, kPid, kHostDevice, 500).covered_until_ns, 103);
    seen.set_value({q.largest(host(), 10).matching_blocks, q.covered_until_ns(),
                    compute_lifetime(q, r).t1_ns});
  });
  held.release();
  const auto [blocks, covered, drawn_to] = seen.get_future().get();
  EXPECT_EQ(blocks, 4u);
  // What the answer knows ends at the newest event indexed: the lifetime graph covers up to
  // there, and hatches the rest.
  EXPECT_EQ(covered, 103);
  EXPECT_EQ(drawn_to, 103);
  feed.index().finish_input();
  EXPECT_EQ(feed.largest(host()).matching_blocks, 104u);
  EXPECT_EQ(feed.ask([](BlockQueries& q) { return q.covered_until_ns(); }),
            std::numeric_limits<int64_t>::max());
}

// A live session's index keeps to the window's share of a core while the program runs
// (here a thousandth, the cores said busy; the recording's threads at a whole core, which
// never waits): it waits between batches, a view's query is answered ahead of the events
// still queued in memory, and once the program has ended the index takes everything at full
// speed.
TEST(BlockIndex, PacedBehindTheProgramItAnswersQueriesAheadOfTheEventsItHasNotIndexed) {
  Feed feed;
  auto share = std::make_shared<CpuShare>();
  share->limited.store(true);
  share->permille.store(1000);
  share->view_permille.store(1);
  share->cores_busy = [] { return true; };
  feed.index().pace_by(share);
  constexpr int kBatches = 100, kPerBatch = 4000;  // far more than the 20 ms burst's work
  {
    test::HeldBlockIndex held(feed.index());  // all of it queued in memory first
    for (int b = 0; b < kBatches; ++b) {
      for (int i = 0; i < kPerBatch; ++i) {
        const int64_t t = 1000 + int64_t(b) * kPerBatch + i;
        feed.malloc(t, 0x100000 + uint64_t(t) * 16, 8);
      }
      feed.add();
    }
  }
  ASSERT_TRUE(e2e::poll_until([&] { return feed.index().status().paced_waits != 0; },
                              std::chrono::seconds(30)))
      << "the index never waited for its share";
  std::promise<std::tuple<uint64_t, int64_t, size_t>> seen;
  auto answer = seen.get_future();
  feed.index().post([&](BlockQueries& q) {
    seen.set_value({q.largest(host(), 1).matching_blocks, q.covered_until_ns(),
                    feed.index().status().queued_events});
  });
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the query waited behind the paced events";
  const auto [blocks, covered, queued] = answer.get();
  constexpr uint64_t kEvents = uint64_t(kBatches) * kPerBatch;
  EXPECT_LT(blocks, kEvents);
  EXPECT_GT(queued, 0u);
  EXPECT_EQ(covered, 1000 + int64_t(blocks) - 1) << "the answer ends at the newest block indexed";
  share->limited.store(false);  // the program ended
  ASSERT_TRUE(e2e::poll_until([&] { return feed.index().status().queued_events == 0; },
                              std::chrono::seconds(30)));
  EXPECT_EQ(feed.largest(host(), 1).matching_blocks, kEvents);
  EXPECT_EQ(feed.index().status().events_dropped, 0u);
}

// What does not fit on disk either is dropped and counted, with why; and while anything
// waits on disk, later events are never indexed ahead of it.
TEST(BlockIndex, PastAFullSpoolEventsAreDroppedAndCounted) {
  BlockIndexOptions options;
  options.max_queued_events = 4;
  options.max_spool_bytes = 16 + 64 * 50 + 32;  // one batch of 50, and less than one more event
  Feed feed(options);
  test::HeldBlockIndex held(feed.index());
  for (int i = 0; i < 4; ++i) feed.malloc(100 + i, 0x1000 + i * 16, 8);
  feed.add();  // the queue
  for (int i = 0; i < 50; ++i) feed.malloc(200 + i, 0x2000 + i * 16, 8);
  feed.add();  // the spool
  for (int i = 0; i < 50; ++i) feed.malloc(300 + i, 0x3000 + i * 16, 8);
  feed.add();  // too much for the spool: dropped
  feed.malloc(400, 0x4000, 8);
  feed.add();  // would fit the queue, but must not pass the spool: dropped too
  const viewdata::BlockIndexStatus s = feed.index().status();
  EXPECT_EQ(s.events_added, 105u);
  EXPECT_EQ(s.spooled_events, 50u);
  EXPECT_EQ(s.events_dropped, 51u);
  EXPECT_EQ(s.dropped_from_ns, 300);
  EXPECT_EQ(s.dropped_to_ns, 400);
  EXPECT_NE(s.spool_error.find("is full"), std::string::npos) << s.spool_error;
  held.release();
  feed.index().finish_input();
  const BlockSet all = feed.largest(host());
  EXPECT_EQ(all.matching_blocks, 54u);
  EXPECT_EQ(feed.index().status().events_indexed, 54u);
  // Drained, the spool takes events again, and the queue too.
  feed.malloc(500, 0x5000, 8);
  EXPECT_EQ(feed.largest(host()).matching_blocks, 55u);
}

TEST(BlockIndex, AReplayWaitsForRoomRatherThanDrop) {
  BlockIndexOptions options;
  options.max_queued_events = 4;
  options.wait_for_room = true;
  Feed feed(options);
  for (int batch = 0; batch < 50; ++batch) {
    for (int i = 0; i < 10; ++i) {
      const uint64_t addr = 0x1000 + uint64_t(i) * 16;
      if (batch != 0) feed.free(1000 + batch * 100 + i * 2, addr);
      feed.malloc(1001 + batch * 100 + i * 2, addr, 8);
    }
    feed.add();  // larger than the queue: it goes whole once the queue is empty
  }
  const BlockSet s = feed.largest(host());
  const viewdata::BlockIndexStatus st = feed.index().status();
  EXPECT_EQ(st.events_dropped, 0u);
  EXPECT_EQ(st.events_indexed, 990u);
  EXPECT_EQ(st.unmatched_frees, 0u);
  EXPECT_EQ(s.matching_blocks, 500u);
}

TEST(BlockIndex, CreateFailsWithOneLineWhenTheFileCannotBeMade) {
  test::TempDir dir;
  std::string error;
  BlockIndexOptions options;
  options.path = dir.file("missing/dir/blocks.db");
  EXPECT_EQ(BlockIndex::create(options, &error), nullptr);
  EXPECT_NE(error.find(options.path), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(BlockIndex, ItsFileIsRemovedWithIt) {
  test::TempDir dir;
  BlockIndexOptions options;
  options.path = dir.file("blocks.db");
  {
    Feed feed(options);
    feed.malloc(100, 0x1000, 8);
    EXPECT_EQ(feed.largest(host()).matching_blocks, 1u);
    EXPECT_TRUE(std::filesystem::exists(options.path));
  }
  EXPECT_FALSE(std::filesystem::exists(options.path));
  // Never someone else's file.
  std::string error;
  std::FILE* f = std::fopen(options.path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(BlockIndex::create(options, &error), nullptr);
  EXPECT_TRUE(std::filesystem::exists(options.path));
}

TEST(BlockIndex, ByDefaultItsFileIsInTMPDIR) {
  test::TempDir dir;
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", dir.file("").c_str(), 1);
  const auto files = [&] {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.file("")))
      n += entry.path().filename().string().rfind("memtap-blocks-", 0) == 0;
    return n;
  };
  {
    Feed feed;
    if (old)
      setenv("TMPDIR", saved.c_str(), 1);
    else
      unsetenv("TMPDIR");
    feed.malloc(100, 0x1000, 8);
    EXPECT_EQ(feed.largest(host()).matching_blocks, 1u);
    EXPECT_EQ(files(), 1u);
  }
  EXPECT_EQ(files(), 0u);
}

TEST(BlockIndex, AFullDiskIsAnErrorAndQueriesAnswerEmpty) {
  test::TempDir dir;
  BlockIndexOptions options;
  options.path = dir.file("blocks.db");
  options.max_file_bytes = 128 * 1024;
  Feed feed(options);
  for (int i = 0; i < 50000; ++i) {
    feed.malloc(100 + 2 * i, 0x1000, 8);
    feed.free(101 + 2 * i, 0x1000);
  }
  feed.index().finish_input();
  const BlockSet s = feed.largest(host());
  const viewdata::BlockIndexStatus st = feed.index().status();
  EXPECT_NE(st.error.find(options.path), std::string::npos) << st.error;
  EXPECT_NE(st.error.find("full"), std::string::npos) << st.error;
  EXPECT_TRUE(s.blocks.empty());
  EXPECT_EQ(s.matching_blocks, 0u);
  EXPECT_FALSE(feed.ask([](BlockQueries& q) { return q.find(1); }).has_value());
  EXPECT_TRUE(feed.ask([](BlockQueries& q) { return q.live_groups(at(200)); }).empty());
  EXPECT_TRUE(
      feed.ask([](BlockQueries& q) { return q.page(host(), BlockColumn::kSize, true, 0, 10).rows; })
          .empty());
  // More events after the failure are taken and ignored.
  feed.malloc(1'000'000, 0x1000, 8);
  EXPECT_EQ(feed.largest(host()).matching_blocks, 0u);
  EXPECT_EQ(feed.index().status().events_indexed, 100001u);
}

// The live HOST heap at the engine's Allocated peak, from a recording the real writer made
// and the real replay: what the breakdown and the pool view show at the peak.
TEST(BlockIndex, TheLiveHeapAtTheAllocatedPeakIsTheEnginesPeak) {
  test::TempDir dir;
  test::RecordingBuilder b;
  std::mt19937_64 rng(3);
  std::vector<uint64_t> live;
  double ms = 1;
  for (int i = 0; i < 3000; ++i) {
    ms += 0.01;
    if (!live.empty() && rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      b.free(ms, live[k]);
      live.erase(live.begin() + long(k));
      continue;
    }
    const uint64_t addr = 0x100000 + uint64_t(i) * 0x100;
    b.malloc(ms, addr, 1 + rng() % 5000, i % 2 ? "net@fc" : "");
    live.push_back(addr);
    if (i % 100 == 0) {
      ms += 0.01;
      b.malloc(ms, 0x7f0000000000 + uint64_t(i) * 0x10000, 1 << 20, "", "", true);  // mappings
    }
  }
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const timeline::ScopeSummary summary =
      test::engine_query(*source, [&](const viewdata::EngineView& e) {
        return e.analyzer.timeline().summary(b.pid(), kHostDevice);
      });
  const timeline::CurvePoint peak = summary.peak[int(timeline::Curve::kAllocated)];
  ASSERT_GT(peak.value_bytes, 0);
  BlockFilter heap;
  heap.pid = b.pid();
  heap.t0_ns = heap.t1_ns = peak.ts_ns;
  heap.layer = Layer::kHost;
  heap.mmap = false;
  const BlockSet s =
      test::block_query(*source, [&](BlockQueries& q) { return q.largest(heap, 1); });
  EXPECT_EQ(int64_t(s.matching_bytes), peak.value_bytes);
  const auto groups =
      test::block_query(*source, [&](BlockQueries& q) { return q.live_groups(heap); });
  uint64_t grouped = 0;
  for (const BlockGroup& g : groups) grouped += g.bytes;
  EXPECT_EQ(int64_t(grouped), peak.value_bytes);
}

// Both forms of the recording memtap writes (text rows and --compact).
TEST(BlockIndex, AReplayIndexesEveryBlockOfItsRecording) {
  for (bool compact : {false, true}) {
    SCOPED_TRACE(compact ? "compact" : "text");
    test::TempDir dir;
    test::RecordingBuilder b;
    b.malloc(1, 0x1000, 100, "model@a", "train.py:3");
    b.malloc(2, 0x2000, 300);
    b.free(3, 0x1000);
    b.malloc(4, 0x3000, 4096, "", "", true);
    b.free(5, 0x9999);  // nothing there
    const std::string path = dir.file("r.db");
    b.write(path, compact);
    auto source = test::open_loaded(path);
    ASSERT_NE(source, nullptr);
    const viewdata::BlockIndexStatus st = source->blocks().status();
    EXPECT_EQ(st.blocks, 3u);
    EXPECT_EQ(st.events_added, 5u);
    EXPECT_EQ(st.events_indexed, 5u);
    EXPECT_EQ(st.unmatched_frees, 1u);
    EXPECT_TRUE(st.error.empty()) << st.error;
    BlockFilter f;
    f.pid = b.pid();
    const BlockPage p = test::block_query(
        *source, [&](BlockQueries& q) { return q.page(f, BlockColumn::kId, false, 0, 10); });
    ASSERT_EQ(p.rows.size(), 3u);
    EXPECT_EQ(p.rows[0].owner, "model@a");
    EXPECT_EQ(p.rows[0].stack_python, "train.py:3");
    EXPECT_EQ(p.rows[0].alloc_ns, b.at(1));
    EXPECT_EQ(p.rows[0].free_ns, b.at(3));
    EXPECT_EQ(p.rows[1].size_bytes, 300u);
    EXPECT_EQ(p.rows[1].free_ns, kStillLive);
    EXPECT_TRUE(p.rows[2].is_mmap);
    EXPECT_EQ(p.rows[2].allocation_id, 3u);
  }
}

}  // namespace
}  // namespace memtap
