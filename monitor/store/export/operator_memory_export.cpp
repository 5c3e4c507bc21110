// See operator_memory_export.h.
#include "monitor/store/export/operator_memory_export.h"

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/store/export/csv_field.h"
#include "monitor/store/export/device_curves.h"
#include "monitor/store/export/export_input.h"
#include "monitor/store/export/profiler_csv_text.h"
#include "monitor/store/export/text_file.h"

namespace memtap {

const char* const kOperatorMemoryHeader =
    "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
    "Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),"
    "Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),"
    "Release Total Active(MB),Stream Ptr,Device Type";

namespace {

struct BlockRow {
  uint32_t name = 0;
  int32_t device = kHostDevice;
  int slot = 0;            // timeline::layer_slot of the block
  int64_t size_bytes = 0;  // negative: freed, never seen allocated
  int64_t alloc_ns = kUnknown, release_ns = kUnknown, active_release_ns = kUnknown;
  bool has_alloc_totals = false, has_release_totals = false;
  CurvesNow at_alloc, at_release;
  uint64_t stream = 0;
};

struct BlockKey {
  int32_t device;
  int slot;
  uint64_t addr;
  bool operator==(const BlockKey&) const = default;
};
struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const {
    return std::hash<uint64_t>{}(k.addr * 31 + uint64_t(uint32_t(k.device)) * 17 +
                                 uint64_t(k.slot));
  }
};

// Blocks paired as the events come; rows in order of their first event.
class BlockPairing {
 public:
  void add(const MemEvent& e, const DeviceCurves& curves) {
    const int32_t device = e.device < 0 ? kHostDevice : e.device;
    const int slot = timeline::layer_slot(e.layer, e.is_mmap);
    const BlockKey key{device, slot, e.addr};
    if (timeline::is_framework_slot(slot) && e.kind != MemEventKind::kFreeCompleted) {
      framework_devices_.insert(device);
    }
    if (e.kind == MemEventKind::kFreeCompleted) {
      if (auto it = pending_.find(key); it != pending_.end()) {
        rows_[it->second].active_release_ns = e.ts_ns;
        pending_.erase(it);
      }
      return;
    }
    if (e.kind == MemEventKind::kMalloc) {
      live_[key] = rows_.size();  // a block still live there lost its FREE: it stays unfreed
      BlockRow& row = rows_.emplace_back();
      row.name = e.name;
      row.device = device;
      row.slot = slot;
      row.size_bytes = int64_t(e.size_bytes);
      row.alloc_ns = e.ts_ns;
      row.has_alloc_totals = true;
      row.at_alloc = curves.now(e.pid, device);
      row.stream = e.stream;
      return;
    }
    size_t index;
    if (auto it = live_.find(key); it != live_.end()) {
      index = it->second;
      live_.erase(it);
    } else {  // allocated before the recording began
      index = rows_.size();
      BlockRow& row = rows_.emplace_back();
      row.name = e.name;
      row.device = device;
      row.slot = slot;
      row.size_bytes = -int64_t(e.size_bytes);
      row.stream = e.stream;
    }
    BlockRow& row = rows_[index];
    row.release_ns = e.ts_ns;
    row.has_release_totals = true;
    row.at_release = curves.now(e.pid, device);
    if (e.free_pending && timeline::is_framework_slot(slot)) {
      pending_[key] = index;
    } else {
      row.active_release_ns = e.ts_ns;
    }
  }

  // The rows of the blocks Allocated counts on their device, in order of their first time.
  std::vector<const BlockRow*> rows() const {
    std::vector<const BlockRow*> out;
    for (const BlockRow& row : rows_) {
      const timeline::BlockClass counted = framework_devices_.count(row.device)
                                               ? timeline::BlockClass::kFramework
                                           : row.device < 0 ? timeline::BlockClass::kHostHeap
                                                            : timeline::BlockClass::kDriver;
      if (timeline::block_class(row.slot, row.device < 0) == counted) out.push_back(&row);
    }
    std::stable_sort(out.begin(), out.end(), [](const BlockRow* a, const BlockRow* b) {
      return first_ns(*a) < first_ns(*b);
    });
    return out;
  }

 private:
  static int64_t first_ns(const BlockRow& row) {
    return row.alloc_ns != kUnknown ? row.alloc_ns : row.release_ns;
  }

  std::vector<BlockRow> rows_;
  std::unordered_map<BlockKey, size_t, BlockKeyHash> live_, pending_;
  std::set<int32_t> framework_devices_;  // devices with framework blocks
};

std::string row_text(const BlockRow& row, const StringTable& strings) {
  const auto time = [](int64_t ns) { return ns == kUnknown ? std::string() : us_cell(ns); };
  const auto span = [](int64_t from, int64_t to) {
    return from == kUnknown || to == kUnknown ? std::string() : us_cell(to - from);
  };
  const auto totals = [](bool known, const CurvesNow& c) {
    return known ? mb_text(c.allocated) + "," + mb_text(c.reserved) + "," + mb_text(c.active)
                 : std::string(",,");
  };
  std::string line;
  append_csv_field(&line, strings.get(row.name));
  line += "," + kb_text(row.size_bytes);
  line += "," + time(row.alloc_ns);
  line += "," + time(row.release_ns);
  line += "," + time(row.active_release_ns);
  line += "," + span(row.alloc_ns, row.release_ns);
  line += "," + span(row.alloc_ns, row.active_release_ns);
  line += "," + totals(row.has_alloc_totals, row.at_alloc);
  line += "," + totals(row.has_release_totals, row.at_release);
  line += "," + stream_text(row.stream);
  line += "," + device_type_text(row.device);
  return line + "\n";
}

}  // namespace

bool export_operator_memory(const std::string& in, const std::string& partial,
                            const ExportOptions& options, ExportSummary* summary,
                            std::string* error) {
  Recording rec;
  DeviceCurves curves;
  BlockPairing blocks;
  OneProcess one_process;
  const bool read = stream_export_input(
      in, options.pid, &rec,
      [&](std::span<const MemEvent> batch) {
        for (const MemEvent& e : batch) {
          one_process.note(e);
          curves.add(e);
          if (e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree ||
              e.kind == MemEventKind::kFreeCompleted) {
            blocks.add(e, curves);
          }
        }
        return true;
      },
      error, options.progress);
  if (!read || !one_process.check(in, "operator-memory", error)) return false;
  summary->unread_rows = rec.warning;
  std::unique_ptr<TextFile> file = TextFile::create(partial, error);
  if (file == nullptr) return false;
  file->write(kOperatorMemoryHeader);
  file->write("\n");
  for (const BlockRow* row : blocks.rows()) {
    file->write(row_text(*row, rec.strings));
    ++summary->rows;
  }
  return file->close(error);
}

}  // namespace memtap
