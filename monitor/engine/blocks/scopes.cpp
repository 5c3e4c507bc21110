// See scopes.h.
#include "monitor/engine/blocks/scopes.h"

#include <algorithm>

#include "monitor/engine/saturating.h"

namespace memtap::blocks {

uint32_t owner_prefix_list(OwnerPrefixes& p, const StringTable& strings, uint32_t owner) {
  if (owner == 0 || owner >= strings.size()) return 0;
  uint32_t offset = p.by_owner.find(owner);
  if (offset != FlatIndex::kNone) return offset;
  offset = uint32_t(p.lists.size());
  p.lists.push_back(0);
  const std::string& label = strings.get(owner);
  for (size_t end = 0; end != std::string::npos;) {
    end = label.find('@', end + 1);
    std::string prefix = label.substr(0, end);
    auto [it, added] = p.ids.emplace(prefix, uint32_t(p.names.size()));
    if (added) p.names.push_back(std::move(prefix));
    p.lists.push_back(it->second);
    ++p.lists[offset];
  }
  p.by_owner.insert(owner, offset);
  return offset;
}

void owner_scopes_add(std::vector<OwnerScopeFigures>& f, const OwnerPrefixes& p, uint32_t list,
                      uint64_t size_bytes, int64_t ts_ns) {
  const uint32_t n = p.lists[list];
  if (n == 0) return;
  if (f.size() < p.names.size()) f.resize(p.names.size());
  for (uint32_t i = 1; i <= n; ++i) {
    OwnerScopeFigures& x = f[p.lists[list + i]];
    x.inclusive_bytes = saturating_add(x.inclusive_bytes, size_bytes);
    ++x.inclusive_blocks;
    x.live_inclusive = saturating_add(x.live_inclusive, size_bytes);
    if (x.live_inclusive > x.peak_inclusive) {
      x.peak_inclusive = x.live_inclusive;
      x.peak_ts_ns = ts_ns;
    }
  }
  OwnerScopeFigures& own = f[p.lists[list + n]];
  own.exclusive_bytes = saturating_add(own.exclusive_bytes, size_bytes);
  ++own.exclusive_blocks;
  own.live_exclusive = saturating_add(own.live_exclusive, size_bytes);
  own.peak_exclusive = std::max(own.peak_exclusive, own.live_exclusive);
}

void owner_scopes_remove(std::vector<OwnerScopeFigures>& f, const OwnerPrefixes& p, uint32_t list,
                         uint64_t size_bytes) {
  const uint32_t n = p.lists[list];
  if (n == 0) return;
  for (uint32_t i = 1; i <= n; ++i) {
    uint64_t& live = f[p.lists[list + i]].live_inclusive;
    live = saturating_sub(live, size_bytes);
  }
  uint64_t& live = f[p.lists[list + n]].live_exclusive;
  live = saturating_sub(live, size_bytes);
}

void scope_alloc(OpenScope& s, uint32_t account, uint64_t size_bytes, bool innermost) {
  ScopeUse& u = scope_use(s, account);
  u.inclusive_bytes = saturating_add(u.inclusive_bytes, size_bytes);
  ++u.inclusive_blocks;
  u.live = saturating_add(u.live, size_bytes);
  u.peak = std::max(u.peak, u.live);
  if (innermost) {
    u.exclusive_bytes = saturating_add(u.exclusive_bytes, size_bytes);
    ++u.exclusive_blocks;
  }
}

void scope_free(OpenScope& s, uint32_t account, uint64_t size_bytes) {
  for (ScopeUse& u : s.uses)
    if (u.account == account) u.live = saturating_sub(u.live, size_bytes);
}

void close_scope(ScopeNames& names, const OpenScope& s) {
  uint32_t i = names.index.find(s.name);
  if (i == FlatIndex::kNone) {
    i = uint32_t(names.stats.size());
    names.stats.push_back({});
    names.stats.back().name = s.name;
    names.index.insert(s.name, i);
  }
  ScopeNameStats& st = names.stats[i];
  ++st.occurrences;
  for (const ScopeUse& u : s.uses) {
    ScopeNameFigures* f = nullptr;
    for (ScopeNameFigures& x : st.accounts)
      if (x.account == u.account) f = &x;
    if (!f) {
      st.accounts.push_back({});
      f = &st.accounts.back();
      f->account = u.account;
    }
    f->inclusive_bytes = saturating_add(f->inclusive_bytes, u.inclusive_bytes);
    f->inclusive_blocks += u.inclusive_blocks;
    f->exclusive_bytes = saturating_add(f->exclusive_bytes, u.exclusive_bytes);
    f->exclusive_blocks += u.exclusive_blocks;
    f->max_peak_bytes = std::max(f->max_peak_bytes, u.peak);
  }
}

std::vector<ScopeEntry> scope_entries(const ScopeNames& names, uint32_t account, ScopeKind kind,
                                      const StringTable& strings) {
  std::vector<ScopeEntry> out;
  for (const ScopeNameStats& st : names.stats) {
    for (const ScopeNameFigures& f : st.accounts) {
      if (f.account != account || f.inclusive_blocks == 0) continue;
      ScopeEntry e;
      e.kind = kind;
      if (st.name < strings.size()) e.name = strings.get(st.name);
      e.occurrences = int64_t(st.occurrences);
      e.inclusive_bytes = f.inclusive_bytes;
      e.inclusive_blocks = f.inclusive_blocks;
      e.exclusive_bytes = f.exclusive_bytes;
      e.exclusive_blocks = f.exclusive_blocks;
      e.peak_bytes = f.max_peak_bytes;
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(), [](const ScopeEntry& a, const ScopeEntry& b) {
    if (a.inclusive_bytes != b.inclusive_bytes) return a.inclusive_bytes > b.inclusive_bytes;
    return a.name < b.name;
  });
  return out;
}

}  // namespace memtap::blocks
