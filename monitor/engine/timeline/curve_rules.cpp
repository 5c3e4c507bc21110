// See curve_rules.h.
#include "monitor/engine/timeline/curve_rules.h"

#include <algorithm>

namespace memtap::timeline {

namespace {
bool seen(const ScopeTotals& t, int slot) {
  return (t.seen_slots >> slot) & 1u;
}
}  // namespace

BlockClass allocated_class(const ScopeTotals& totals, bool host) {
  if (totals.seen_slots & kFrameworkSlots) return BlockClass::kFramework;
  return host ? BlockClass::kHostHeap : BlockClass::kDriver;
}

CurveValues derive_curves(const ScopeTotals& t, bool host) {
  const auto& live = t.live_bytes;
  CurveValues v;
  const bool framework = (t.seen_slots & kFrameworkSlots) != 0;
  int64_t framework_live = 0, framework_reserved = 0;
  int64_t host_live = 0;  // kHostHeapSlots: the heap and pinned host buffers
  for (int slot = 0; slot < kLayerSlots; ++slot) {
    if (host && ((kHostHeapSlots >> slot) & 1u)) host_live = saturating_add(host_live, live[slot]);
    if (!is_framework_slot(slot)) continue;
    framework_live += live[slot];
    framework_reserved +=
        ((t.pool_total_slots >> slot) & 1u) ? t.pool_total_bytes[slot] : live[slot];
  }
  const int hal = int(Layer::kHal);

  if (framework)
    v.allocated = framework_live;
  else if (!host && t.pool_sample_allocated != kUnknown)
    v.allocated = t.pool_sample_allocated;
  else
    v.allocated = host ? host_live : live[hal];

  if (t.pool_total_slots != 0)
    v.reserved = framework_reserved;
  else if (host && !framework)
    v.reserved = saturating_add(host_live, live[kHostMmapSlot]);
  else if (seen(t, hal))
    v.reserved = std::max(live[hal], v.allocated);
  else
    v.reserved = v.allocated;

  v.active = saturating_add(v.allocated, t.pending_bytes);

  if (t.app_sample_bytes != kUnknown)
    v.app_reserved = t.app_sample_bytes;
  else if (!host && seen(t, hal))
    v.app_reserved = live[hal];
  else
    v.app_reserved = v.reserved;

  v.fragmentation = std::max<int64_t>(0, v.reserved - v.allocated);
  return v;
}

}  // namespace memtap::timeline
