// See ooms.h.
#include "monitor/engine/blocks/ooms.h"

namespace memtap::blocks {

void OomLog::add(const MemEvent& e) {
  if (e.kind == MemEventKind::kOom) {
    OomResult& r = by_device_[{e.pid, e.device}];
    const OomResult::Refusal& last = r.last;
    const bool again = r.count > 0 && e.tid == last.tid && e.name == last.name &&
                       e.size_bytes == last.requested_bytes && e.stream == last.stream &&
                       e.ts_ns >= last.ts_ns && e.ts_ns - last.ts_ns <= kRefusedAgainNs;
    r.last = {e.ts_ns, e.tid, e.name, e.size_bytes, e.stream};
    if (again) {
      if (r.count == r.kept.size()) {
        Oom& oom = r.kept.back();
        ++oom.refusals;
        oom.last_ts_ns = e.ts_ns;
        oom.top.clear();  // this refusal's rows follow
      }
      return;
    }
    ++r.count;
    if (r.kept.size() < kKeptOoms) {
      r.kept.push_back({e.ts_ns,
                        e.tid,
                        e.size_bytes,
                        e.stream,
                        e.name,
                        e.stack_python,
                        e.stack_c,
                        1,
                        e.ts_ns,
                        {}});
    }
    return;
  }
  if (e.kind != MemEventKind::kOomTopAlloc) return;
  const auto it = by_device_.find({e.pid, e.device});
  // No OOM before it, or it belongs to one past those kept: nothing to attach it to.
  if (it == by_device_.end() || it->second.count > it->second.kept.size()) return;
  std::vector<OomBlock>& top = it->second.kept.back().top;
  if (top.size() >= kKeptOomBlocks) return;
  top.push_back(
      {e.addr, e.size_bytes, e.allocation_id, e.owner, e.name, e.stack_python, e.stack_c});
}

OomResult OomLog::result(uint32_t pid, int32_t device) const {
  const auto it = by_device_.find({pid, device});
  return it == by_device_.end() ? OomResult{} : it->second;
}

std::vector<std::pair<uint32_t, int32_t>> OomLog::devices() const {
  std::vector<std::pair<uint32_t, int32_t>> out;
  for (const auto& entry : by_device_) out.push_back(entry.first);
  return out;
}

size_t OomLog::state_bytes() const {
  size_t bytes = by_device_.size() * (sizeof(OomResult) + 64);
  for (const auto& entry : by_device_) {
    bytes += entry.second.kept.capacity() * sizeof(Oom);
    for (const Oom& oom : entry.second.kept) bytes += oom.top.capacity() * sizeof(OomBlock);
  }
  return bytes;
}

}  // namespace memtap::blocks
