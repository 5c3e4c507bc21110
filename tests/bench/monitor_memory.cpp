// The monitor's own memory (issue 5, item 5): resident bytes per live block and per million
// recorded events, in the engine `memtap run`, `report` and `replay` share (the Analyzer:
// timeline and block analyses).
//
// Two workloads, each at the sizes given (default 1M and 4M):
//   live   N mallocs never freed: heap-like addresses (16-byte aligned, rising, with gaps),
//          sizes 16 B-4 KiB with a few larger ones, 4 threads, 4 owners, 8 Python stacks.
//          Target: at most 100 bytes of monitor memory per live block.
//   pairs  N events of malloc/free pairs with 1,024 blocks live (alloc_storm.c's shape):
//          what stays once they are processed should not follow N.
// Each measurement runs in a fork()ed child, so that one's freed memory (kept by malloc)
// does not count in the next. Events are generated in batches of 4,096 into one buffer
// allocated before the first reading, so only the engine's own state is measured: the
// resident set (/proc/self/statm) and malloc's bytes in use (mallinfo2) after the feed,
// minus the same before it, and the peak resident set (VmHWM) minus the start.
//
// Beside the Analyzer, the same events go through each part alone to say which one holds
// what: the block analyses (with BlockAnalyzer::state_bytes, its containers' capacity),
// the timeline (Timeline::stats().memory_bytes), and the live session's heap pairing
// (monitor/engine/heap_pairing.h; `memtap run` only, not behind the Analyzer).
//
//   memtap_bench_monitor_memory [N ...]      N in events (or live blocks), e.g. 1000000
// Prints a table and `RESULT name=value` lines (tests/bench/run parses them).
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/engine/blocks/block_analyzer.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/heap_pairing.h"
#include "monitor/engine/timeline/timeline.h"

namespace {

using memtap::MemEvent;

constexpr size_t kBatch = 4096;
constexpr size_t kStormLive = 1024;

enum class Workload { kLive, kPairs };
enum class Sink { kAnalyzer, kBlocks, kTimeline, kPairing };

const char* sink_name(Sink s) {
  switch (s) {
    case Sink::kAnalyzer:
      return "analyzer";
    case Sink::kBlocks:
      return "blocks";
    case Sink::kTimeline:
      return "timeline";
    case Sink::kPairing:
      return "pairing";
  }
  return "?";
}

struct Reading {
  int64_t rss_bytes = 0;
  int64_t heap_bytes = 0;  // malloc's bytes in use: arenas plus mmapped chunks
  int64_t hwm_bytes = 0;
};

Reading read_memory() {
  Reading r;
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  r.rss_bytes = int64_t(resident) * sysconf(_SC_PAGESIZE);
  const struct mallinfo2 m = mallinfo2();
  r.heap_bytes = int64_t(m.uordblks + m.hblkhd);
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "VmHWM:", 6) == 0) r.hwm_bytes = std::atoll(line + 6) * 1024;
    std::fclose(f);
  }
  return r;
}

// The events of a workload, a batch at a time, the same whatever the sink.
struct Generator {
  Workload workload;
  uint64_t total;  // events
  uint64_t made = 0;
  uint64_t state = 7;
  int64_t ts = 1'700'000'000'000'000'000;
  uint64_t next_addr = 0x5555'5560'0000;  // rising like a fresh heap
  uint32_t owners[4], stacks[8];
  std::vector<uint64_t> live_size = std::vector<uint64_t>(kStormLive, 0);
  uint64_t slot = 0, allocations = 0;

  Generator(Workload w, uint64_t n, memtap::StringTable* strings) : workload(w), total(n) {
    for (int i = 0; i < 4; ++i) owners[i] = strings->intern("model@layer" + std::to_string(i));
    for (int i = 0; i < 8; ++i)
      stacks[i] =
          strings->intern("train.py(" + std::to_string(40 + i) + "): step\nmain.py(9): main");
  }

  uint64_t next() { return state = state * 6364136223846793005ull + 1442695040888963407ull; }

  MemEvent malloc_at(uint64_t addr, uint64_t size) {
    const uint64_t r = next();
    MemEvent m;
    m.ts_ns = ts += 50;
    m.pid = 100;
    m.tid = 100 + uint32_t((r >> 12) % 4);
    m.device = memtap::kHostDevice;
    m.kind = memtap::MemEventKind::kMalloc;
    m.addr = addr;
    m.size_bytes = size;
    m.allocation_id = ++allocations;
    m.owner = owners[(r >> 20) % 4];
    m.stack_python = stacks[(r >> 24) % 8];
    return m;
  }

  uint64_t block_size() {
    const uint64_t r = next() >> 33;
    return r % 64 == 0 ? 65536 + r % 1'000'000 : 16 + r % 4080;  // 1 in 64 larger
  }

  // Fills `out`; returns how many events (0 at the end).
  size_t fill(std::vector<MemEvent>& out) {
    out.clear();
    while (out.size() + 2 <= kBatch && made < total) {
      if (workload == Workload::kLive) {
        const uint64_t size = block_size();
        out.push_back(malloc_at(next_addr, size));
        // The chunk header and 16-byte rounding, and now and then a hole of freed chunks.
        next_addr += ((size + 16 + 15) & ~uint64_t(15)) + (next() % 16 == 0 ? 4096 : 0);
      } else {
        const uint64_t addr = 0x5555'5560'0000 + slot * 8192;
        if (live_size[slot] != 0) {
          if (made + 2 > total) {  // no room for the pair: end here
            made = total;
            break;
          }
          MemEvent f;
          f.ts_ns = ts += 50;
          f.pid = 100;
          f.tid = 100;
          f.device = memtap::kHostDevice;
          f.kind = memtap::MemEventKind::kFree;
          f.addr = addr;
          f.size_bytes = live_size[slot];
          out.push_back(f);
          ++made;
          live_size[slot] = 0;
        }
        const uint64_t size = 16 + (next() >> 33) % 4080;
        out.push_back(malloc_at(addr, size));
        live_size[slot] = size;
        slot = (slot + 1) % kStormLive;
      }
      ++made;
    }
    return out.size();
  }
};

struct Measured {
  Reading delta;
  int64_t peak_bytes = 0;
  int64_t state_bytes = -1;  // what the part says it holds, where it says
};

// In a child: builds the sink, reads memory, feeds the events, reads again.
Measured measure(Workload w, Sink sink, uint64_t n) {
  memtap::StringTable strings;
  std::vector<MemEvent> batch;
  batch.reserve(kBatch);
  Generator gen(w, n, &strings);
  memtap::Analyzer analyzer(&strings);
  memtap::blocks::BlockAnalyzer blocks(strings);
  memtap::timeline::Timeline timeline;
  memtap::LiveTables tables;
  std::vector<memtap::DumpRow> rows;
  rows.reserve(2 * kBatch);
  uint64_t last_id = 0, unmatched = 0, lost = 0;
  memtap::PairingOutput out{rows, last_id, unmatched, lost};

  const Reading before = read_memory();
  while (size_t count = gen.fill(batch)) {
    switch (sink) {
      case Sink::kAnalyzer:
        analyzer.add(batch.data(), count);
        break;
      case Sink::kBlocks:
        blocks.add(batch.data(), count);
        break;
      case Sink::kTimeline:
        timeline.add(batch.data(), count);
        break;
      case Sink::kPairing:
        rows.clear();
        for (const MemEvent& e : batch) {
          const memtap::RowStamp stamp{e.ts_ns, e.pid, e.tid};
          if (e.kind == memtap::MemEventKind::kMalloc)
            memtap::pair_malloc(tables, stamp, e.addr, e.size_bytes, {e.owner, 0, 0, 0}, out);
          else
            memtap::pair_free(tables, stamp, e.addr, out);
        }
        break;
    }
  }
  const Reading after = read_memory();
  Measured m;
  m.delta.rss_bytes = after.rss_bytes - before.rss_bytes;
  m.delta.heap_bytes = after.heap_bytes - before.heap_bytes;
  m.peak_bytes = after.hwm_bytes - before.rss_bytes;
  if (sink == Sink::kBlocks) m.state_bytes = int64_t(blocks.state_bytes());
  if (sink == Sink::kTimeline) m.state_bytes = int64_t(timeline.stats().memory_bytes);
  return m;
}

// measure() in a fork()ed child; false if the child failed.
bool measure_apart(Workload w, Sink sink, uint64_t n, Measured* m) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const Measured r = measure(w, sink, n);
    const bool ok = write(fds[1], &r, sizeof r) == ssize_t(sizeof r);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  const bool ok = pid > 0 && read(fds[0], m, sizeof *m) == ssize_t(sizeof *m);
  close(fds[0]);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string per(int64_t bytes, uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", double(bytes) / double(n));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {1'000'000, 4'000'000};

  std::printf("monitor memory: events in batches of %zu, each figure from a fresh process\n",
              kBatch);
  // What each part keeps per live block, to read the table against.
  std::printf(
      "per live block: blocks: a blocks::LiveBlock of %zu B in a chunked slab and a 12 B\n"
      "  FlatMap slot in the address index at 25-50 %% load (24-48 B; uses only for blocks with\n"
      "  ACCESS or operator/range events, in a side table); timeline: a 12 B FlatMap slot per\n"
      "  block with an owner or stream (24-48 B), beside its series (bounded, ~15 MB here);\n"
      "  pairing (memtap run only, not in the Analyzer): a std::unordered_map node\n"
      "  (%zu B + next pointer + malloc's header) and a bucket pointer\n",
      sizeof(memtap::blocks::LiveBlock), sizeof(uint64_t) + sizeof(memtap::LiveBlock));

  // The Analyzer's figures at the last N, for the summary. Bytes per event is also MB per
  // million events; what stays should be bounded (the timeline's series), so the MB after
  // the last N is printed too.
  std::string per_block = "n/a", per_event = "n/a", after_pairs_mb = "n/a";
  const Sink sinks[] = {Sink::kAnalyzer, Sink::kBlocks, Sink::kTimeline, Sink::kPairing};
  for (Workload w : {Workload::kLive, Workload::kPairs}) {
    const bool live = w == Workload::kLive;
    std::printf("\n== %s\n", live ? "live blocks: N mallocs never freed (target <= 100 B a block)"
                                  : "recorded events: N events of malloc/free pairs, 1,024 live "
                                    "(B/event = MB per million events)");
    std::printf("%-9s %10s %12s %12s %12s %12s %14s\n", "part", "N", "RSS MB",
                live ? "RSS B/block" : "RSS B/event", "heap B/each", "peak B/each", "state B/each");
    for (uint64_t n : sizes) {
      for (Sink sink : sinks) {
        Measured m;
        if (!measure_apart(w, sink, n, &m)) {
          std::printf("%-9s %10llu   (failed)\n", sink_name(sink), (unsigned long long)n);
          continue;
        }
        std::printf("%-9s %10llu %12.1f %12s %12s %12s %14s\n", sink_name(sink),
                    (unsigned long long)n, double(m.delta.rss_bytes) / 1e6,
                    per(m.delta.rss_bytes, n).c_str(), per(m.delta.heap_bytes, n).c_str(),
                    per(m.peak_bytes, n).c_str(),
                    m.state_bytes < 0 ? "" : per(m.state_bytes, n).c_str());
        if (sink == Sink::kAnalyzer) {
          (live ? per_block : per_event) = per(m.delta.rss_bytes, n);
          if (!live) after_pairs_mb = per(m.delta.rss_bytes, 1'000'000);
        }
      }
    }
  }
  std::printf("\nRESULT monitor_bytes_per_live_block=%s\n", per_block.c_str());
  std::printf("RESULT monitor_mb_per_million_events=%s\n", per_event.c_str());
  std::printf("RESULT monitor_pairs_events=%llu monitor_pairs_mb=%s\n",
              (unsigned long long)sizes.back(), after_pairs_mb.c_str());
  return 0;
}
