// BlockAnalyzer::state_bytes: the capacity of every container the analyzer keeps, so a
// test can show that memory follows live blocks and keys, not the events seen.
#include "monitor/engine/blocks/analyzer_state.h"

namespace memtap::blocks {
namespace {

template <class T>
size_t bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

template <class T, size_t N>
size_t bytes(const std::array<std::vector<T>, N>& a) {
  size_t n = 0;
  for (const auto& v : a) n += bytes(v);
  return n;
}

size_t bytes(const InefficiencyTally& t) {
  size_t n = 0;
  for (const CategoryTally& c : t.categories) n += bytes(c.top);
  return n;
}

size_t bytes(const OpenScope& s) {
  return sizeof(s) + bytes(s.uses) + bytes(s.blocks);
}

size_t bytes(const ScopeNames& names) {
  size_t n = names.index.memory_bytes() + bytes(names.stats);
  for (const ScopeNameStats& st : names.stats) n += bytes(st.accounts);
  return n;
}

size_t bytes(const Account& a) {
  return bytes(a.live.live) + bytes(a.live.at_peak) + bytes(a.live.dirty) +
         bytes(a.live.dirty_list) + bytes(a.steps.ring) + bytes(a.steps.min_bytes) +
         bytes(a.steps.min_boundary) + bytes(a.steps.min_boundary_ts_ns) + bytes(a.steps.figures) +
         bytes(a.steps.recent) + bytes(a.finished) + bytes(a.owner_scopes) + bytes(a.by_access) +
         bytes(a.by_operators);
}

size_t bytes(const DeviceState& d) {
  size_t n = sizeof(d) + bytes(d.owner_prefix_list) + bytes(d.keys.keys);
  for (const FlatIndex& i : d.keys.index) n += i.memory_bytes();
  for (const LayerState& l : d.layers) n += l.table.memory_bytes();
  n += d.pending.memory_bytes();
  for (const Account& a : d.accounts) n += bytes(a);
  return n;
}

size_t bytes(const ProcessState& p) {
  size_t n = sizeof(p) + bytes(p.devices) + p.thread_index.memory_bytes() + bytes(p.threads) +
             bytes(p.ranges) + bytes(p.operators) + bytes(p.range_names);
  for (const ThreadState& t : p.threads)
    for (const OpenScope& s : t.ops) n += bytes(s);
  for (const OpenScope& s : p.ranges) n += bytes(s);
  return n;
}

}  // namespace

size_t BlockAnalyzer::state_bytes() const {
  const AnalyzerState& s = *s_;
  size_t n = sizeof(s) + s.process_index.memory_bytes() + s.device_index.memory_bytes() +
             bytes(s.processes) + bytes(s.devices) + bytes(s.owner_prefixes.lists) +
             s.owner_prefixes.by_owner.memory_bytes() + s.ooms.state_bytes();
  for (const std::string& name : s.owner_prefixes.names) n += sizeof(name) + name.capacity();
  for (const auto& d : s.devices) n += bytes(*d);
  for (const auto& p : s.processes) n += bytes(*p);
  return n;
}

}  // namespace memtap::blocks
