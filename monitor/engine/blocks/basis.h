// Which blocks a (process, device) counts as "Allocated" (docs/design.md, monitor/engine/blocks),
// the basis of peak, leaks, scopes and inefficiency figures.
//
// A block goes to one of two accounts as it is allocated: the primary one (host: the heap
// without mappings; devices: the framework pool, PTA) or the secondary one (devices: every
// other layer). A device reports the primary account once it has seen a PTA block, else
// the secondary: its live MALLOC bytes. Both are kept from the start because a device's
// first PTA block may come after HAL blocks, and by then the secondary account's figures
// are the only ones that describe the time before.
#pragma once

#include <cstdint>

#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks {

enum class Basis : uint8_t {
  kHostHeap,   // device kHostDevice: layers HOST (not is_mmap), HOST_PINNED and HAL
  kPta,        // a device with PTA blocks: the PTA layer
  kAllLayers,  // a device without PTA blocks: every layer's live bytes
};

constexpr uint8_t kPrimaryAccount = 0;
constexpr uint8_t kSecondaryAccount = 1;
constexpr int kAccounts = 2;

// The account a block of this kind belongs to; kNoAccount (0xFF) for none.
inline uint8_t account_of(int32_t device, Layer layer, bool is_mmap) {
  // Host: the blocks the host's Allocated curve counts (timeline/curve_rules.h's
  // block_class): the heap without mappings and pinned host buffers, in either spelling.
  if (device == kHostDevice) {
    const int slot = timeline::layer_slot(layer, is_mmap);
    return timeline::block_class(slot, true) == timeline::BlockClass::kHostHeap ? kPrimaryAccount
                                                                                : 0xFF;
  }
  return layer == Layer::kPta ? kPrimaryAccount : kSecondaryAccount;
}

inline const char* basis_name(Basis b) {
  switch (b) {
    case Basis::kHostHeap:
      return "HOST heap";
    case Basis::kPta:
      return "PTA";
    case Basis::kAllLayers:
      return "all layers";
  }
  return "?";
}

}  // namespace memtap::blocks
