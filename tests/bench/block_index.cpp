// The window's block index (monitor/viewdata/block_index.h) on a synthetic session: how
// many blocks per second its thread pairs and stores, whether it keeps up with a live
// session of 1 M events/s, and how long each kind of query takes on the blocks it holds.
//
// The stream is fed as the engine feeds it (add() from one thread, batches of 4096 events,
// the engine's StringTable): an allocation storm of short-lived blocks (most of the events),
// blocks living 10 ms to 2 s, and a long-lived set that only grows (never freed); 1 us of
// event time per event, owners, operator names and Python stacks on every block.
//
//   memtap_bench_block_index [BLOCKS] [LIVE_SECONDS] [QUERIES]
//     BLOCKS        blocks in the session (default 4,000,000: 8 M events)
//     LIVE_SECONDS  seconds of the paced live run at 1 M events/s (default 5; 0: none)
//     QUERIES       0: indexing only (to profile it); default 1
#include "monitor/viewdata/block_index.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace {

using memtap::MemEvent;
using memtap::MemEventKind;
using memtap::StringTable;
using memtap::viewdata::BlockColumn;
using memtap::viewdata::BlockFilter;
using memtap::viewdata::BlockIndex;
using memtap::viewdata::BlockIndexOptions;
using memtap::viewdata::BlockIndexStatus;
using memtap::viewdata::BlockQueries;

constexpr size_t kBatch = 4096;
constexpr uint32_t kPid = 100;
constexpr int64_t kStart = 1'700'000'000'000'000'000;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Session {
  StringTable strings;
  std::vector<MemEvent> events;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

// BLOCKS blocks: 1024 storm slots reused round-robin-ish (lifetimes ~1 ms), 8 % living
// 10 ms-2 s, 2 % never freed.
Session make_session(size_t blocks) {
  Session s;
  uint32_t owners[32], names[128], stacks[2048];
  for (uint32_t i = 0; i < 32; ++i) owners[i] = s.strings.intern("model@block" + std::to_string(i));
  for (uint32_t i = 0; i < 128; ++i) names[i] = s.strings.intern("aten::op" + std::to_string(i));
  for (uint32_t i = 0; i < 2048; ++i)
    stacks[i] = s.strings.intern("train.py:" + std::to_string(i) +
                                 " forward\nmodel.py:" + std::to_string(i * 7) + " layer");
  s.events.reserve(blocks * 2);
  uint64_t state = 7;
  const auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 17;
  };
  std::vector<uint64_t> storm_live(1024, 0);
  struct Due {
    int64_t ts;
    uint64_t addr;
  };
  std::vector<Due> medium;  // a min-heap by time
  const auto later = [](const Due& a, const Due& b) { return a.ts > b.ts; };
  int64_t ts = kStart;
  uint64_t next_addr = 0x7f0000000000;
  uint64_t allocation_id = 0;
  const auto event = [&](MemEventKind kind, uint64_t addr) -> MemEvent& {
    MemEvent& e = s.events.emplace_back();
    e.ts_ns = ts += 1000;
    e.pid = kPid;
    e.tid = kPid;
    e.device = memtap::kHostDevice;
    e.kind = kind;
    e.addr = addr;
    return e;
  };
  for (size_t i = 0; i < blocks; ++i) {
    while (!medium.empty() && medium.front().ts <= ts) {
      event(MemEventKind::kFree, medium.front().addr);
      std::pop_heap(medium.begin(), medium.end(), later);
      medium.pop_back();
    }
    const uint64_t r = next();
    const int kind = int(r % 100);
    uint64_t addr;
    if (kind < 90) {
      const size_t slot = next() % storm_live.size();
      addr = 0x10000 + slot * 8192;
      if (storm_live[slot]) event(MemEventKind::kFree, addr);
      storm_live[slot] = 1;
    } else {
      addr = next_addr += 4096;
    }
    MemEvent& m = event(MemEventKind::kMalloc, addr);
    m.size_bytes = kind < 90 ? 16 + next() % 4080 : 4096 + next() % (1 << 22);
    m.allocation_id = ++allocation_id;
    m.owner = owners[next() % 32];
    m.name = names[next() % 128];
    m.stack_python = stacks[next() % 2048];
    if (kind >= 90 && kind < 98) {
      medium.push_back({ts + 10'000'000 + int64_t(next() % 1'990'000'000), addr});
      std::push_heap(medium.begin(), medium.end(), later);
    }
  }
  s.first_ns = s.events.front().ts_ns;
  s.last_ns = s.events.back().ts_ns;
  return s;
}

// Waits (polling: this is a benchmark) until the index has taken every event.
void wait_indexed(BlockIndex& index) {
  for (;;) {
    const BlockIndexStatus s = index.status();
    if (s.queued_events == 0 && s.events_indexed + s.events_dropped == s.events_added) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

template <class F>
double timed_query(BlockIndex& index, F f) {
  std::promise<double> done;
  index.post([&](BlockQueries& q) {
    const auto t = std::chrono::steady_clock::now();
    f(q);
    done.set_value(seconds_since(t) * 1e3);
  });
  return done.get_future().get();
}

// Runs a query `reps` times; prints the median and the worst in ms.
template <class F>
void report(BlockIndex& index, const char* what, int reps, F f) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(timed_query(index, f));
  std::sort(ms.begin(), ms.end());
  std::printf("  %-58s %8.1f ms median, %8.1f worst (%d runs)\n", what, ms[ms.size() / 2],
              ms.back(), reps);
}

BlockFilter host() {
  BlockFilter f;
  f.pid = kPid;
  f.device = memtap::kHostDevice;
  return f;
}

// A view that refreshes whenever its last answer came: largest() and live_groups() at an
// instant found on the index's thread, and how long the slowest answer took.
struct Refreshes {
  std::atomic<bool> in_flight{false};
  std::atomic<int> answers{0};
  std::atomic<int64_t> worst_us{0};

  void ask(BlockIndex& index, std::function<int64_t(BlockQueries&)> instant) {
    if (in_flight.exchange(true)) return;
    const auto asked = std::chrono::steady_clock::now();
    index.post([this, asked, instant = std::move(instant)](BlockQueries& q) {
      BlockFilter now = host();
      now.t0_ns = now.t1_ns = instant(q);
      q.largest(now, 100);
      q.live_groups(now);
      const int64_t us = int64_t(seconds_since(asked) * 1e6);
      if (us > worst_us) worst_us = us;
      ++answers;
      in_flight = false;
    });
  }
  // Until the last answer came (polling: this is a benchmark).
  void wait() const {
    while (in_flight) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

void queries(BlockIndex& index, const Session& s) {
  const int64_t span = s.last_ns - s.first_ns;
  const int64_t mid = s.first_ns + span / 2;
  uint64_t matched = 0;
  size_t groups = 0;
  BlockFilter whole = host();
  BlockFilter tenth = host();
  tenth.t0_ns = mid;
  tenth.t1_ns = mid + span / 10;
  BlockFilter second = host();
  second.t0_ns = mid;
  second.t1_ns = mid + 1'000'000'000;
  BlockFilter end = host();
  end.t0_ns = end.t1_ns = s.last_ns;
  BlockFilter middle = host();
  middle.t0_ns = middle.t1_ns = mid;
  BlockFilter text = tenth;
  text.text = "BLOCK12";
  report(index, "largest(100), whole session", 3,
         [&](BlockQueries& q) { matched = q.largest(whole, 100).matching_blocks; });
  std::printf("    (%llu blocks matched)\n", (unsigned long long)matched);
  report(index, "largest(100), a tenth of the session", 5,
         [&](BlockQueries& q) { matched = q.largest(tenth, 100).matching_blocks; });
  std::printf("    (%llu blocks matched)\n", (unsigned long long)matched);
  report(index, "largest(100), one second", 5,
         [&](BlockQueries& q) { matched = q.largest(second, 100).matching_blocks; });
  std::printf("    (%llu blocks matched)\n", (unsigned long long)matched);
  report(index, "largest(100), live at the end", 5,
         [&](BlockQueries& q) { matched = q.largest(end, 100).matching_blocks; });
  std::printf("    (%llu blocks matched)\n", (unsigned long long)matched);
  report(index, "largest(100), live midway", 5,
         [&](BlockQueries& q) { matched = q.largest(middle, 100).matching_blocks; });
  std::printf("    (%llu blocks matched)\n", (unsigned long long)matched);
  report(index, "largest(100), a tenth, text \"BLOCK12\"", 5,
         [&](BlockQueries& q) { matched = q.largest(text, 100).matching_blocks; });
  std::printf("    (%llu blocks matched)\n", (unsigned long long)matched);
  report(index, "live_groups, at the end", 5,
         [&](BlockQueries& q) { groups = q.live_groups(end).size(); });
  std::printf("    (%zu groups)\n", groups);
  report(index, "live_groups, midway", 5,
         [&](BlockQueries& q) { groups = q.live_groups(middle).size(); });
  std::printf("    (%zu groups)\n", groups);
  bool truncated = false;
  size_t rows = 0;
  report(index, "all(100000), live at the end", 3,
         [&](BlockQueries& q) { rows = q.all(end, 100000, &truncated).size(); });
  std::printf("    (%zu rows%s)\n", rows, truncated ? ", truncated" : "");
  // A table: the first page sorts, the next ones read.
  for (BlockColumn column : {BlockColumn::kSize, BlockColumn::kOwner}) {
    const char* name = column == BlockColumn::kSize ? "size" : "owner";
    for (const BlockFilter* f : {&tenth, &whole}) {
      const std::string what = std::string("page(0, 100) by ") + name + ", sorting " +
                               (f == &whole ? "the whole session" : "a tenth");
      uint64_t total = 0;
      report(index, what.c_str(), 1,
             [&](BlockQueries& q) { total = q.page(*f, column, true, 0, 100).total_rows; });
      std::printf("    (%llu rows)\n", (unsigned long long)total);
      size_t offset = 0;
      report(index, "  the following pages of 100", 10, [&](BlockQueries& q) {
        offset += 100 + total / 20;
        q.page(*f, column, true, offset % std::max<uint64_t>(total, 1), 100);
      });
    }
  }
  int64_t id = 1;
  report(index, "find(id)", 20, [&](BlockQueries& q) {
    q.find(id);
    id += 123457;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const size_t blocks = argc > 1 ? size_t(std::atoll(argv[1])) : 4'000'000;
  const double live_seconds = argc > 2 ? std::atof(argv[2]) : 5;
  const bool with_queries = argc > 3 ? std::atoi(argv[3]) != 0 : true;
  std::printf("making %zu blocks...\n", blocks);
  const Session s = make_session(blocks);
  std::printf("session: %zu events, %.1f s of event time\n", s.events.size(),
              double(s.last_ns - s.first_ns) / 1e9);

  const char* tmp = std::getenv("TMPDIR");
  BlockIndexOptions options;
  options.path = std::string(tmp && *tmp ? tmp : "/tmp") + "/memtap-bench-blocks-" +
                 std::to_string(getpid()) + ".db";
  std::string error;

  // Throughput: fed as fast as the index takes events (the feeder waits for room rather
  // than drop, so the figure is the index thread's).
  {
    auto index = BlockIndex::create(options, &error);
    if (!index) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    double add_seconds = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t at = 0; at < s.events.size(); at += kBatch) {
      while (index->status().queued_events > options.max_queued_events / 2)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      const auto t = std::chrono::steady_clock::now();
      index->add(s.events.data() + at, std::min(kBatch, s.events.size() - at), s.strings);
      add_seconds += seconds_since(t);
    }
    wait_indexed(*index);
    const double indexed = seconds_since(start);
    const BlockIndexStatus st = index->status();
    struct stat file {};
    ::stat(options.path.c_str(), &file);
    std::printf("indexing, unpaced: %.2f s: %.2f M blocks/s, %.2f M events/s (%llu dropped)\n",
                indexed, double(st.blocks) / indexed / 1e6,
                double(st.events_indexed) / indexed / 1e6, (unsigned long long)st.events_dropped);
    std::printf("  add() on the engine's thread: %.1f ns per event\n",
                add_seconds * 1e9 / double(s.events.size()));
    std::printf("  file: %.0f MB (%.0f B per block)\n", double(file.st_size) / 1e6,
                double(file.st_size) / double(st.blocks));
    if (with_queries) {
      std::printf("queries, %llu blocks, before finish_input:\n", (unsigned long long)st.blocks);
      queries(*index, s);
    }
    const auto t = std::chrono::steady_clock::now();
    index->finish_input();
    timed_query(*index, [](BlockQueries&) {});
    std::printf("finish_input: %.1f ms\n", seconds_since(t) * 1e3);
    if (with_queries) {
      std::printf("queries after finish_input:\n");
      queries(*index, s);
    }
  }

  // Live: 1 M events/s in real time, batches of 4096 every 4.1 ms, while two views refresh
  // (largest() and live_groups() at the newest event) whenever their last answer came.
  if (live_seconds > 0) {
    auto index = BlockIndex::create(options, &error);
    if (!index) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const size_t n = std::min(s.events.size(), size_t(live_seconds * 1e6));
    Refreshes refreshes;
    const auto start = std::chrono::steady_clock::now();
    size_t max_queued = 0;
    for (size_t at = 0; at < n; at += kBatch) {
      const auto due = start + std::chrono::microseconds(int64_t(at));
      std::this_thread::sleep_until(due);
      index->add(s.events.data() + at, std::min(kBatch, n - at), s.strings);
      max_queued = std::max(max_queued, index->status().queued_events);
      const int64_t newest = s.events[std::min(at + kBatch, n) - 1].ts_ns;
      refreshes.ask(*index, [newest](BlockQueries&) { return newest; });
    }
    const double fed = seconds_since(start);
    wait_indexed(*index);
    const double done = seconds_since(start);
    refreshes.wait();
    const BlockIndexStatus st = index->status();
    std::printf(
        "live, 1 M events/s for %.1f s: %llu events dropped, at most %zu queued, caught up "
        "%.0f ms after the last batch\n",
        fed, (unsigned long long)st.events_dropped, max_queued, (done - fed) * 1e3);
    std::printf(
        "  meanwhile %d refreshes (largest + live_groups at the newest event), the "
        "slowest answered %.1f ms after it was asked\n",
        refreshes.answers.load(), double(refreshes.worst_us.load()) / 1e3);
  }

  // A flood: the whole session added as fast as add() returns, as a live session adds
  // (never waiting for room), while a view refreshes. Past the queue the events wait on
  // disk; the figures are what waited there, how long the index took to catch up, and how
  // long a refresh waited meanwhile (answered ahead of the backlog on disk).
  if (live_seconds > 0) {
    auto index = BlockIndex::create(options, &error);
    if (!index) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    Refreshes refreshes;
    const auto start = std::chrono::steady_clock::now();
    size_t max_spooled = 0;
    for (size_t at = 0; at < s.events.size(); at += kBatch) {
      index->add(s.events.data() + at, std::min(kBatch, s.events.size() - at), s.strings);
      max_spooled = std::max(max_spooled, index->status().spooled_events);
      const int64_t last = s.last_ns;
      refreshes.ask(*index,
                    [last](BlockQueries& q) { return std::min(q.covered_until_ns(), last); });
    }
    const double fed = seconds_since(start);
    wait_indexed(*index);
    const double done = seconds_since(start);
    refreshes.wait();
    const BlockIndexStatus st = index->status();
    std::printf(
        "flood, %zu events added in %.2f s: %llu dropped, at most %zu waited on disk, caught "
        "up %.2f s after the last\n",
        s.events.size(), fed, (unsigned long long)st.events_dropped, max_spooled, done - fed);
    std::printf("  meanwhile %d refreshes, the slowest answered %.1f ms after it was asked\n",
                refreshes.answers.load(), double(refreshes.worst_us.load()) / 1e3);
  }
  return 0;
}
