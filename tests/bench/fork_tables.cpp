// What a fork() costs the monitor's live session: a parent with N live heap blocks forks K
// children (a DataLoader's workers), each given its parent's blocks for pairing
// (monitor/engine/heap_pairing.h), and then parent and children go on allocating and
// freeing. Prints, for N live blocks (default 1,000,000) and K children (default 4):
//   fork_child_ms        per child: snapshot_for_child + seed_from_parent, wall, median of K
//   fork_child_mb        malloc's bytes in use that the K children's tables add, per child
//   fork_parent_pair_ns  per event, the parent's pairing after the forks (children alive):
//                        1M malloc/free pairs of new blocks, an old block freed every tenth
//   fork_child_pair_ns   the same events in one child
//   fork_flat_pair_ns    the same events in a parent that never forked (the baseline)
// Each churn asks for the slots of events a few ahead, as the session does.
//   memtap_bench_fork_tables [N [K]]
// Ends with `RESULT name=value` lines. Passes or fails nothing.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "monitor/engine/heap_pairing.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kParentPid = 100;
constexpr uint64_t kPairs = 1'000'000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Large tables are mmap()ed chunks of their own (hblkhd), outside the arena's uordblks.
size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Heap-like addresses: 16-byte aligned, rising, with gaps.
uint64_t old_addr(uint64_t i) {
  return 0x5555'0000'0000 + 48 * i;
}
uint64_t new_addr(uint64_t i) {
  return 0x7f00'0000'0000 + 64 * (i % 4096);
}

struct Pairing {
  std::vector<memtap::DumpRow> rows;
  uint64_t last_id = 0, unmatched = 0, lost = 0;
  memtap::PairingOutput out{rows, last_id, unmatched, lost};
};

// The parent's heap: N live blocks, after a peak of 1.5 N.
memtap::LiveTables parent_heap(uint64_t n) {
  memtap::LiveTables t;
  for (uint64_t i = 0; i < n + n / 2; ++i) t.heap.put(old_addr(i), {16 + i % 2048, i + 1, 0, 0});
  memtap::LiveBlock freed;
  for (uint64_t i = n; i < n + n / 2; ++i) t.heap.take(old_addr(i), &freed);
  return t;
}

// Pairs of new blocks (4,096 live at a time), and a free of an old block every tenth pair; ns
// per event.
double churn(memtap::LiveTables& t, uint64_t n, uint32_t pid, Pairing& p) {
  const memtap::RowStamp stamp{2, pid, pid};
  uint64_t events = 0;
  const auto start = Clock::now();
  for (uint64_t i = 0; i < kPairs; ++i) {
    // As the session does, ask for the slots of the events a few ahead (prefetch_heap).
    const uint64_t ahead = i + 4;
    memtap::prefetch_heap(t, new_addr(ahead));
    memtap::prefetch_heap(t, new_addr(ahead + 2048));
    if (ahead % 10 == 0 && ahead < n) memtap::prefetch_heap(t, old_addr(ahead));
    if (p.rows.size() > 4096) p.rows.clear();
    memtap::pair_malloc(t, stamp, new_addr(i), 64, {}, p.out);
    memtap::pair_free(t, stamp, new_addr(i + 2048), p.out);
    events += 2;
    if (i % 10 == 0 && i < n) {
      memtap::pair_free(t, stamp, old_addr(i), p.out);
      ++events;
    }
  }
  return seconds_since(start) * 1e9 / double(events);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const size_t k = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4;

  Pairing p;
  p.rows.reserve(8192);
  double flat_ns = 0;
  {
    memtap::LiveTables flat = parent_heap(n);
    flat_ns = churn(flat, n, kParentPid, p);
  }

  memtap::LiveTables parent = parent_heap(n);
  std::vector<memtap::LiveTables> children(k);
  std::vector<double> fork_ms;
  const size_t before = heap_in_use();
  for (size_t c = 0; c < k; ++c) {
    const auto start = Clock::now();
    memtap::seed_from_parent(children[c], memtap::snapshot_for_child(parent, kParentPid));
    fork_ms.push_back(seconds_since(start) * 1e3);
  }
  const double child_mb = double(heap_in_use() - before) / double(k) / 1e6;
  std::sort(fork_ms.begin(), fork_ms.end());
  const double parent_ns = churn(parent, n, kParentPid, p);
  const double child_ns = churn(children[0], n, kParentPid + 1, p);

  std::printf("fork of a parent with %llu live heap blocks, %zu children\n",
              static_cast<unsigned long long>(n), k);
  std::printf("  per child: %.2f ms (median; first %.2f, last %.2f), %.1f MB of tables\n",
              fork_ms[k / 2], fork_ms.front(), fork_ms.back(), child_mb);
  std::printf("  pairing after the forks: parent %.1f ns/event, child %.1f; never forked %.1f\n",
              parent_ns, child_ns, flat_ns);
  std::printf("RESULT fork_child_ms=%.2f\nRESULT fork_child_mb=%.1f\n", fork_ms[k / 2], child_mb);
  std::printf(
      "RESULT fork_parent_pair_ns=%.1f\nRESULT fork_child_pair_ns=%.1f\nRESULT "
      "fork_flat_pair_ns=%.1f\n",
      parent_ns, child_ns, flat_ns);
  return 0;
}
