// A session far longer than the full-resolution window: the timeline's memory stays under
// its stated bound (and the bound does not move as the stream goes on), old ranges still
// come back as exact min/max envelopes, and ingest speed is measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "monitor/engine/timeline/timeline.h"
#include "tests/unit/sanitized_build.h"
#include "tests/unit/timeline/timeline_events.h"

namespace memtap::timeline {
namespace {

using namespace testing_events;

#if defined(MEMTAP_SANITIZED_BUILD)
constexpr uint64_t kScale = 10;  // sanitizers run ~10x slower; the window still rolls
#else
constexpr uint64_t kScale = 1;
#endif

constexpr uint32_t kPid = 1;
constexpr int64_t KiB = 1024, GiB = 1024 * 1024 * 1024;
constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kStep = 100;  // ns between events

// Event i of a host process: blocks of 1000 events, 500 MALLOCs of 1 KiB (four owners)
// then the 500 FREEs, so the heap saws between 0 and 500 KiB; every 1000th block also maps
// 64 KiB before it and unmaps it after. At `spike` a 1 GiB block comes and goes at the
// same instant.
struct SawtoothStream {
  uint64_t spike;
  uint64_t next = 0;

  static int64_t ts(uint64_t i) { return kStart + int64_t(i) * kStep; }

  void fill(std::vector<MemEvent>& out, size_t count) {
    out.clear();
    for (size_t n = 0; n < count; ++n, ++next) {
      const uint64_t i = next, block = i / 1000, j = i % 1000;
      const uint64_t k = j < 500 ? j : j - 500;
      MemEvent e = block_event(i, j < 500, 0x10000 + k * 64);
      e.owner = uint32_t(k % 4);
      const bool mapped = block % 1000 == 7;
      if (mapped && j == 0) out.push_back(mmap_at(ts(i), kPid, 0x7000'0000, 64 * KiB, false));
      out.push_back(e);
      if (mapped && j == 999) out.push_back(mmap_at(ts(i), kPid, 0x7000'0000, 64 * KiB, true));
      if (i == spike) {
        out.push_back(malloc_at(ts(i), kPid, kHostDevice, Layer::kHost, 0x9999'0000, GiB));
        out.push_back(free_at(ts(i), kPid, kHostDevice, Layer::kHost, 0x9999'0000, GiB));
      }
    }
  }

  static MemEvent block_event(uint64_t i, bool alloc, uint64_t addr) {
    return alloc ? malloc_at(ts(i), kPid, kHostDevice, Layer::kHost, addr, KiB)
                 : free_at(ts(i), kPid, kHostDevice, Layer::kHost, addr, KiB);
  }

  // Heap bytes live after event i (before the spike's pair, which nets to 0).
  static int64_t heap_after(uint64_t i) {
    uint64_t j = i % 1000;
    return j < 500 ? int64_t(j + 1) * KiB : int64_t(999 - j) * KiB;
  }
};

void envelope_extent(const CurveQuery& q, int64_t* lo, int64_t* hi) {
  *lo = INT64_MAX;
  *hi = INT64_MIN;
  for (const EnvelopeBucket& b : q.envelope) {
    *lo = std::min(*lo, b.min_bytes);
    *hi = std::max(*hi, b.max_bytes);
  }
}

TEST(TimelineLongStream, MemoryStaysUnderTheBoundAndOldRangesKeepTheirEnvelope) {
  const uint64_t total = 50'000'000 / kScale;
  const uint64_t spike = total / 10 + 250;  // mid-climb of a sawtooth, long before the window
  Timeline t;
  SawtoothStream stream{spike};
  std::vector<MemEvent> chunk;
  size_t bound_at_fifth = 0;
  while (stream.next < total) {
    stream.fill(chunk, size_t(std::min<uint64_t>(1 << 16, total - stream.next)));
    t.add(chunk.data(), chunk.size());
    if (bound_at_fifth == 0 && stream.next >= total / 5)
      bound_at_fifth = t.stats().memory_bound_bytes;
  }
  TimelineStats st = t.stats();
  std::printf("long stream: %llu events, %zu series, memory %.1f MB, bound %.1f MB\n",
              (unsigned long long)st.events, st.series, double(st.memory_bytes) / 1e6,
              double(st.memory_bound_bytes) / 1e6);
  const uint64_t mapped_blocks = (total / 1000 + 992) / 1000;  // blocks 7, 1007, ...
  EXPECT_EQ(st.events, total + 2 + 2 * mapped_blocks);
  EXPECT_LE(st.memory_bytes, st.memory_bound_bytes);
  // The bound depends on the series, not on how long the stream ran.
  EXPECT_EQ(st.memory_bound_bytes, bound_at_fifth);
  // 4 curves, 2 layers (heap, mmap), 4 owners and 1 stream of heap blocks.
  EXPECT_EQ(st.series, 11u);
  TimelineConfig defaults;
  EXPECT_LE(st.memory_bound_bytes, 4 * Series::bound_bytes(defaults.curve_limits) +
                                       7 * Series::bound_bytes(defaults.group_limits) + 64 * 1024);

  const SeriesId allocated = t.find({kPid, kHostDevice, Curve::kAllocated});
  const Series& series = t.data(allocated);
  EXPECT_EQ(series.points(), total + 2);
  EXPECT_FALSE(series.window_covers(SawtoothStream::ts(spike)));

  // Around the spike: 40,000 events, long gone from the window.
  CurveQuery q = t.points(allocated, SawtoothStream::ts(spike - 20'000),
                          SawtoothStream::ts(spike + 20'000), 100);
  ASSERT_EQ(q.resolution, Resolution::kEnvelope);
  ASSERT_FALSE(q.envelope.empty());
  EXPECT_LE(q.envelope.size(), 100u);
  int64_t lo, hi;
  envelope_extent(q, &lo, &hi);
  EXPECT_EQ(hi, SawtoothStream::heap_after(spike) + GiB);
  EXPECT_EQ(lo, 0);

  // An old range without the spike: exactly the sawtooth's extent.
  const uint64_t quiet = total * 2 / 5;
  q = t.points(allocated, SawtoothStream::ts(quiet), SawtoothStream::ts(quiet + 10'000), 50);
  ASSERT_EQ(q.resolution, Resolution::kEnvelope);
  envelope_extent(q, &lo, &hi);
  EXPECT_EQ(hi, 500 * KiB);
  EXPECT_EQ(lo, 0);
  for (size_t i = 1; i < q.envelope.size(); ++i)
    EXPECT_GT(q.envelope[i].t_first_ns, q.envelope[i - 1].t_last_ns);

  // The whole session in 2,000 buckets still shows the spike.
  q = t.points(allocated, SawtoothStream::ts(0), SawtoothStream::ts(total), 2000);
  ASSERT_EQ(q.resolution, Resolution::kEnvelope);
  EXPECT_LE(q.envelope.size(), 2000u);
  envelope_extent(q, &lo, &hi);
  EXPECT_EQ(hi, SawtoothStream::heap_after(spike) + GiB);

  // The newest stretch is still at full resolution.
  q = t.points(allocated, SawtoothStream::ts(total - 100), SawtoothStream::ts(total), 1000);
  ASSERT_EQ(q.resolution, Resolution::kFull);
  EXPECT_EQ(q.points.back().value_bytes, SawtoothStream::heap_after(total - 1));

  ScopeSummary s = t.summary(kPid, kHostDevice);
  EXPECT_EQ(s.peak[int(Curve::kAllocated)].ts_ns, SawtoothStream::ts(spike));
  EXPECT_EQ(s.peak[int(Curve::kAllocated)].value_bytes, SawtoothStream::heap_after(spike) + GiB);
  EXPECT_EQ(s.clamped_frees, 0u);
}

TEST(TimelineLongStream, OldRangesComeFromTheDetailSourceWhenThereIsOne) {
  TimelineConfig config;
  config.curve_limits = SeriesLimits{1024, PyramidLimits{16, 64, 6}};
  Timeline t(config);
  SawtoothStream stream{~uint64_t{0}};
  std::vector<MemEvent> chunk;
  stream.fill(chunk, 100'000);
  t.add(chunk.data(), chunk.size());
  SeriesKey asked;
  t.set_detail_source([&](const SeriesKey& key, int64_t t0, int64_t, std::vector<CurvePoint>& out) {
    asked = key;
    out = {{t0, 1}, {t0 + 1, 2}, {t0 + 2, 3}};
    return true;
  });
  const SeriesId reserved = t.find({kPid, kHostDevice, Curve::kReserved});
  CurveQuery q = t.points(reserved, SawtoothStream::ts(10), SawtoothStream::ts(20), 100);
  EXPECT_TRUE(q.from_detail_source);
  EXPECT_EQ(q.resolution, Resolution::kFull);
  EXPECT_EQ(q.points.size(), 3u);
  EXPECT_EQ(asked.curve, Curve::kReserved);
  // Recent ranges never ask.
  q = t.points(reserved, SawtoothStream::ts(99'990), SawtoothStream::ts(99'999), 100);
  EXPECT_FALSE(q.from_detail_source);
  t.set_detail_source(
      [](const SeriesKey&, int64_t, int64_t, std::vector<CurvePoint>&) { return false; });
  q = t.points(reserved, SawtoothStream::ts(10), SawtoothStream::ts(20), 100);
  EXPECT_EQ(q.resolution, Resolution::kEnvelope);
}

// A mixed stream: host heap blocks without labels, and a device where a framework pool
// with owners and streams hands out blocks over driver segments.
TEST(TimelineLongStream, IngestThroughput) {
  const size_t total = 10'000'000 / kScale;
  std::vector<MemEvent> events;
  events.reserve(total);
  uint64_t state = 3;
  for (size_t i = 0; i < total; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t ts = kStart + int64_t(i) * kStep;
    const uint64_t j = i % 1000, k = j < 500 ? j : j - 500;
    const bool alloc = j < 500;
    if ((i / 1000) % 4 != 3) {
      events.push_back(alloc ? malloc_at(ts, kPid, kHostDevice, Layer::kHost, 0x1000 + k * 32, 32)
                             : free_at(ts, kPid, kHostDevice, Layer::kHost, 0x1000 + k * 32, 32));
    } else if (j % 100 == 0 || j % 100 == 99) {
      events.push_back(j % 100 == 0
                           ? malloc_at(ts, kPid, 0, Layer::kHal, 0x7f00'0000 + j, 1 << 20)
                           : free_at(ts, kPid, 0, Layer::kHal, 0x7f00'0000 + j - 99, 1 << 20));
    } else {
      events.push_back(pta(alloc ? MemEventKind::kMalloc : MemEventKind::kFree, ts, kPid, 0,
                           0x7f00'0000 + k * 512, 512, int64_t(k) * 512, 1 << 22,
                           alloc ? uint32_t(1 + (state >> 61)) : 0, alloc ? (state >> 62) : 0));
    }
  }
  Timeline t;
  auto start = std::chrono::steady_clock::now();
  for (size_t at = 0; at < total; at += 1 << 16)
    t.add(events.data() + at, std::min<size_t>(1 << 16, total - at));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("ingest: %zu events in %.3f s = %.1f M events/s (one core)\n", total, seconds,
              double(total) / seconds / 1e6);
  EXPECT_EQ(t.stats().events, total);
  EXPECT_EQ(t.scopes().size(), 2u);
  EXPECT_LE(t.stats().memory_bytes, t.stats().memory_bound_bytes);
}

}  // namespace
}  // namespace memtap::timeline
