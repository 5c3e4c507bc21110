// See block_index.h. PLACEHOLDER: indexes nothing and answers empty, so that the window
// builds and runs while the real index is written.
#include "monitor/viewdata/block_index.h"

namespace memtap::viewdata {

namespace {

class EmptyQueries final : public BlockQueries {
 public:
  BlockSet largest(const BlockFilter&, size_t) override { return {}; }
  BlockPage page(const BlockFilter&, BlockColumn, bool, size_t, size_t) override { return {}; }
  std::optional<BlockRow> find(int64_t) override { return std::nullopt; }
  std::vector<BlockRow> all(const BlockFilter&, size_t, bool* truncated) override {
    *truncated = false;
    return {};
  }
  std::vector<BlockGroup> live_groups(const BlockFilter&) override { return {}; }
  std::vector<std::pair<uint32_t, int32_t>> scopes() override { return {}; }
};

class EmptyIndex final : public BlockIndex {
 public:
  void add(const MemEvent*, size_t, const StringTable&) override {}
  void finish_input() override {}
  void post(BlockQuery query) override {
    EmptyQueries q;
    query(q);
  }
  BlockIndexStatus status() const override { return {}; }
};

}  // namespace

std::unique_ptr<BlockIndex> BlockIndex::create(const BlockIndexOptions&, std::string*) {
  return std::make_unique<EmptyIndex>();
}

}  // namespace memtap::viewdata
