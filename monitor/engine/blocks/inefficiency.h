// Inefficient blocks (msMemScope's lazy_used, delayed_free, long_idle) of one account.
//
// A block's uses come from ACCESS events on its address (the block's start address; an
// access inside a block is not searched for). A process with no ACCESS event at all falls
// back to operators: a block allocated while an operator (OP_START..OP_END) was open on
// its thread counts as used until the outermost such operator ended, so only delayed_free
// can be found that way (freed long after the operator that made it had finished); blocks
// allocated outside operators are not judged. With neither, the result says so
// (no_use_events) instead of reporting an empty, clean-looking list.
//
// A gap counts when it is at least min_ns and at least min_fraction of the block's
// lifetime (set either to 0 to use only the other); blocks below min_size_bytes are not
// judged. Blocks are judged when they are freed (thresholds apply as events arrive) and
// blocks still live are judged when a result is asked for (lazy_used and long_idle only:
// their release has not happened). Finished blocks leave counts, bytes and the top_n
// blocks per category by wasted bytes x time behind, nothing else.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks {

struct GapThreshold {
  int64_t min_ns = 1'000'000;  // 1 ms
  double min_fraction = 0.5;   // of the block's lifetime (or age, while live)
};

struct InefficiencyOptions {
  GapThreshold lazy_used;     // allocation -> first use
  GapThreshold delayed_free;  // last use -> free
  GapThreshold long_idle;     // the longest time between two consecutive uses
  uint64_t min_size_bytes = 0;
};

enum Category : int { kLazyUsed = 0, kDelayedFree = 1, kLongIdle = 2, kNeverUsed = 3 };
constexpr int kCategories = 4;

struct InefficientBlock {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  uint32_t owner = 0;  // StringTable ids, and the strings (filled in results)
  uint32_t name = 0;
  std::string owner_label;
  std::string name_label;
  int64_t alloc_ts_ns = 0;
  int64_t free_ts_ns = kNoTime;  // kNoTime: still live
  int64_t first_use_ns = kNoTime;
  int64_t last_use_ns = kNoTime;
  int64_t gap_start_ns = kNoTime;  // the wasted interval of this category
  int64_t gap_ns = 0;
};

struct CategoryTally {
  uint64_t blocks = 0;
  uint64_t bytes = 0;
  std::vector<InefficientBlock> top;  // a min-heap on size x gap while collecting
};

struct InefficiencyTally {
  uint64_t judged = 0;  // blocks judged (freed, with a use source)
  std::array<CategoryTally, kCategories> categories;
};

// A block as the judges read it: the table's record with its address, labels and uses.
struct JudgedBlock {
  uint64_t addr;
  uint32_t owner;  // StringTable ids
  uint32_t name;
  const LiveBlock& block;
  const BlockUses& uses;
};

// From ACCESS uses. freed: end_ns is the block's free; else it is "now" and the block live.
void judge_by_access(InefficiencyTally& t, const JudgedBlock& b, int64_t end_ns, bool freed,
                     const InefficiencyOptions& o, size_t top_n);
// From operator ranges (only blocks allocated inside an operator).
void judge_by_operators(InefficiencyTally& t, const JudgedBlock& b, int64_t end_ns, bool freed,
                        const InefficiencyOptions& o, size_t top_n);

enum class UseSource : uint8_t { kNone, kAccess, kOperators };

struct InefficiencyCategory {
  uint64_t blocks = 0;
  uint64_t bytes = 0;
  std::vector<InefficientBlock> top;  // most size x gap first
};

struct InefficiencyResult {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  Basis basis = Basis::kHostHeap;
  UseSource source = UseSource::kNone;
  // True when the process has neither ACCESS nor operator events: nothing could be judged,
  // and empty categories mean "unknown", not "no inefficient block".
  bool no_use_events = true;
  uint64_t blocks_judged = 0;
  InefficiencyCategory lazy_used;
  InefficiencyCategory delayed_free;
  InefficiencyCategory long_idle;
  InefficiencyCategory never_used;  // ACCESS source only: freed without any access
};

// Sorts a tally's heaps into a result's categories (labels filled from strings).
void fill_categories(InefficiencyResult& r, const InefficiencyTally& t, const StringTable& strings);

}  // namespace memtap::blocks
