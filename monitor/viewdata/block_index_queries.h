// BlockQueries over the index's store and pairing, on the index's thread: the scans of
// block_scan.h turned into the answers the views ask for. Counting, the top blocks, the
// sort of a table and the groups are done here over the few columns each needs; full rows
// are read by id only for what is returned.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/block_pairing.h"
#include "monitor/viewdata/block_scan.h"
#include "monitor/viewdata/block_store.h"

namespace memtap::viewdata {

class IndexQueries final : public BlockQueries {
 public:
  IndexQueries(BlockStore& store, BlockPairing& pairing);

  // Before a query: the store shows every block the pairing holds (the freed young ones
  // written, the young live ones in temp.young). `events` counts the events indexed, so a
  // table's sorted ids know when they are stale; `covered_until_ns` is covered_until_ns()'s.
  void sync(uint64_t events, int64_t covered_until_ns);

  BlockSet largest(const BlockFilter& filter, size_t limit) override;
  BlockPage page(const BlockFilter& filter, BlockColumn column, bool descending, size_t offset,
                 size_t count) override;
  std::optional<BlockRow> find(int64_t id) override;
  std::vector<BlockRow> all(const BlockFilter& filter, size_t limit, bool* truncated) override;
  std::vector<BlockGroup> live_groups(const BlockFilter& filter) override;
  std::vector<BlockRow> pending(const BlockFilter& filter, size_t limit) override;
  std::vector<std::pair<uint32_t, int32_t>> scopes() override;
  int64_t covered_until_ns() override { return covered_until_ns_; }

 private:
  // The sorted ids of the last page() query.
  struct SortedIds {
    bool valid = false;
    BlockFilter filter;
    BlockColumn column = BlockColumn::kId;
    bool descending = false;
    uint64_t events = 0;  // indexed when it was sorted
    std::vector<int64_t> ids;
  };

  bool scan(const BlockFilter& filter, const std::string& columns,
            const std::function<void(sqlite3_stmt*)>& row);
  BlockRow row_of(const StoredBlock& b);
  const std::string& text(uint32_t id);
  std::vector<uint32_t> text_ranks();
  bool sort_ids(const BlockFilter& filter, BlockColumn column, bool descending);

  BlockStore& store_;
  BlockPairing& pairing_;
  TextMatcher text_matcher_;
  ScanSources sources_;
  uint64_t young_version_ = ~0ull;  // of the young set temp.young holds
  uint64_t events_ = 0;
  int64_t covered_until_ns_ = std::numeric_limits<int64_t>::max();
  std::unordered_map<uint32_t, std::string> texts_;  // string id -> text, read so far
  SortedIds sorted_;
};

}  // namespace memtap::viewdata
