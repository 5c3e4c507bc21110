// Per-scope memory: bytes allocated inside a scope, inclusive (nested scopes too) and
// exclusive (only while it is the innermost), and the true peak inside it: the most bytes
// that were allocated within the scope and still live at one time.
//
// Scopes are owner labels ("a@b" is b inside a: a's inclusive figures count a@b's blocks)
// and delimited ranges: operators (OP_START..OP_END of a name on one thread; blocks that
// thread allocated in between) and MSTX ranges (Range_start..Range_end of a name in one
// process; blocks any of its threads allocated in between). Ranges may overlap; the
// innermost is the latest started. Only blocks of the basis' account count.
//
// A block belongs to an open occurrence when the occurrence started before it was
// allocated: the block keeps its allocation's event number and thread, so a FREE finds the
// occurrences to lower without any per-block list. Closed occurrences are folded into
// per-name figures at once; memory is O(names + open occurrences).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/flat_map.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks {

// --- owner labels ---

struct OwnerScopeFigures {
  uint64_t inclusive_bytes = 0;
  uint64_t inclusive_blocks = 0;
  uint64_t exclusive_bytes = 0;
  uint64_t exclusive_blocks = 0;
  uint64_t live_inclusive = 0;
  uint64_t peak_inclusive = 0;
  int64_t peak_ts_ns = kNoTime;
  uint64_t live_exclusive = 0;
  uint64_t peak_exclusive = 0;
};

// Every prefix of every owner label seen, interned for the whole analyzer.
struct OwnerPrefixes {
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::string> names;
  FlatIndex by_owner;  // owner string id -> offset in lists
  // At an offset: the count, then the prefix ids, outermost first. Offset 0: no owner.
  std::vector<uint32_t> lists{0};
};

// Offset of the prefix list of an owner label ("a@b@c" -> a, a@b, a@b@c).
uint32_t owner_prefix_list(OwnerPrefixes& p, const StringTable& strings, uint32_t owner);

void owner_scopes_add(std::vector<OwnerScopeFigures>& f, const OwnerPrefixes& p, uint32_t list,
                      uint64_t size_bytes, int64_t ts_ns);
void owner_scopes_remove(std::vector<OwnerScopeFigures>& f, const OwnerPrefixes& p, uint32_t list,
                         uint64_t size_bytes);

// --- operators and MSTX ranges ---

// One open occurrence's figures on one account (accounts are numbered by the analyzer).
struct ScopeUse {
  uint32_t account = 0;
  uint64_t inclusive_bytes = 0;
  uint64_t inclusive_blocks = 0;
  uint64_t exclusive_bytes = 0;
  uint64_t exclusive_blocks = 0;
  uint64_t live = 0;
  uint64_t peak = 0;
};

// A live block's uses somewhere in the analyzer (BlockTable::uses_at); stale once their
// generation moved on.
struct BlockRef {
  uint32_t device = 0;
  uint32_t uses = 0;
  uint32_t generation = 0;
  uint8_t layer_slot = 0;
};

struct OpenScope {
  uint32_t name = 0;
  uint64_t start_seq = 0;
  int64_t start_ts_ns = 0;
  std::vector<ScopeUse> uses;
  // Outermost operators only: the blocks allocated inside, whose last operator use is this
  // operator's end (inefficiency without ACCESS events). Capped at kMaxScopeBlocks.
  std::vector<BlockRef> blocks;
};

constexpr size_t kMaxScopeBlocks = size_t(1) << 20;
constexpr size_t kMaxOpenScopes = 256;  // per thread (operators) and per process (ranges)

inline ScopeUse& scope_use(OpenScope& s, uint32_t account) {
  for (ScopeUse& u : s.uses)
    if (u.account == account) return u;
  s.uses.push_back({});
  s.uses.back().account = account;
  return s.uses.back();
}

void scope_alloc(OpenScope& s, uint32_t account, uint64_t size_bytes, bool innermost);
void scope_free(OpenScope& s, uint32_t account, uint64_t size_bytes);

// Closed occurrences of one name, per account.
struct ScopeNameFigures {
  uint32_t account = 0;
  uint64_t inclusive_bytes = 0;
  uint64_t inclusive_blocks = 0;
  uint64_t exclusive_bytes = 0;
  uint64_t exclusive_blocks = 0;
  uint64_t max_peak_bytes = 0;
};

struct ScopeNameStats {
  uint32_t name = 0;
  uint64_t occurrences = 0;
  std::vector<ScopeNameFigures> accounts;
};

struct ScopeNames {
  FlatIndex index;  // name string id -> stats
  std::vector<ScopeNameStats> stats;
};

void close_scope(ScopeNames& names, const OpenScope& s);

// --- results ---

enum class ScopeKind : uint8_t { kOwner, kOperator, kRange };

struct ScopeEntry {
  ScopeKind kind = ScopeKind::kOwner;
  std::string name;
  // Operators and ranges: closed occurrences of the name. Owners: -1 (a label has no
  // events that open and close it).
  int64_t occurrences = -1;
  uint64_t inclusive_bytes = 0;  // allocated inside, nested scopes included
  uint64_t inclusive_blocks = 0;
  uint64_t exclusive_bytes = 0;  // allocated while it was the innermost scope
  uint64_t exclusive_blocks = 0;
  // Owners: the most bytes allocated under the label (inclusive) live at once, and when.
  // Operators and ranges: the largest true peak of one occurrence.
  uint64_t peak_bytes = 0;
  int64_t peak_ts_ns = kNoTime;       // owners only
  uint64_t exclusive_peak_bytes = 0;  // owners only
  uint64_t live_bytes = 0;            // owners only: allocated under the label, live now
};

struct ScopeResult {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  Basis basis = Basis::kHostHeap;
  std::vector<ScopeEntry> owners;     // by name, so that "a" comes right before "a@b"
  std::vector<ScopeEntry> operators;  // most inclusive bytes first
  std::vector<ScopeEntry> ranges;     // most inclusive bytes first
  uint64_t open_operators = 0;        // occurrences not closed yet (not in the figures)
  uint64_t open_ranges = 0;
  uint64_t unmatched_ends = 0;  // OP_END / Range_end with no open occurrence of its name
};

// Operators or ranges of one account, as result entries.
std::vector<ScopeEntry> scope_entries(const ScopeNames& names, uint32_t account, ScopeKind kind,
                                      const StringTable& strings);

}  // namespace memtap::blocks
