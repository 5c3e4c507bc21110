// See peak.h: the dirty-key copy that keeps the breakdown at the peak exact.
#include "monitor/engine/blocks/peak.h"

#include <algorithm>

#include "monitor/engine/saturating.h"

namespace memtap::blocks {
namespace {

void grow(LiveByKey& l, int d, size_t n) {
  l.live[d].resize(n);
  l.at_peak[d].resize(n);
  l.dirty[d].resize(n, 0);
}

inline void touch(LiveByKey& l, int d, uint32_t k) {
  if (!l.dirty[d][k]) {
    l.dirty[d][k] = 1;
    l.dirty_list[d].push_back(k);
  }
}

void sync_peak(LiveByKey& l) {
  for (int d = 0; d < kDims; ++d) {
    for (uint32_t k : l.dirty_list[d]) {
      l.at_peak[d][k] = l.live[d][k];
      l.dirty[d][k] = 0;
    }
    l.dirty_list[d].clear();
  }
}

// The top_n of `order` (keys of v) by bytes, then blocks, then the string id of their label.
template <typename StringIdOf>
void rank(std::vector<uint32_t>& order, const std::vector<KeyBytes>& v, StringIdOf string_id,
          size_t top_n) {
  auto before = [&](uint32_t a, uint32_t b) {
    if (v[a].bytes != v[b].bytes) return v[a].bytes > v[b].bytes;
    if (v[a].blocks != v[b].blocks) return v[a].blocks > v[b].blocks;
    return string_id(a) < string_id(b);
  };
  const size_t n = std::min(top_n, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(), before);
  order.resize(n);
}

PeakEntry entry(KeyLabel label, const KeyBytes& figures, uint64_t total_bytes) {
  PeakEntry e;
  e.key = std::move(label);
  e.bytes = figures.bytes;
  e.blocks = figures.blocks;
  e.share = total_bytes ? double(figures.bytes) / double(total_bytes) : 0;
  return e;
}

std::vector<PeakEntry> top_entries(const std::vector<KeyBytes>& v, const KeyIndex& keys,
                                   const StringTable& strings, Dim dim, uint64_t peak_bytes,
                                   size_t top_n) {
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < v.size(); ++k)
    if (v[k].blocks != 0) order.push_back(k);
  rank(
      order, v, [&](uint32_t k) { return keys.string_id(dim, k); }, top_n);
  std::vector<PeakEntry> out;
  for (uint32_t k : order) out.push_back(entry(label_of(keys, strings, dim, k), v[k], peak_bytes));
  return out;
}

}  // namespace

void live_add(LiveByKey& l, const BlockKeys& keys, uint64_t size_bytes, int64_t ts_ns) {
  l.live_bytes = saturating_add(l.live_bytes, size_bytes);
  ++l.live_blocks;
  for (int d = 0; d < kDims; ++d) {
    const uint32_t k = keys[d];
    if (k >= l.live[d].size()) grow(l, d, size_t(k) + 1);
    l.live[d][k].bytes = saturating_add(l.live[d][k].bytes, size_bytes);
    ++l.live[d][k].blocks;
    touch(l, d, k);
  }
  if (l.live_bytes > l.step_peak_bytes) l.step_peak_bytes = l.live_bytes;
  // ">" and not ">=": the first moment the maximum is reached is the one reported.
  if (l.live_bytes > l.peak_bytes || l.peak_ts_ns == kNoTime) {
    sync_peak(l);
    l.peak_bytes = l.live_bytes;
    l.peak_blocks = l.live_blocks;
    l.peak_ts_ns = ts_ns;
  }
}

void live_remove(LiveByKey& l, const BlockKeys& keys, uint64_t size_bytes) {
  l.live_bytes = saturating_sub(l.live_bytes, size_bytes);
  --l.live_blocks;
  for (int d = 0; d < kDims; ++d) {
    const uint32_t k = keys[d];
    l.live[d][k].bytes = saturating_sub(l.live[d][k].bytes, size_bytes);
    --l.live[d][k].blocks;
    touch(l, d, k);
  }
}

std::vector<PeakEntry> owner_top_stacks(const std::vector<KeyBytes>& pairs, const KeyIndex& keys,
                                        const StringTable& strings, const KeyLabel& owner,
                                        uint64_t total_bytes, size_t top_n) {
  const uint32_t owner_key = keys.find(kByOwner, (uint64_t(owner.kind) << 32) | owner.string_id);
  std::vector<uint32_t> order;
  if (owner_key == FlatIndex::kNone) return {};
  // Every pair is looked at: O(pairs) per owner, once per report, never per event.
  for (uint32_t k = 0; k < pairs.size(); ++k) {
    const uint64_t tag = keys.keys[kByOwnerStack][k];
    if (pairs[k].blocks != 0 && pair_owner_key(tag) == owner_key) order.push_back(k);
  }
  auto stack_of = [&](uint32_t k) { return pair_stack_key(keys.keys[kByOwnerStack][k]); };
  rank(
      order, pairs, [&](uint32_t k) { return keys.string_id(kByStack, stack_of(k)); }, top_n);
  std::vector<PeakEntry> out;
  for (uint32_t k : order)
    out.push_back(entry(label_of(keys, strings, kByStack, stack_of(k)), pairs[k], total_bytes));
  return out;
}

PeakResult peak_result(const LiveByKey& l, const KeyIndex& keys, const StringTable& strings,
                       size_t top_n) {
  PeakResult r;
  r.found = l.peak_ts_ns != kNoTime;
  r.current_bytes = l.live_bytes;
  if (!r.found) return r;
  r.ts_ns = l.peak_ts_ns;
  r.bytes = l.peak_bytes;
  r.blocks = l.peak_blocks;
  r.by_owner = top_entries(l.at_peak[kByOwner], keys, strings, kByOwner, r.bytes, top_n);
  for (PeakEntry& owner : r.by_owner) {
    owner.stacks = owner_top_stacks(l.at_peak[kByOwnerStack], keys, strings, owner.key, r.bytes,
                                    kTopStacksPerOwner);
  }
  r.by_stack = top_entries(l.at_peak[kByStack], keys, strings, kByStack, r.bytes, top_n);
  r.by_name = top_entries(l.at_peak[kByName], keys, strings, kByName, r.bytes, top_n);
  return r;
}

}  // namespace memtap::blocks
