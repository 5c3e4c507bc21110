// Running totals of one (process, device, layer) and the lifetimes of its finished blocks,
// aggregated as they finish: a session's memory must not grow with the blocks it has
// freed, so a finished block leaves only counts, bytes and histogram buckets behind.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/blocks/keys.h"
#include "monitor/engine/saturating.h"

namespace memtap::blocks {

// Finished blocks by lifetime: bucket 0 holds lifetime 0, bucket b (1..63) lifetimes in
// [2^(b-1), 2^b) ns.
struct LifetimeHistogram {
  std::array<uint64_t, 64> blocks{};
  std::array<uint64_t, 64> bytes{};
};

inline int lifetime_bucket(int64_t lifetime_ns) {
  return lifetime_ns <= 0 ? 0 : 64 - __builtin_clzll(uint64_t(lifetime_ns));
}

struct LayerTotals {
  Layer layer = Layer::kHost;
  bool is_mmap = false;
  uint64_t live_bytes = 0;
  uint64_t live_blocks = 0;
  uint64_t peak_live_bytes = 0;
  int64_t peak_ts_ns = kNoTime;
  uint64_t allocs = 0;
  uint64_t alloc_bytes = 0;
  uint64_t frees = 0;  // paired frees (and blocks replaced by a MALLOC at their address)
  uint64_t freed_bytes = 0;
  uint64_t unmatched_frees = 0;  // FREE of an address with no live block in this layer
  uint64_t replaced_blocks = 0;  // MALLOC over a live block: the block's FREE was lost
  LifetimeHistogram lifetimes;   // finished blocks
};

// Finished blocks of one account per key (owner, stack, name).
struct FinishedFigures {
  uint64_t blocks = 0;
  uint64_t bytes = 0;
  int64_t lifetime_sum_ns = 0;
  int64_t max_lifetime_ns = 0;
};
using FinishedByKey = std::array<std::vector<FinishedFigures>, kDims>;

inline void add_finished(FinishedByKey& f, const std::array<uint32_t, kDims>& keys,
                         uint64_t size_bytes, int64_t lifetime_ns) {
  // Lifetimes are reported per label only; per (owner, stack) pair they would be memory spent
  // for no one.
  for (int d = 0; d < kLabelDims; ++d) {
    if (keys[d] >= f[d].size()) f[d].resize(size_t(keys[d]) + 1);
    FinishedFigures& x = f[d][keys[d]];
    ++x.blocks;
    x.bytes = saturating_add(x.bytes, size_bytes);
    x.lifetime_sum_ns = saturating_add(x.lifetime_sum_ns, lifetime_ns);
    if (lifetime_ns > x.max_lifetime_ns) x.max_lifetime_ns = lifetime_ns;
  }
}

struct LifetimeEntry {
  KeyLabel key;
  uint64_t blocks = 0;
  uint64_t bytes = 0;
  double mean_lifetime_ns = 0;
  int64_t max_lifetime_ns = 0;
};

struct LifetimeResult {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  Basis basis = Basis::kHostHeap;
  std::vector<LayerTotals> layers;  // every layer that saw an event, in Layer order (mmap last)
  // Finished blocks of the basis' account, most bytes first, top_n each.
  std::vector<LifetimeEntry> by_owner;
  std::vector<LifetimeEntry> by_stack;
  std::vector<LifetimeEntry> by_name;
};

}  // namespace memtap::blocks
