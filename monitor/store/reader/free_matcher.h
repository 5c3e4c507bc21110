// FREE rows completed from their MALLOCs.
//
// Older msMemScope files write a FREE without its size, and with `Device Id` N/A (the
// 2025-04 CSVs), so a FREE alone cannot say how many bytes went back nor on which device.
// Seen in time order, a FREE's block is the live MALLOC at the same address of the same
// process and layer (on the same device, or on whichever device had that address when the
// FREE names none); the FREE takes that block's size, device and allocation id where it
// lacks them.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap::reader {

class FreeMatcher {
 public:
  // Call for every event, in time order. MALLOCs open blocks, FREEs close (and complete)
  // them; other kinds are ignored.
  void observe(MemEvent* event);

 private:
  struct BlockKey {
    uint64_t addr;
    uint32_t pid;
    int32_t device;
    Layer layer;
    bool operator==(const BlockKey&) const = default;
  };
  struct KeyHash {
    size_t operator()(const BlockKey& key) const;
  };
  struct LiveBlock {
    uint64_t size_bytes;
    uint64_t allocation_id;
  };

  void complete_free(MemEvent* event);

  std::unordered_map<BlockKey, LiveBlock, KeyHash> live_;
  // Every device a MALLOC was seen on: the candidates for a FREE that names none.
  std::vector<int32_t> devices_;
};

// Runs a FreeMatcher over events already in time order.
void complete_frees(std::vector<MemEvent>* events);

}  // namespace memtap::reader
