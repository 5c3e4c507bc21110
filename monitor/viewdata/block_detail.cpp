// See block_detail.h.
#include "monitor/viewdata/block_detail.h"

#include <cstdio>

#include "monitor/report/units.h"
#include "monitor/viewdata/labels.h"

namespace memtap::viewdata {

std::string since_start_text(int64_t ns, int64_t origin_ns) {
  char text[48];
  std::snprintf(text, sizeof text, "+%.3f s", double(ns - origin_ns) / 1e9);
  return text;
}

BlockDetail block_detail(const BlockRow& b, int64_t origin_ns, int64_t now_ns) {
  BlockDetail d;
  d.title = "Block " + std::to_string(b.id) + ": " + bytes_text(double(b.size_bytes)) + " " +
            layer_label(b.layer, b.is_mmap) + " on " + device_text(b.device);
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(b.addr));
  const bool live = b.free_ns == kStillLive;
  d.fields = {
      {"Size", bytes_text(double(b.size_bytes)) + " (" + std::to_string(b.size_bytes) + " B)"},
      {"Address", addr},
      {"Layer", layer_label(b.layer, b.is_mmap)},
      {"owner", b.owner.empty() ? "(no owner)" : b.owner},
      {"Name", b.name.empty() ? "(none)" : b.name},
      {"Allocated", since_start_text(b.alloc_ns, origin_ns)},
      {"Freed", live ? "still live" : since_start_text(b.free_ns, origin_ns)},
      {"Lifetime", live ? duration_text(now_ns - b.alloc_ns) + " so far"
                        : duration_text(b.free_ns - b.alloc_ns)},
      {"Thread Id", std::to_string(b.tid)},
      {"allocation_id", std::to_string(b.allocation_id)},
      {"Process Id", std::to_string(b.pid)},
  };
  d.stack_python = b.stack_python;
  d.stack_c = b.stack_c;
  return d;
}

}  // namespace memtap::viewdata
