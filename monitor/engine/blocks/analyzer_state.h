// BlockAnalyzer's state (private to block_analyzer*.cpp): processes, their devices, the
// two accounts of each device (basis.h) and what each analysis keeps per account.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "monitor/engine/blocks/block_analyzer.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/blocks/keys.h"
#include "monitor/engine/blocks/ooms.h"
#include "monitor/engine/flat_map.h"
#include "monitor/engine/pool_samples.h"

namespace memtap::blocks {

// Layer values 0..7, then HOST mappings.
constexpr int kLayerSlots = 9;
constexpr uint8_t kMmapSlot = 8;

inline uint8_t layer_slot(Layer layer, bool is_mmap) {
  return layer == Layer::kHost && is_mmap ? kMmapSlot : uint8_t(layer);
}

struct LayerState {
  BlockTable table;
  LayerTotals totals;
  bool seen = false;
};

struct Account {
  LiveByKey live;
  LiveTrend trend;
  StepHistory steps;
  FinishedByKey finished;
  std::vector<OwnerScopeFigures> owner_scopes;  // by owner prefix id
  InefficiencyTally by_access;
  InefficiencyTally by_operators;
};

struct DeviceState {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  uint32_t index = 0;    // in AnalyzerState::devices
  uint32_t process = 0;  // in AnalyzerState::processes
  std::array<LayerState, kLayerSlots> layers;
  KeyIndex keys;
  std::vector<uint32_t> owner_prefix_list;  // by owner key: offset in OwnerPrefixes::lists
  std::array<Account, kAccounts> accounts;
  bool pta_seen = false;
  int64_t pool_total = kUnknown;  // the latest PTA event's pool_total or pool SNAPSHOT's reserved
  PoolSamples pool_samples;       // the pool SNAPSHOTs, by component (their reserved summed)
  FlatMap<PendingBlock> pending;  // PTA blocks whose free is pending, by address
  FragmentationTracker fragmentation;

  bool is_host() const { return device == kHostDevice; }
  uint8_t basis_account() const {
    return is_host() || pta_seen ? kPrimaryAccount : kSecondaryAccount;
  }
  Basis basis() const {
    return is_host() ? Basis::kHostHeap : pta_seen ? Basis::kPta : Basis::kAllLayers;
  }
  // Accounts are numbered across the analyzer for scope figures.
  uint32_t account_id(uint8_t account) const { return index * kAccounts + account; }
};

// A block of d with the owner and name its keys stand for.
inline JudgedBlock judged_block(const DeviceState& d, uint64_t addr, const LiveBlock& b,
                                const BlockUses& u) {
  return {addr, d.keys.string_id(kByOwner, b.owner_key), d.keys.string_id(kByName, b.name_key), b,
          u};
}

struct ThreadState {
  std::vector<OpenScope> ops;  // outermost first
  uint64_t dropped = 0;        // OP_STARTs past kMaxOpenScopes, whose ends are skipped too
};

struct ProcessState {
  uint32_t pid = 0;
  std::vector<uint32_t> devices;  // indices in AnalyzerState::devices
  FlatIndex thread_index;         // tid -> threads
  std::vector<ThreadState> threads;
  std::vector<OpenScope> ranges;  // open MSTX ranges, oldest first
  uint64_t steps = 0;
  int64_t step_ts_ns = kNoTime;  // when the last step began
  uint64_t access_events = 0;
  uint64_t op_events = 0;
  uint64_t unmatched_ends = 0;
  ScopeNames operators;
  ScopeNames range_names;
};

struct AnalyzerState {
  const StringTable& strings;
  BlockAnalyzerOptions options;
  uint64_t seq = 0;  // events added; an event's number is seq after it is counted
  int64_t now_ns = kNoTime;
  FlatIndex process_index;  // pid -> processes
  std::vector<std::unique_ptr<ProcessState>> processes;
  FlatIndex device_index;  // (pid << 32 | device) -> devices
  std::vector<std::unique_ptr<DeviceState>> devices;
  OwnerPrefixes owner_prefixes;
  OomLog ooms;
  // The last (pid, device) looked up: consecutive events mostly share it.
  uint64_t last_device_key = ~0ull;
  DeviceState* last_device = nullptr;

  AnalyzerState(const StringTable& s, BlockAnalyzerOptions o) : strings(s), options(o) {}

  static uint64_t device_key(uint32_t pid, int32_t device) {
    return (uint64_t(pid) << 32) | uint32_t(device);
  }
  // The last device looked up if it has `key`, else null. Every key is possible, the
  // initial ~0 too (pid 4294967295 on the host, from a file or a message): only a device
  // looked up before is the last one.
  DeviceState* last_device_if(uint64_t key) const {
    return last_device != nullptr && key == last_device_key ? last_device : nullptr;
  }
  const DeviceState* find_device(uint32_t pid, int32_t device) const {
    const uint32_t i = device_index.find(device_key(pid, device));
    return i == FlatIndex::kNone ? nullptr : devices[i].get();
  }
  const ProcessState* find_process(uint32_t pid) const {
    const uint32_t i = process_index.find(pid);
    return i == FlatIndex::kNone ? nullptr : processes[i].get();
  }
};

}  // namespace memtap::blocks
