// See address_axis.h.
#include "monitor/viewdata/address_axis.h"

#include <algorithm>
#include <cmath>

#include "monitor/engine/saturating.h"

namespace memtap::viewdata {

AddressAxis compress_addresses(std::vector<std::pair<uint64_t, uint64_t>> intervals,
                               const AddressAxisOptions& options) {
  AddressAxis axis;
  // Intervals as [lo, hi), saturating at the top of the address space.
  for (auto& iv : intervals) {
    const uint64_t size = std::max<uint64_t>(iv.second, 1);
    iv.second = iv.first + size < iv.first ? UINT64_MAX : iv.first + size;
  }
  std::sort(intervals.begin(), intervals.end());
  auto merge = [&](uint64_t keep_gap_bytes) {
    axis.spans.clear();
    for (const auto& [lo, hi] : intervals) {
      if (!axis.spans.empty()) {
        AddressSpan& last = axis.spans.back();
        if (lo <= last.hi || lo - last.hi <= keep_gap_bytes) {
          last.hi = std::max(last.hi, hi);
          continue;
        }
      }
      axis.spans.push_back({lo, hi, 0, 0});
    }
  };
  // The bytes covered first: a GPU pool's segments lie a few MiB apart over tens of GiB,
  // and collapsing each of those gaps gave 800 spans, the axis mostly gap markers.
  merge(0);
  double covered = 0;
  for (const AddressSpan& s : axis.spans) covered += double(s.hi - s.lo);
  merge(std::max(options.keep_gap_bytes, uint64_from_double(covered * options.gap_share)));
  if (axis.spans.empty()) return axis;

  const size_t n = axis.spans.size();
  const double gaps = std::min(options.max_gaps_share, options.gap_share * double(n - 1));
  const double gap = n > 1 ? gaps / double(n - 1) : 0;
  std::vector<double> weight(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    weight[i] = std::sqrt(double(axis.spans[i].hi - axis.spans[i].lo));
    total += weight[i];
  }
  // At least a quarter of an even share each, then scaled to the height the gaps leave.
  double sum = 0;
  for (double& w : weight) {
    w = std::max(w / total, 0.25 / double(n));
    sum += w;
  }
  double y = 0;
  for (size_t i = 0; i < n; ++i) {
    axis.spans[i].y0 = y;
    y += weight[i] / sum * (1 - gaps);
    axis.spans[i].y1 = y;
    y += gap;
  }
  axis.spans.back().y1 = 1;
  return axis;
}

double AddressAxis::y_of(uint64_t addr) const {
  if (spans.empty()) return 0;
  // The first span ending after addr.
  auto it = std::upper_bound(spans.begin(), spans.end(), addr,
                             [](uint64_t a, const AddressSpan& s) { return a < s.hi; });
  if (it == spans.end()) return 1;
  if (addr < it->lo) {
    if (it == spans.begin()) return 0;
    return ((it - 1)->y1 + it->y0) / 2;  // in the collapsed gap before it
  }
  return it->y0 + (it->y1 - it->y0) * (double(addr - it->lo) / double(it->hi - it->lo));
}

uint64_t AddressAxis::addr_at(double y) const {
  if (spans.empty()) return 0;
  auto it = std::upper_bound(spans.begin(), spans.end(), y,
                             [](double v, const AddressSpan& s) { return v < s.y1; });
  if (it == spans.end()) return spans.back().hi - 1;
  if (y < it->y0) {
    if (it == spans.begin()) return it->lo;
    // In a gap: the nearer span's edge.
    return y - (it - 1)->y1 < it->y0 - y ? (it - 1)->hi - 1 : it->lo;
  }
  const double f = (y - it->y0) / (it->y1 - it->y0);
  // A span of nearly 2^64 bytes rounds f's share up to the span itself: its last byte then.
  return std::min(it->hi - 1, it->lo + uint64_from_double(f * double(it->hi - it->lo)));
}

}  // namespace memtap::viewdata
