// Engine ingest on one core: MemEvents per second through the timeline alone, the block
// analyses alone and the Analyzer (both), fed in live-sized batches so that the Analyzer
// stays on one thread. Events come from a recording (`memtap_bench_engine_ingest FILE`)
// or, without one, from a synthetic allocation storm (5M malloc + 5M free, 1024 live,
// sizes 16 B-4 KiB, a few owners and stacks), the same shape as tests/bench/alloc_storm.c.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/engine/blocks/block_analyzer.h"
#include "monitor/engine/timeline/timeline.h"
#include "monitor/store/reader/recording_reader.h"

namespace {

using memtap::MemEvent;

constexpr size_t kBatch = 4096;  // a live batch; below the Analyzer's parallel threshold

std::vector<MemEvent> storm(size_t pairs, memtap::StringTable* strings) {
  uint32_t owners[4], stacks[8];
  for (int i = 0; i < 4; ++i) owners[i] = strings->intern("owner" + std::to_string(i));
  for (int i = 0; i < 8; ++i) stacks[i] = strings->intern("train.py(" + std::to_string(i) + "): f");
  std::vector<MemEvent> out;
  out.reserve(pairs * 2);
  std::vector<uint64_t> live_size(1024, 0);
  uint64_t state = 7;
  int64_t ts = 1'700'000'000'000'000'000;
  for (size_t i = 0; i < pairs + 1024; ++i) {
    const size_t slot = i % 1024;
    const uint64_t addr = 0x10000 + slot * 8192;
    if (live_size[slot] != 0) {
      MemEvent f;
      f.ts_ns = ts += 50;
      f.pid = 100;
      f.tid = 100;
      f.device = memtap::kHostDevice;
      f.kind = memtap::MemEventKind::kFree;
      f.addr = addr;
      f.size_bytes = live_size[slot];
      out.push_back(f);
      live_size[slot] = 0;
    }
    if (i >= pairs) continue;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    MemEvent m;
    m.ts_ns = ts += 50;
    m.pid = 100;
    m.tid = 100;
    m.device = memtap::kHostDevice;
    m.kind = memtap::MemEventKind::kMalloc;
    m.addr = addr;
    m.size_bytes = 16 + (state >> 33) % 4080;
    m.allocation_id = i + 1;
    m.owner = owners[(state >> 20) % 4];
    m.stack_python = stacks[(state >> 24) % 8];
    out.push_back(m);
    live_size[slot] = m.size_bytes;
  }
  return out;
}

template <typename Sink>
double rate(const std::vector<MemEvent>& events, Sink&& add) {
  auto start = std::chrono::steady_clock::now();
  for (size_t at = 0; at < events.size(); at += kBatch)
    add(events.data() + at, std::min(kBatch, events.size() - at));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return double(events.size()) / s / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  memtap::Recording rec;
  std::string source = "synthetic storm, 5M malloc + 5M free, 1024 live";
  if (argc > 1) {
    std::string error;
    if (!memtap::read_recording(argv[1], &rec, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    source = argv[1];
  } else {
    rec.events = storm(5'000'000, &rec.strings);
  }
  const std::string only = std::getenv("MEMTAP_BENCH_ONLY") ? std::getenv("MEMTAP_BENCH_ONLY") : "";
  std::printf("engine ingest, one thread, batches of %zu: %s (%zu events)\n", kBatch,
              source.c_str(), rec.events.size());
  if (only.empty() || only == "timeline") {
    memtap::timeline::Timeline t;
    std::printf("  timeline alone   %6.1f M events/s\n",
                rate(rec.events, [&](const MemEvent* e, size_t n) { t.add(e, n); }));
  }
  if (only.empty() || only == "blocks") {
    memtap::blocks::BlockAnalyzer b(rec.strings);
    std::printf("  blocks alone     %6.1f M events/s\n",
                rate(rec.events, [&](const MemEvent* e, size_t n) { b.add(e, n); }));
  }
  if (only.empty() || only == "analyzer") {
    memtap::Analyzer a(&rec.strings);
    std::printf("  analyzer (both)  %6.1f M events/s   (target >= 5)\n",
                rate(rec.events, [&](const MemEvent* e, size_t n) { a.add(e, n); }));
  }
  return 0;
}
