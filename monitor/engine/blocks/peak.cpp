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

std::vector<PeakEntry> top_entries(const std::vector<KeyBytes>& v, const KeyIndex& keys,
                                   const StringTable& strings, Dim dim, uint64_t peak_bytes,
                                   size_t top_n) {
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < v.size(); ++k)
    if (v[k].blocks != 0) order.push_back(k);
  auto before = [&](uint32_t a, uint32_t b) {
    if (v[a].bytes != v[b].bytes) return v[a].bytes > v[b].bytes;
    if (v[a].blocks != v[b].blocks) return v[a].blocks > v[b].blocks;
    return keys.string_id(dim, a) < keys.string_id(dim, b);
  };
  const size_t n = std::min(top_n, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(), before);
  std::vector<PeakEntry> out;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = order[i];
    PeakEntry e;
    e.key = label_of(keys, strings, dim, k);
    e.bytes = v[k].bytes;
    e.blocks = v[k].blocks;
    e.share = peak_bytes ? double(v[k].bytes) / double(peak_bytes) : 0;
    out.push_back(std::move(e));
  }
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
  r.by_stack = top_entries(l.at_peak[kByStack], keys, strings, kByStack, r.bytes, top_n);
  r.by_name = top_entries(l.at_peak[kByName], keys, strings, kByName, r.bytes, top_n);
  return r;
}

}  // namespace memtap::blocks
