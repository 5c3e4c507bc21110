// See block_index_queries.h.
#include "monitor/viewdata/block_index_queries.h"

#include <algorithm>
#include <queue>
#include <tuple>

namespace memtap::viewdata {

namespace {

constexpr size_t kMaxCachedTexts = 65536;

bool same_filter(const BlockFilter& a, const BlockFilter& b) {
  return std::tie(a.pid, a.device, a.t0_ns, a.t1_ns, a.min_size, a.max_size, a.text, a.layer,
                  a.mmap) == std::tie(b.pid, b.device, b.t0_ns, b.t1_ns, b.min_size, b.max_size,
                                      b.text, b.layer, b.mmap);
}

// A signed value as an unsigned key in the same order.
uint64_t signed_key(int64_t v) {
  return uint64_t(v) ^ (uint64_t{1} << 63);
}

// Past this many blocks, largest() reads every column of the matching blocks as it scans
// them rather than each winner again by id afterwards.
constexpr size_t kLookedUpBlocks = 1000;

// A block kept by largest(): the worst of them on top of the heap.
struct Ranked {
  uint64_t size;
  int64_t id;
  StoredBlock block;  // when the scan read every column
};
// Larger first, then earlier.
bool ranks_before(uint64_t size, int64_t id, const Ranked& r) {
  return size != r.size ? size > r.size : id < r.id;
}
struct WorseFirst {
  bool operator()(const Ranked& a, const Ranked& b) const { return ranks_before(a.size, a.id, b); }
};

}  // namespace

IndexQueries::IndexQueries(BlockStore& store, BlockPairing& pairing)
    : store_(store),
      pairing_(pairing),
      text_matcher_(store),
      sources_{store, pairing, text_matcher_} {}

void IndexQueries::sync(uint64_t events, int64_t covered_until_ns) {
  events_ = events;
  covered_until_ns_ = covered_until_ns;
  if (texts_.size() > kMaxCachedTexts) texts_.clear();
  if (store_.failed()) return;
  pairing_.store_freed_young(store_);
  store_.flush();
  if (pairing_.young_version() == young_version_) return;
  std::vector<StoredBlock> young;
  young.reserve(pairing_.young_live());
  pairing_.for_each_young_live([&](const StoredBlock& b) { young.push_back(b); });
  store_.set_young(young);
  young_version_ = pairing_.young_version();
}

bool IndexQueries::scan(const BlockFilter& filter, const std::string& columns,
                        const std::function<void(sqlite3_stmt*)>& row) {
  return scan_blocks(sources_, filter, columns, row);
}

const std::string& IndexQueries::text(uint32_t id) {
  auto it = texts_.find(id);
  if (it == texts_.end()) it = texts_.emplace(id, store_.text(id)).first;
  return it->second;
}

BlockRow IndexQueries::row_of(const StoredBlock& b) {
  BlockRow r;
  r.id = b.id;
  r.pid = b.pid;
  r.device = b.device;
  r.layer = layer_of_slot(b.slot);
  r.is_mmap = b.slot == kMmapSlot;
  r.addr = b.addr;
  r.size_bytes = b.size_bytes;
  r.alloc_ns = b.alloc_ns;
  r.free_ns = b.free_ns;
  r.tid = b.tid;
  r.allocation_id = b.allocation_id;
  r.owner = text(b.owner);
  r.name = text(b.name);
  r.stack_python = text(b.stack_python);
  r.stack_c = text(b.stack_c);
  return r;
}

BlockSet IndexQueries::largest(const BlockFilter& filter, size_t limit) {
  BlockSet set;
  const bool whole_rows = limit > kLookedUpBlocks;
  std::priority_queue<Ranked, std::vector<Ranked>, WorseFirst> top;
  const std::string columns = whole_rows ? "b.size, " + block_columns("b.") : "b.size, b.id";
  const bool ok = scan(filter, columns, [&](sqlite3_stmt* s) {
    const uint64_t size = uint64_t(sqlite3_column_int64(s, 0));
    const int64_t id = sqlite3_column_int64(s, 1);
    ++set.matching_blocks;
    set.matching_bytes += size;
    if (top.size() < limit || (limit != 0 && ranks_before(size, id, top.top()))) {
      if (top.size() == limit) top.pop();
      top.push({size, id, whole_rows ? read_block(s, 1) : StoredBlock{}});
    }
  });
  if (!ok) return {};
  std::vector<StoredBlock> blocks(top.size());
  for (size_t i = top.size(); i-- > 0; top.pop()) {
    if (whole_rows)
      blocks[i] = top.top().block;
    else if (!store_.fetch(top.top().id, &blocks[i]))
      return {};  // a failure: nothing
  }
  set.blocks.reserve(blocks.size());
  for (const StoredBlock& b : blocks) set.blocks.push_back(row_of(b));
  if (store_.failed()) return {};
  return set;
}

std::vector<BlockRow> IndexQueries::all(const BlockFilter& filter, size_t limit, bool* truncated) {
  BlockSet set = largest(filter, limit);
  if (truncated) *truncated = set.matching_blocks > set.blocks.size();
  return std::move(set.blocks);
}

std::optional<BlockRow> IndexQueries::find(int64_t id) {
  StoredBlock b;
  if (!store_.fetch(id, &b)) return std::nullopt;
  return row_of(b);
}

std::vector<uint32_t> IndexQueries::text_ranks() {
  std::vector<uint32_t> ranks;
  reader::Statement stmt;
  const char* sql = "SELECT id FROM strings ORDER BY text COLLATE NOCASE, text";
  int rc = sqlite3_prepare_v2(store_.db(), sql, -1, &stmt.stmt, nullptr);
  uint32_t rank = 0;  // 0: no text, first
  while (rc == SQLITE_OK && (rc = sqlite3_step(stmt.stmt)) == SQLITE_ROW) {
    const uint64_t id = uint64_t(sqlite3_column_int64(stmt.stmt, 0));
    if (id >= ranks.size()) ranks.resize(id + 1, 0);
    ranks[id] = ++rank;
    rc = SQLITE_OK;
  }
  if (rc != SQLITE_DONE) store_.fail(rc);
  return ranks;
}

bool IndexQueries::sort_ids(const BlockFilter& filter, BlockColumn column, bool descending) {
  std::string columns = "b.id, ";
  switch (column) {
    case BlockColumn::kId:
      columns += "b.id";
      break;
    case BlockColumn::kAddr:
      columns += "b.addr";
      break;
    case BlockColumn::kSize:
      columns += "b.size";
      break;
    case BlockColumn::kAllocTime:
      columns += "b.alloc_ns";
      break;
    case BlockColumn::kFreeTime:
      columns += "b.free_ns";
      break;
    case BlockColumn::kLifetime:
      columns += "b.free_ns, b.alloc_ns";
      break;
    case BlockColumn::kLayer:
      columns += "b.slot";
      break;
    case BlockColumn::kOwner:
      columns += "b.owner";
      break;
    case BlockColumn::kName:
      columns += "b.name";
      break;
    case BlockColumn::kThread:
      columns += "b.tid";
      break;
    case BlockColumn::kAllocationId:
      columns += "b.allocation_id";
      break;
  }
  std::vector<uint32_t> ranks;
  if (column == BlockColumn::kOwner || column == BlockColumn::kName) ranks = text_ranks();
  const int64_t now = pairing_.newest_ns();
  std::vector<std::pair<uint64_t, int64_t>> keyed;  // (key, id)
  const bool ok = scan(filter, columns, [&](sqlite3_stmt* s) {
    const int64_t id = sqlite3_column_int64(s, 0);
    const int64_t v = sqlite3_column_int64(s, 1);
    uint64_t key;
    switch (column) {
      case BlockColumn::kAddr:
      case BlockColumn::kSize:
      case BlockColumn::kAllocationId:
        key = uint64_t(v);
        break;
      case BlockColumn::kLifetime:
        key = signed_key((v == kStillLive ? now : v) - sqlite3_column_int64(s, 2));
        break;
      case BlockColumn::kLayer: {
        const uint8_t slot = uint8_t(v);
        key = uint64_t(layer_of_slot(slot)) * 2 + (slot == kMmapSlot ? 1 : 0);
        break;
      }
      case BlockColumn::kOwner:
      case BlockColumn::kName:
        key = uint64_t(v) < ranks.size() ? ranks[size_t(v)] : 0;
        break;
      default:
        key = signed_key(v);
        break;
    }
    keyed.emplace_back(descending ? ~key : key, id);
  });
  if (!ok || store_.failed()) return false;
  std::sort(keyed.begin(), keyed.end());
  sorted_.ids.clear();
  sorted_.ids.reserve(keyed.size());
  for (const auto& k : keyed) sorted_.ids.push_back(k.second);
  return true;
}

BlockPage IndexQueries::page(const BlockFilter& filter, BlockColumn column, bool descending,
                             size_t offset, size_t count) {
  const bool same = sorted_.valid && same_filter(sorted_.filter, filter) &&
                    sorted_.column == column && sorted_.descending == descending;
  // The first page after new events sorts again (a refresh); later pages keep the order
  // they were paged in.
  if (!same || (offset == 0 && sorted_.events != events_)) {
    sorted_.valid = false;
    if (!sort_ids(filter, column, descending)) return {};
    sorted_.valid = true;
    sorted_.filter = filter;
    sorted_.column = column;
    sorted_.descending = descending;
    sorted_.events = events_;
  }
  BlockPage page;
  page.offset = offset;
  page.total_rows = sorted_.ids.size();
  const size_t end = std::min(sorted_.ids.size(), offset + std::min(count, sorted_.ids.size()));
  for (size_t i = offset; i < end; ++i) {
    StoredBlock b;
    if (store_.fetch(sorted_.ids[i], &b)) page.rows.push_back(row_of(b));
  }
  if (store_.failed()) return {};
  return page;
}

std::vector<BlockGroup> IndexQueries::live_groups(const BlockFilter& filter) {
  BlockFilter at = filter;
  at.t0_ns = at.t1_ns;
  struct Key {
    uint8_t slot;
    uint32_t owner;
    uint32_t stack;
    bool operator==(const Key& o) const {
      return slot == o.slot && owner == o.owner && stack == o.stack;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()((uint64_t(k.owner) << 32 | k.stack) * 31 + k.slot);
    }
  };
  std::unordered_map<Key, std::pair<uint64_t, uint64_t>, KeyHash> groups;  // bytes, blocks
  const bool ok =
      scan(at, "b.slot, b.owner, b.stack_python, b.stack_c, b.name, b.size", [&](sqlite3_stmt* s) {
        const auto col = [s](int i) { return uint32_t(sqlite3_column_int64(s, i)); };
        // keys.h's rule: the Python stack, else the C stack, else the name.
        const uint32_t stack = col(2) ? col(2) : col(3) ? col(3) : col(4);
        auto& g = groups[{uint8_t(col(0)), col(1), stack}];
        g.first += uint64_t(sqlite3_column_int64(s, 5));
        ++g.second;
      });
  if (!ok) return {};
  std::vector<BlockGroup> out;
  out.reserve(groups.size());
  for (const auto& [key, value] : groups) {
    BlockGroup g;
    g.layer = layer_of_slot(key.slot);
    g.is_mmap = key.slot == kMmapSlot;
    g.owner = text(key.owner);
    g.stack = text(key.stack);
    g.bytes = value.first;
    g.blocks = value.second;
    out.push_back(std::move(g));
  }
  if (store_.failed()) return {};
  std::sort(out.begin(), out.end(), [](const BlockGroup& a, const BlockGroup& b) {
    return std::tie(b.bytes, a.layer, a.is_mmap, a.owner, a.stack) <
           std::tie(a.bytes, b.layer, b.is_mmap, b.owner, b.stack);
  });
  return out;
}

std::vector<BlockRow> IndexQueries::pending(const BlockFilter& filter, size_t limit) {
  const int64_t t = filter.t1_ns;
  std::vector<PendingFree> waits = store_.pending_at(filter.pid, filter.device, t, limit);
  pairing_.for_each_open_pending([&](const PendingFree& w) {
    if (w.pid == filter.pid && w.device == filter.device && w.free_ns <= t && waits.size() < limit)
      waits.push_back(w);
  });
  std::vector<BlockRow> out;
  out.reserve(waits.size());
  for (const PendingFree& w : waits) {
    StoredBlock b;
    if (!store_.fetch(w.id, &b)) continue;  // gone (a failure): not drawn
    out.push_back(row_of(b));
    out.back().free_completed_ns = w.done_ns;
  }
  if (store_.failed()) return {};
  std::sort(out.begin(), out.end(),
            [](const BlockRow& a, const BlockRow& b) { return a.addr < b.addr; });
  return out;
}

std::vector<std::pair<uint32_t, int32_t>> IndexQueries::scopes() {
  if (store_.failed()) return {};
  return pairing_.scopes();
}

}  // namespace memtap::viewdata
