// The block index's first step, on its thread: MALLOC and FREE events paired into blocks the
// way the engine pairs them (monitor/engine/blocks/: by process, device, layer and address,
// HOST mappings apart from the heap), ids given in allocation order, and the young blocks
// held in allocation order until they can be stored in that order: once freed, or once live
// longer than promote_after_ns (promoted: stored early as live, closed at their FREE).
//
// Storing in id order is what makes the store's inserts appends. Each stored block gets a
// level, its lifetime class, so that "live at t" can read each class over a window of ids
// no longer than its lifetimes (block_scan.h): level 0 for lifetimes up to promote_after_ns,
// k for up to promote_after_ns << k, kLiveLevel while a stored block is still live.
// A PTA block whose FREE said free_pending is closed at that FREE and remembered until its
// FREE_COMPLETED, which gives the sink that wait (a PendingFree). A new PTA block at its
// address, or a second FREE of it, ends a wait whose completion was lost.
// No SQLite here: what is ready goes to a BlockSink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "monitor/engine/flat_map.h"
#include "monitor/viewdata/block_index.h"

namespace memtap::viewdata {

// Layer values 0..7, then HOST anonymous mappings (the engine's layer_slot).
constexpr uint8_t kMmapSlot = 8;
constexpr int kSlots = 9;
constexpr uint8_t kLiveLevel = 255;
constexpr uint8_t kMaxLevel = 63;

inline uint8_t slot_of(Layer layer, bool is_mmap) {
  return layer == Layer::kHost && is_mmap ? kMmapSlot : uint8_t(layer);
}
inline Layer layer_of_slot(uint8_t slot) {
  return slot == kMmapSlot ? Layer::kHost : Layer(slot);
}

// One MALLOC or FREE as the index queues it: what pairing and a block's row need.
struct IndexEvent {
  int64_t ts_ns = 0;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t device = kHostDevice;
  uint32_t name = 0;  // StringTable ids, as the block's row keeps them
  uint32_t owner = 0;
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
  uint8_t slot = 0;
  bool is_free = false;
  bool free_pending = false;    // a FREE whose block waits for another stream
  bool free_completed = false;  // FREE_COMPLETED (is_free false): the wait is over
};

// A freed PTA block's wait for another stream: from its FREE (free_ns, where its row ends)
// to its FREE_COMPLETED (done_ns; kStillLive while it waits).
struct PendingFree {
  int64_t id = 0;  // the block's
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t free_ns = 0;
  int64_t done_ns = kStillLive;
};

// A block as the index keeps it: BlockRow with string ids for its text.
struct StoredBlock {
  int64_t id = 0;
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  uint8_t slot = 0;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  int64_t alloc_ns = 0;
  int64_t free_ns = kStillLive;
  uint32_t tid = 0;
  uint64_t allocation_id = 0;
  uint32_t owner = 0;
  uint32_t name = 0;
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
};

// Where blocks ready to store go (the SQLite store).
class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // A block's row, once: freed (level: lifetime_level) or still live (kLiveLevel).
  virtual void store(const StoredBlock& block, uint8_t level) = 0;
  // A block stored live was freed; `level` >= 1 (it lived past promote_after_ns).
  virtual void close_stored(int64_t id, int64_t free_ns, uint8_t level) = 0;
  // A pending free is over (done_ns set). Its block was given to store() or close_stored()
  // before.
  virtual void store_pending(const PendingFree& wait) = 0;
};

// 0 for lifetimes up to promote_after_ns (and negative ones: out-of-order times), else the
// smallest k with lifetime <= promote_after_ns << k (at most kMaxLevel).
uint8_t lifetime_level(int64_t lifetime_ns, int64_t promote_after_ns);

// promote_after_ns << level, saturated: the longest lifetime a level holds.
int64_t level_span_ns(uint8_t level, int64_t promote_after_ns);

// Which ids may belong to blocks allocated in a time span. Ids are given in allocation
// order, so the span's ids are one range; the first and last allocation time of every run
// of 1024 ids find it (events slightly out of order only widen it).
class AllocSpans {
 public:
  void add(int64_t id, int64_t alloc_ns);
  // Ids before this one were all allocated before from_ns (the last id + 1 when all were).
  int64_t first_from(int64_t from_ns) const;
  // Ids after this one were all allocated after to_ns (0 when all were).
  int64_t last_until(int64_t to_ns) const;

 private:
  static constexpr int64_t kRun = 1024;
  std::vector<int64_t> run_min_;     // by run: earliest allocation
  std::vector<int64_t> prefix_max_;  // by run: latest allocation in it or any before it
  int64_t last_id_ = 0;
};

class BlockPairing {
 public:
  explicit BlockPairing(int64_t promote_after_ns);

  void add(const IndexEvent& e, BlockSink& sink);
  // The freed young blocks go to the sink now, out of id order (a query must see them).
  void store_freed_young(BlockSink& sink);
  // Every young block goes to the sink, the live ones as promoted (no more input).
  void store_all(BlockSink& sink);

  // The young live blocks (in memory only), in id order.
  template <class F>
  void for_each_young_live(F&& f) const {
    for (const Young& y : young_)
      if (y.block.free_ns == kStillLive) f(y.block);
  }
  size_t young_live() const { return young_live_; }
  // Changes whenever the young live set does.
  uint64_t young_version() const { return young_version_; }

  int64_t promote_after_ns() const { return promote_after_ns_; }
  uint64_t blocks() const { return uint64_t(last_id_); }
  uint64_t unmatched_frees() const { return unmatched_frees_; }
  uint64_t pending_frees() const { return pending_frees_; }
  // The waits not over yet, in no particular order.
  template <class F>
  void for_each_open_pending(F&& f) const {
    for (size_t i = 0; i < scopes_.size(); ++i)
      scopes_[i]->pending.for_each([&](uint64_t, const OpenPending& p) {
        f(PendingFree{p.id, scope_keys_[i].first, scope_keys_[i].second, p.free_ns, kStillLive});
      });
  }
  int64_t newest_ns() const { return newest_ns_; }
  const AllocSpans& spans() const { return spans_; }
  // (pid, device) of the blocks, in the order first seen.
  const std::vector<std::pair<uint32_t, int32_t>>& scopes() const { return scope_keys_; }

 private:
  struct LiveRef {
    int64_t id;
    int64_t alloc_ns;
  };
  struct OpenPending {
    int64_t id;
    int64_t free_ns;
  };
  struct Scope {
    FlatMap<LiveRef> live[kSlots];  // address -> the block live there
    FlatMap<OpenPending> pending;   // PTA address -> the freed block waiting there
  };
  struct Young {
    StoredBlock block;
    bool stored = false;  // freed and given to the sink out of order (store_freed_young)
  };

  Scope* scope_of(uint32_t pid, int32_t device, bool make);
  void close(const LiveRef& ref, int64_t free_ns, BlockSink& sink);
  // Ends the wait at `addr` of the scope, if any, at `done_ns`.
  bool end_pending(Scope& scope, uint32_t pid, int32_t device, uint64_t addr, int64_t done_ns,
                   BlockSink& sink);
  void advance(BlockSink& sink);

  int64_t promote_after_ns_;
  int64_t last_id_ = 0;
  int64_t newest_ns_ = 0;
  bool any_event_ = false;
  uint64_t unmatched_frees_ = 0;
  uint64_t pending_frees_ = 0;
  FlatMap<uint32_t> scope_index_;  // (pid << 32 | device) -> scopes_
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::vector<std::pair<uint32_t, int32_t>> scope_keys_;
  uint64_t last_scope_key_ = ~0ull;  // consecutive events mostly share their scope
  Scope* last_scope_ = nullptr;
  // Blocks from head_id_ on, in id order: live, or freed and waiting for the older ones.
  std::deque<Young> young_;
  int64_t head_id_ = 1;
  size_t young_live_ = 0;
  uint64_t young_version_ = 0;
  AllocSpans spans_;
};

}  // namespace memtap::viewdata
