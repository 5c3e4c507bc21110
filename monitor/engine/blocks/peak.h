// Peak of Allocated per (process, device) and the live set at that peak, by owner, stack
// and name, kept in one streaming pass.
//
// Guarantee: the breakdown is exactly the live set at the first moment the maximum was
// reached (the event that took live bytes to their maximum, counted). It is kept without
// any block history: the account keeps live bytes per key, and a copy of them as they
// were at the peak. Only keys changed since the last peak ("dirty" keys) are copied when a
// new peak is reached, so the copying costs at most one key copy per event that touched a
// key (amortised O(1) per event, never O(keys) per peak), and memory is O(keys), not
// O(blocks).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/blocks/keys.h"

namespace memtap::blocks {

struct KeyBytes {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

// One account's live bytes and blocks, total and per key, with their copy at the peak.
struct LiveByKey {
  uint64_t live_bytes = 0;
  uint64_t live_blocks = 0;
  uint64_t peak_bytes = 0;
  uint64_t peak_blocks = 0;
  int64_t peak_ts_ns = kNoTime;
  // The most live bytes since the current step began (reset at each step boundary: the
  // step's own peak, leaks.h StepFigures).
  uint64_t step_peak_bytes = 0;
  std::array<std::vector<KeyBytes>, kDims> live;
  std::array<std::vector<KeyBytes>, kDims> at_peak;
  std::array<std::vector<uint8_t>, kDims> dirty;
  std::array<std::vector<uint32_t>, kDims> dirty_list;
};

using BlockKeys = std::array<uint32_t, kDims>;  // owner, stack and name keys of a block

void live_add(LiveByKey& l, const BlockKeys& keys, uint64_t size_bytes, int64_t ts_ns);
void live_remove(LiveByKey& l, const BlockKeys& keys, uint64_t size_bytes);

struct PeakEntry {
  KeyLabel key;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  double share = 0;  // bytes / the peak's bytes
  // An owner's entry: the stacks that hold most of its bytes (owner_top_stacks).
  std::vector<PeakEntry> stacks{};
};

// How many stacks a report names under each owner: its few largest, enough to say where
// the owner's memory comes from without repeating the stack breakdown.
constexpr size_t kTopStacksPerOwner = 3;

// The top_n stacks holding most of one owner's bytes in `pairs` (a LiveByKey's live or
// at_peak of kByOwnerStack), largest first (ties: more blocks, then smaller string id);
// share is of total_bytes. Empty for an owner never seen.
std::vector<PeakEntry> owner_top_stacks(const std::vector<KeyBytes>& pairs, const KeyIndex& keys,
                                        const StringTable& strings, const KeyLabel& owner,
                                        uint64_t total_bytes, size_t top_n);

struct PeakResult {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  Basis basis = Basis::kHostHeap;
  bool found = false;          // false: no block was ever counted (all other fields zero)
  int64_t ts_ns = kNoTime;     // when live bytes first reached the maximum
  uint64_t bytes = 0;          // the maximum of live bytes
  uint64_t blocks = 0;         // live blocks at that moment
  uint64_t current_bytes = 0;  // live bytes now, to show how far below the peak the run is
  // The top entries (PeakOptions::top_n), largest bytes first (ties: more blocks, then
  // smaller string id). by_stack keys are Python stacks, else C stacks, else names; each
  // by_owner entry carries its own top stacks.
  std::vector<PeakEntry> by_owner;
  std::vector<PeakEntry> by_stack;
  std::vector<PeakEntry> by_name;
};

PeakResult peak_result(const LiveByKey& l, const KeyIndex& keys, const StringTable& strings,
                       size_t top_n);

}  // namespace memtap::blocks
