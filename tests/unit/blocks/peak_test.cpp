// Peak of Allocated and the live set at that moment, by owner, stack and name.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tests/unit/blocks/script.h"

namespace memtap::blocks::test {
namespace {

TEST(Peak, BreakdownIsTheLiveSetAtAnEarlyPeakNotTheLowerPlateauAfter) {
  Script s;
  s.malloc(1, 0x1000, 100, {"model", "train.py(10): fwd", "aten::mm"});
  s.malloc(2, 0x2000, 300, {"data", "loader.py(5): load", "aten::copy_"});
  s.malloc(3, 0x3000, 50, {"model", "train.py(10): fwd", "aten::mm"});  // 450: the peak
  s.free(4, 0x2000);
  s.malloc(5, 0x4000, 200, {"optim", "opt.py(7): step", "aten::add"});
  s.malloc(6, 0x5000, 50, {"optim", "opt.py(7): step", "aten::add"});  // plateau at 400
  s.free(7, 0x1000);
  BlockAnalyzer a(s.strings);
  s.feed(a);

  const PeakResult p = a.peak(100, kHostDevice);
  ASSERT_TRUE(p.found);
  EXPECT_EQ(p.basis, Basis::kHostHeap);
  EXPECT_EQ(p.ts_ns, 3);
  EXPECT_EQ(p.bytes, 450u);
  EXPECT_EQ(p.blocks, 3u);
  EXPECT_EQ(p.current_bytes, 300u);

  ASSERT_EQ(p.by_owner.size(), 2u);  // "optim" came after the peak
  EXPECT_EQ(p.by_owner[0].key.label, "data");
  EXPECT_EQ(p.by_owner[0].bytes, 300u);
  EXPECT_EQ(p.by_owner[0].blocks, 1u);
  EXPECT_DOUBLE_EQ(p.by_owner[0].share, 300.0 / 450.0);
  EXPECT_EQ(p.by_owner[1].key.label, "model");
  EXPECT_EQ(p.by_owner[1].bytes, 150u);
  EXPECT_EQ(p.by_owner[1].blocks, 2u);
  EXPECT_DOUBLE_EQ(p.by_owner[1].share, 150.0 / 450.0);

  ASSERT_EQ(p.by_stack.size(), 2u);
  EXPECT_EQ(p.by_stack[0].key.label, "loader.py(5): load");
  EXPECT_EQ(p.by_stack[0].key.kind, KeyKind::kStackPython);
  EXPECT_EQ(p.by_stack[1].key.label, "train.py(10): fwd");
  EXPECT_EQ(p.by_stack[1].bytes, 150u);

  ASSERT_EQ(p.by_name.size(), 2u);
  EXPECT_EQ(p.by_name[0].key.label, "aten::copy_");
  EXPECT_EQ(p.by_name[1].key.label, "aten::mm");
  EXPECT_EQ(p.by_name[1].blocks, 2u);
}

// Each owner at the peak names the stacks that hold its bytes there, largest first and at
// most kTopStacksPerOwner of them; another owner's blocks from the same stack do not count.
TEST(Peak, EachOwnerCarriesTheStacksThatHoldItsBytesAtThePeak) {
  Script s;
  s.malloc(1, 0x1000, 100, {"model", "train.py(10): fwd"});
  s.malloc(2, 0x2000, 300, {"model", "train.py(20): bwd"});
  s.malloc(3, 0x3000, 40, {"model", "train.py(30): opt"});
  s.malloc(4, 0x4000, 30, {"model", "train.py(40): log"});
  s.malloc(5, 0x5000, 500, {"data", "train.py(10): fwd"});  // the peak: 970
  s.free(6, 0x2000);
  s.malloc(7, 0x6000, 200, {"model", "train.py(50): after"});  // after the peak
  BlockAnalyzer a(s.strings);
  s.feed(a);

  const PeakResult p = a.peak(100, kHostDevice);
  ASSERT_EQ(p.by_owner.size(), 2u);
  EXPECT_EQ(p.by_owner[0].key.label, "data");
  ASSERT_EQ(p.by_owner[0].stacks.size(), 1u);
  EXPECT_EQ(p.by_owner[0].stacks[0].key.label, "train.py(10): fwd");
  EXPECT_EQ(p.by_owner[0].stacks[0].bytes, 500u);
  const PeakEntry& model = p.by_owner[1];
  EXPECT_EQ(model.key.label, "model");
  ASSERT_EQ(model.stacks.size(), kTopStacksPerOwner);
  EXPECT_EQ(model.stacks[0].key.label, "train.py(20): bwd");
  EXPECT_EQ(model.stacks[0].key.kind, KeyKind::kStackPython);
  EXPECT_EQ(model.stacks[0].bytes, 300u);
  EXPECT_EQ(model.stacks[0].blocks, 1u);
  EXPECT_DOUBLE_EQ(model.stacks[0].share, 300.0 / 970.0);
  EXPECT_EQ(model.stacks[1].key.label, "train.py(10): fwd");
  EXPECT_EQ(model.stacks[1].bytes, 100u) << "data's 500 bytes from the same stack are not model's";
  EXPECT_EQ(model.stacks[2].key.label, "train.py(30): opt");
  EXPECT_TRUE(p.by_stack[0].stacks.empty()) << "only owners carry stacks";
}

// msMemScope's PTA rows name no operator (N/A); its OP_LAUNCH events say which one ran.
// A block allocated inside one is named for the innermost operator of its thread, and a
// block that names itself, or is allocated on a thread running none, keeps its own name.
TEST(Peak, ABlockWithoutANameIsNamedForTheOperatorRunningOnItsThread) {
  Script s;
  s.op_start(1, "aten::linear");
  s.op_start(2, "aten::_to_copy");
  s.malloc(3, 0x1000, 400);
  s.malloc(4, 0x2000, 100, {"", "", "aten::empty"});
  s.op_end(5, "aten::_to_copy");
  s.malloc(6, 0x3000, 200);
  s.op_end(7, "aten::linear");
  s.tid = 2;
  s.malloc(8, 0x4000, 50);
  BlockAnalyzer a(s.strings);
  s.feed(a);

  const PeakResult p = a.peak(100, kHostDevice);
  ASSERT_EQ(p.by_name.size(), 4u);
  EXPECT_EQ(p.by_name[0].key.label, "aten::_to_copy");
  EXPECT_EQ(p.by_name[0].bytes, 400u);
  EXPECT_EQ(p.by_name[1].key.label, "aten::linear");
  EXPECT_EQ(p.by_name[1].bytes, 200u);
  EXPECT_EQ(p.by_name[2].key.label, "aten::empty");
  EXPECT_EQ(p.by_name[3].key.label, "") << "thread 2 ran no operator";
  EXPECT_EQ(p.by_name[3].bytes, 50u);
}

TEST(Peak, ALaterHigherPeakReplacesTheBreakdownAndEqualValueKeepsTheFirst) {
  Script s;
  s.malloc(1, 0x1000, 100, {"a"});
  s.free(2, 0x1000);
  s.malloc(3, 0x2000, 100, {"b"});  // equal to the peak: the first moment stays
  s.malloc(4, 0x3000, 10, {"c"});   // 110: new peak
  BlockAnalyzer a(s.strings);
  s.feed(a);
  PeakResult p = a.peak(100, kHostDevice);
  EXPECT_EQ(p.ts_ns, 4);
  EXPECT_EQ(p.bytes, 110u);
  ASSERT_EQ(p.by_owner.size(), 2u);
  EXPECT_EQ(p.by_owner[0].key.label, "b");
  EXPECT_EQ(p.by_owner[1].key.label, "c");

  Script t;
  t.malloc(1, 0x1000, 100, {"a"});
  t.free(2, 0x1000);
  t.malloc(3, 0x2000, 100, {"b"});
  BlockAnalyzer b(t.strings);
  t.feed(b);
  p = b.peak(100, kHostDevice);
  EXPECT_EQ(p.ts_ns, 1);
  ASSERT_EQ(p.by_owner.size(), 1u);
  EXPECT_EQ(p.by_owner[0].key.label, "a");
}

// Blocks of 2^63 - 1 bytes (hostile or corrupt input): three of them live pass 2^64. Live
// bytes saturate instead of wrapping to less than one of the blocks, and the totals give back
// no more than they hold as the blocks go.
// The largest pid on the host makes the key that also marks "no device looked up yet":
// the first such event must not take the empty mark for a device (it crashed `memtap
// report` of a file whose Process Id was 4294967295).
TEST(Peak, TheLargestPidIsAProcessLikeAnyOther) {
  Script s;
  s.pid = 4294967295u;
  s.malloc(1, 0x1000, 100);
  s.malloc(2, 0x2000, 300);
  s.free(3, 0x1000);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const PeakResult p = a.peak(4294967295u, kHostDevice);
  ASSERT_TRUE(p.found);
  EXPECT_EQ(p.bytes, 400u);
}

TEST(Peak, LiveBytesPast2To64SaturateInsteadOfWrapping) {
  constexpr uint64_t kHuge = (uint64_t{1} << 63) - 1;
  constexpr uint64_t kAll = ~uint64_t{0};
  Script s;
  s.malloc(1, 0x1000, kHuge, {"a"});
  s.malloc(2, 0x2000, kHuge, {"a"});
  s.malloc(3, 0x3000, kHuge, {"a"});
  BlockAnalyzer a(s.strings);
  s.feed(a);
  PeakResult p = a.peak(100, kHostDevice);
  EXPECT_EQ(p.bytes, kAll);
  EXPECT_EQ(p.ts_ns, 3);
  EXPECT_EQ(p.current_bytes, kAll);
  ASSERT_EQ(p.by_owner.size(), 1u);
  EXPECT_EQ(p.by_owner[0].bytes, kAll);
  const LifetimeResult l = a.lifetimes(100, kHostDevice);
  ASSERT_FALSE(l.layers.empty());
  EXPECT_EQ(l.layers[0].alloc_bytes, kAll);
  EXPECT_EQ(l.layers[0].live_bytes, kAll);

  Script t = s;
  t.free(4, 0x1000);
  t.free(5, 0x2000);
  t.free(6, 0x3000);
  BlockAnalyzer b(t.strings);
  t.feed(b);
  p = b.peak(100, kHostDevice);
  EXPECT_EQ(p.current_bytes, 0u);
  EXPECT_EQ(b.lifetimes(100, kHostDevice).layers[0].live_bytes, 0u);
}

TEST(Peak, StackFallsBackToTheCStackThenToTheName) {
  Script s;
  s.malloc(1, 0x1000, 30, {"", "py(1): f", "opA"});
  s.malloc(2, 0x2000, 20, {"", "", "opB", "libc(malloc+0x1) [0x1]"});
  s.malloc(3, 0x3000, 10, {"", "", "opC"});
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const PeakResult p = a.peak(100, kHostDevice);
  ASSERT_EQ(p.by_stack.size(), 3u);
  EXPECT_EQ(p.by_stack[0].key.kind, KeyKind::kStackPython);
  EXPECT_EQ(p.by_stack[1].key.kind, KeyKind::kStackC);
  EXPECT_EQ(p.by_stack[1].key.label, "libc(malloc+0x1) [0x1]");
  EXPECT_EQ(p.by_stack[2].key.kind, KeyKind::kName);
  EXPECT_EQ(p.by_stack[2].key.label, "opC");
  ASSERT_EQ(p.by_owner.size(), 1u);  // no owner: one entry with an empty label
  EXPECT_EQ(p.by_owner[0].key.string_id, 0u);
  EXPECT_EQ(p.by_owner[0].bytes, 60u);
}

TEST(Peak, HostCountsTheHeapOnlyAndDevicesThePoolOnceTheyHaveOne) {
  Script s;
  s.mmap(1, 0x100000, 1 * kMiB);  // not Allocated on the host
  s.malloc(2, 0x1000, 64);
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(3, 0x70000000, 4 * kMiB);
  s.device = 1;
  s.malloc(4, 0x80000000, 2 * kMiB);
  s.layer = Layer::kPta;
  s.malloc(5, 0x80000000, 512 * kKiB);  // device 1 has a pool: only PTA counts
  BlockAnalyzer a(s.strings);
  s.feed(a);

  EXPECT_EQ(a.peak(100, kHostDevice).bytes, 64u);
  const PeakResult d0 = a.peak(100, 0);
  EXPECT_EQ(d0.basis, Basis::kAllLayers);
  EXPECT_EQ(d0.bytes, 4 * kMiB);
  const PeakResult d1 = a.peak(100, 1);
  EXPECT_EQ(d1.basis, Basis::kPta);
  EXPECT_EQ(d1.bytes, 512 * kKiB);
  EXPECT_EQ(d1.ts_ns, 5);
  EXPECT_FALSE(a.peak(100, 7).found);
  EXPECT_FALSE(a.peak(999, kHostDevice).found);
}

TEST(Peak, TopNKeepsTheLargest) {
  Script s;
  s.malloc(1, 0x1000, 10, {"small"});
  s.malloc(2, 0x2000, 30, {"large"});
  s.malloc(3, 0x3000, 20, {"middle"});
  BlockAnalyzerOptions o;
  o.top_n = 2;
  BlockAnalyzer a(s.strings, o);
  s.feed(a);
  const PeakResult p = a.peak(100, kHostDevice);
  ASSERT_EQ(p.by_owner.size(), 2u);
  EXPECT_EQ(p.by_owner[0].key.label, "large");
  EXPECT_EQ(p.by_owner[1].key.label, "middle");
}

// The streaming breakdown against a brute force that keeps every live block and copies
// the whole live set at every new maximum.
TEST(Peak, BreakdownMatchesABruteForceOnARandomStream) {
  Script s;
  std::mt19937_64 rng(42);
  std::map<uint64_t, std::pair<uint64_t, int>> live;  // addr -> size, owner
  uint64_t live_bytes = 0, peak_bytes = 0;
  int64_t peak_ts = -1;
  std::map<int, uint64_t> at_peak;
  const char* owners[] = {"o0", "o1", "o2", "o3", "o4", "o5"};
  uint64_t next_addr = 0x10000;
  for (int64_t t = 1; t <= 20000; ++t) {
    // Drift upward for a while then down, so that the peak is not simply the end.
    const bool grow_phase = (t / 2000) % 2 == 0;
    const bool do_free = !live.empty() && (rng() % 100) < (grow_phase ? 40u : 60u);
    if (do_free) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      s.free(t, it->first);
      live_bytes -= it->second.first;
      live.erase(it);
    } else {
      const uint64_t size = 1 + rng() % 4096;
      const int owner = int(rng() % 6);
      s.malloc(t, next_addr, size, {owners[owner]});
      live[next_addr] = {size, owner};
      next_addr += 0x2000;
      live_bytes += size;
      if (live_bytes > peak_bytes) {
        peak_bytes = live_bytes;
        peak_ts = t;
        at_peak.clear();
        for (auto& [addr, b] : live) at_peak[b.second] += b.first;
      }
    }
  }
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const PeakResult p = a.peak(100, kHostDevice);
  EXPECT_EQ(p.ts_ns, peak_ts);
  EXPECT_EQ(p.bytes, peak_bytes);
  EXPECT_EQ(p.current_bytes, live_bytes);
  ASSERT_EQ(p.by_owner.size(), at_peak.size());
  for (const PeakEntry& e : p.by_owner) {
    const int owner = e.key.label[1] - '0';
    EXPECT_EQ(e.bytes, at_peak[owner]) << e.key.label;
  }
}

}  // namespace
}  // namespace memtap::blocks::test
