// See torch_snapshot_export.h. The events are taken in, device by device, as the trace
// entries they become; the pool at the end is then worked out by playing those entries, and
// the file written: device_traces, then the segments live at the end.
#include "monitor/store/export/torch_snapshot_export.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "monitor/model/python_frame.h"
#include "monitor/model/torch_snapshot_facts.h"
#include "monitor/store/export/export_input.h"
#include "monitor/store/export/pickle_writer.h"
#include "monitor/store/export/text_file.h"

namespace memtap {
namespace {

enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom,
};

const char* action_name(Action a) {
  switch (a) {
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kSegmentAlloc:
      return "segment_alloc";
    case Action::kSegmentFree:
      return "segment_free";
    case Action::kSegmentMap:
      return "segment_map";
    case Action::kSegmentUnmap:
      return "segment_unmap";
    case Action::kOom:
      return "oom";
  }
  return "?";
}

bool is_segment_action(Action a) {
  return a == Action::kSegmentAlloc || a == Action::kSegmentFree || a == Action::kSegmentMap ||
         a == Action::kSegmentUnmap;
}

// One trace entry. `addr` of an oom is the device's free bytes (its device_free).
struct Entry {
  Action action = Action::kAlloc;
  int64_t ts_ns = 0;
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
  uint32_t owner = 0;
  uint32_t name = 0;
  // A block or segment that was there before the recording's trace began (owner
  // kBeforeTraceOwner at the device's first instant, as memtap reads a snapshot): part of the
  // pool, not of the trace, as PyTorch's own snapshot had it.
  bool before_trace = false;
};

// What one device's events became, in time order.
struct DeviceEntries {
  std::vector<Entry> entries;
  bool has_pool = false;  // PTA blocks: the driver blocks are its segments, else its tensors
  int64_t capacity = -1;  // START_TRACE total
  // Live HAL blocks: their size (an oom's free bytes) and whether cuMemMap made them.
  struct Driver {
    uint64_t size;
    bool mapped;
  };
  std::unordered_map<uint64_t, Driver> driver_live;
  uint64_t driver_live_bytes = 0;
  int64_t first_ns = 0;  // the time of its first entry
};

struct LiveSegment {
  uint64_t size = 0;
  uint64_t stream = 0;
  bool mapped = false;
  uint32_t stack_python = 0, stack_c = 0;
};

struct LiveBlock {
  uint64_t size = 0;
  uint64_t stream = 0;
  bool pending = false;  // free_requested, not yet completed
  uint32_t stack_python = 0, stack_c = 0;
};

// The pool as the entries leave it, and whether every block lay inside a segment all along.
struct PoolPlay {
  std::map<uint64_t, LiveSegment> segments;
  std::map<uint64_t, LiveBlock> blocks;
  bool blocks_in_segments = true;

  // Whether [addr, addr + size) lies inside live segments: one, or mapped pages that follow
  // each other (an expandable segment's block may span several cuMemMap calls).
  bool inside(uint64_t addr, uint64_t size) const {
    auto it = segments.upper_bound(addr);
    if (it == segments.begin()) return false;
    --it;
    uint64_t end = it->first + it->second.size;
    if (addr < it->first || addr >= end) return false;
    while (addr + size > end) {
      const auto next = std::next(it);
      if (next == segments.end() || next->first != end || !it->second.mapped ||
          !next->second.mapped) {
        return false;
      }
      it = next;
      end = it->first + it->second.size;
    }
    return true;
  }

  bool holds_blocks(uint64_t addr, uint64_t size) const {
    auto it = blocks.lower_bound(addr);
    if (it != blocks.end() && it->first < addr + size) return true;
    if (it == blocks.begin()) return false;
    --it;
    return it->first + it->second.size > addr;
  }

  void play(const Entry& e) {
    switch (e.action) {
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        segments[e.addr] = {e.size, e.stream, e.action == Action::kSegmentMap, e.stack_python,
                            e.stack_c};
        break;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        // Blocks still live in a segment that goes (their FREE was lost) would be drawn
        // nowhere.
        if (holds_blocks(e.addr, e.size)) blocks_in_segments = false;
        segments.erase(e.addr);
        break;
      case Action::kAlloc:
        if (!inside(e.addr, e.size)) blocks_in_segments = false;
        blocks[e.addr] = {e.size, e.stream, false, e.stack_python, e.stack_c};
        break;
      case Action::kFreeRequested: {
        auto [it, added] = blocks.try_emplace(
            e.addr, LiveBlock{e.size, e.stream, true, e.stack_python, e.stack_c});
        // A block from before the recording lay in a segment from before it too.
        if (added && !inside(e.addr, e.size)) blocks_in_segments = false;
        it->second.pending = true;
        break;
      }
      case Action::kFreeCompleted:
        if (blocks.find(e.addr) == blocks.end() && !inside(e.addr, e.size)) {
          blocks_in_segments = false;
        }
        blocks.erase(e.addr);
        break;
      case Action::kOom:
        break;
    }
  }
};

// Within one instant, segments are taken before the blocks carved from them and released
// after the blocks freed in them: the order the viewer needs to find each block in a segment.
// Recordings may list them otherwise at one time (a snapshot's pool from before its trace is
// read as its blocks, then their segments). Only block entries move: segment entries keep
// their order among themselves (a segment released and another taken at that address).
int segment_rank(const Entry& e) {
  switch (e.action) {
    case Action::kSegmentAlloc:
    case Action::kSegmentMap:
      return 0;
    case Action::kSegmentFree:
    case Action::kSegmentUnmap:
      return 2;
    default:
      return 1;
  }
}

// Moves each entry of rank `moving` before the block entries that precede it, up to the
// segment entry before them.
void move_before_blocks(std::vector<Entry>& instant, int moving) {
  std::vector<Entry> out;
  out.reserve(instant.size());
  size_t after_segment = 0;  // where the block entries since the last segment entry begin
  for (const Entry& e : instant) {
    const int rank = segment_rank(e);
    if (rank == moving) {
      out.insert(out.begin() + std::ptrdiff_t(after_segment), e);
      ++after_segment;
    } else {
      out.push_back(e);
      if (rank != 1) after_segment = out.size();
    }
  }
  instant.swap(out);
}

void order_instants(std::vector<Entry>& entries) {
  std::vector<Entry> instant;
  for (size_t begin = 0; begin < entries.size();) {
    size_t end = begin + 1;
    while (end < entries.size() && entries[end].ts_ns == entries[begin].ts_ns) ++end;
    if (end - begin > 1) {
      instant.assign(entries.begin() + std::ptrdiff_t(begin),
                     entries.begin() + std::ptrdiff_t(end));
      move_before_blocks(instant, 0);
      // Releases after the blocks that follow them: the same, backwards.
      std::reverse(instant.begin(), instant.end());
      move_before_blocks(instant, 2);
      std::reverse(instant.begin(), instant.end());
      std::copy(instant.begin(), instant.end(), entries.begin() + std::ptrdiff_t(begin));
    }
    begin = end;
  }
}

// A device without pool blocks: each driver block is a segment holding one tensor.
std::vector<Entry> driver_blocks_as_tensors(const std::vector<Entry>& in) {
  std::vector<Entry> out;
  out.reserve(in.size() * 2);
  for (const Entry& e : in) {
    Entry block = e;
    switch (e.action) {
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        out.push_back(e);
        block.action = Action::kAlloc;
        out.push_back(block);
        break;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        block.action = Action::kFreeRequested;
        out.push_back(block);
        block.action = Action::kFreeCompleted;
        out.push_back(block);
        out.push_back(e);
        break;
      default:
        out.push_back(e);
    }
  }
  return out;
}

// A mark or a range's start or end, as PyTorch's external_annotations hold them.
struct Annotation {
  uint32_t pid = 0;
  int32_t device = 0;
  int64_t ts_ns = 0;
  uint32_t name = 0;
  const char* stage = "MARK";  // START, END; MARK for a mark (PyTorch writes only ranges)
};

// One segment of the file: a live segment, or mapped ones that follow each other merged as
// PyTorch shows an expandable segment.
struct OutSegment {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  bool expandable = false;
  uint32_t stack_python = 0, stack_c = 0;
};

std::vector<OutSegment> out_segments(const PoolPlay& pool) {
  std::vector<OutSegment> out;
  for (const auto& [addr, s] : pool.segments) {
    if (!out.empty() && s.mapped && out.back().expandable &&
        out.back().address + out.back().size == addr && out.back().stream == s.stream) {
      out.back().size += s.size;
      continue;
    }
    out.push_back({addr, s.size, s.stream, s.mapped, s.stack_python, s.stack_c});
  }
  return out;
}

class SnapshotWriter {
 public:
  SnapshotWriter(TextFile* file, const StringTable& strings) : pickle_(file), strings_(strings) {}

  void begin() { pickle_.begin_dict(); }

  void begin_traces() {
    pickle_.key("device_traces");
    pickle_.begin_list();
  }
  void begin_trace() { pickle_.begin_list(); }
  void end_trace() { pickle_.end_list(); }
  void end_traces() { pickle_.end_list(); }

  void entry(const Entry& e) {
    pickle_.begin_dict();
    pickle_.key("action");
    pickle_.str(action_name(e.action));
    if (e.action == Action::kOom) {
      pickle_.key("device_free");
      pickle_.unsigned_integer(e.addr);
    } else {
      pickle_.key("addr");
      pickle_.unsigned_integer(e.addr);
    }
    pickle_.key("size");
    pickle_.unsigned_integer(e.size);
    pickle_.key("stream");
    pickle_.unsigned_integer(e.stream);
    pickle_.key("time_us");
    pickle_.integer(e.ts_ns / 1000);
    pickle_.key("frames");
    frames(e.stack_python, e.stack_c);
    if (e.owner != 0) {
      pickle_.key("user_metadata");
      pickle_.str(strings_.get(e.owner));
    }
    if (e.name != 0 && !is_segment_action(e.action) && e.action != Action::kOom) {
      pickle_.key("compile_context");
      pickle_.str(strings_.get(e.name));
    }
    pickle_.end_dict();
  }

  void begin_segments() {
    pickle_.key("segments");
    pickle_.begin_list();
  }
  void end_segments() { pickle_.end_list(); }

  // A segment with the live blocks that lie in it, gaps between them as inactive blocks.
  // Returns the blocks left out for overlapping one before them (inconsistent input).
  uint64_t segment(int32_t device, const OutSegment& s,
                   const std::map<uint64_t, LiveBlock>& blocks) {
    uint64_t allocated = 0, active = 0, overlapping = 0;
    struct Piece {
      uint64_t size;
      const LiveBlock* block;  // nullptr: inactive
    };
    std::vector<Piece> pieces;
    uint64_t cursor = s.address;
    const uint64_t end = s.address + s.size;
    for (auto it = blocks.lower_bound(s.address); it != blocks.end() && it->first < end; ++it) {
      const uint64_t b_end = std::min(end, it->first + it->second.size);
      if (it->first < cursor) {
        ++overlapping;
        continue;
      }
      if (it->first > cursor) pieces.push_back({it->first - cursor, nullptr});
      pieces.push_back({b_end - it->first, &it->second});
      active += b_end - it->first;
      if (!it->second.pending) allocated += b_end - it->first;
      cursor = b_end;
    }
    if (cursor < end) pieces.push_back({end - cursor, nullptr});

    pickle_.begin_dict();
    pickle_.key("device");
    pickle_.integer(device);
    pickle_.key("address");
    pickle_.unsigned_integer(s.address);
    pickle_.key("total_size");
    pickle_.unsigned_integer(s.size);
    pickle_.key("allocated_size");
    pickle_.unsigned_integer(allocated);
    pickle_.key("active_size");
    pickle_.unsigned_integer(active);
    pickle_.key("requested_size");
    pickle_.unsigned_integer(allocated);
    pickle_.key("stream");
    pickle_.unsigned_integer(s.stream);
    pickle_.key("segment_type");
    pickle_.str(s.size > (uint64_t{1} << 20) ? "large" : "small");
    pickle_.key("segment_pool_id");
    pickle_.begin_pair();
    pickle_.unsigned_integer(0);
    pickle_.unsigned_integer(0);
    pickle_.end_pair();
    pickle_.key("is_expandable");
    pickle_.boolean(s.expandable);
    pickle_.key("frames");
    frames(s.stack_python, s.stack_c);
    pickle_.key("blocks");
    pickle_.begin_list();
    uint64_t addr = s.address;
    for (const Piece& p : pieces) {
      pickle_.begin_dict();
      pickle_.key("address");
      pickle_.unsigned_integer(addr);
      pickle_.key("size");
      pickle_.unsigned_integer(p.size);
      pickle_.key("requested_size");
      pickle_.unsigned_integer(p.block ? p.size : 0);
      pickle_.key("state");
      pickle_.str(p.block == nullptr ? "inactive"
                  : p.block->pending ? "active_pending_free"
                                     : "active_allocated");
      pickle_.key("frames");
      if (p.block) {
        frames(p.block->stack_python, p.block->stack_c);
      } else {
        frames(0, 0);
      }
      pickle_.end_dict();
      addr += p.size;
    }
    pickle_.end_list();
    pickle_.end_dict();
    return overlapping;
  }

  void annotations(const std::vector<Annotation>& list) {
    pickle_.key("external_annotations");
    pickle_.begin_list();
    for (const Annotation& a : list) {
      pickle_.begin_dict();
      pickle_.key("stage");
      pickle_.str(a.stage);
      pickle_.key("name");
      pickle_.str(strings_.get(a.name));
      pickle_.key("device");
      pickle_.integer(a.device);
      pickle_.key("time_us");
      pickle_.integer(a.ts_ns / 1000);
      pickle_.end_dict();
    }
    pickle_.end_list();
  }

  void finish() {
    pickle_.end_dict();
    pickle_.finish();
  }

 private:
  // A stack's frames, innermost first, as PyTorch's {filename, line, name} dicts: the Python
  // frames, then the C ones (module(symbol) lines: the module as the file, line 0). Each
  // distinct pair of stacks is written once and referred to after.
  void frames(uint32_t python, uint32_t c) {
    const uint64_t key = uint64_t(python) << 32 | c;
    if (auto it = memo_.find(key); it != memo_.end()) {
      pickle_.memo_get(it->second);
      return;
    }
    pickle_.begin_list();
    for_each_stack_line(strings_.get(python), [&](std::string_view line) {
      const PythonFrame f = parse_python_frame(line);
      frame(f.file, f.line, f.function);
    });
    for_each_stack_line(strings_.get(c), [&](std::string_view line) {
      const size_t open = line.find('(');
      const size_t close = line.rfind(')');
      if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
        frame(line, 0, "");
      } else {
        frame(line.substr(0, open), 0, line.substr(open + 1, close - open - 1));
      }
    });
    pickle_.end_list();
    memo_[key] = pickle_.memo_put();
  }

  void frame(std::string_view file, int line, std::string_view name) {
    pickle_.begin_dict();
    pickle_.key("filename");
    pickle_.str(file);
    pickle_.key("line");
    pickle_.integer(line);
    pickle_.key("name");
    pickle_.str(name);
    pickle_.end_dict();
  }

  PickleWriter pickle_;
  const StringTable& strings_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

}  // namespace

bool export_torch_snapshot(const std::string& in, const std::string& partial,
                           const ExportOptions& options, ExportSummary* summary,
                           std::string* error) {
  Recording rec;
  std::map<int32_t, DeviceEntries> devices;
  OneProcess device_process;  // the processes with device memory
  uint64_t host_events = 0;
  std::vector<Annotation> annotations;  // marks and ranges: external_annotations
  uint64_t impossible = 0;              // blocks ending past 2^64
  uint32_t cu_mem_map = 0;              // the string id of "cuMemMap" once the recording has it
  uint32_t before_trace = 0;            // ... and of kBeforeTraceOwner
  const bool read = stream_export_input(
      in, options.pid, &rec,
      [&](std::span<const MemEvent> batch) {
        for (const MemEvent& e : batch) {
          if (e.kind == MemEventKind::kTraceStart && e.device >= 0 && e.snap_total > 0) {
            devices[e.device].capacity = e.snap_total;
            continue;
          }
          const bool block = e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree ||
                             e.kind == MemEventKind::kFreeCompleted;
          if (block && (e.device < 0 || (e.layer != Layer::kHal && e.layer != Layer::kPta))) {
            ++host_events;
            continue;
          }
          if (e.kind == MemEventKind::kMark || e.kind == MemEventKind::kRangeStart ||
              e.kind == MemEventKind::kRangeEnd) {
            annotations.push_back({e.pid, e.device >= 0 ? e.device : 0, e.ts_ns, e.name,
                                   e.kind == MemEventKind::kRangeStart ? "START"
                                   : e.kind == MemEventKind::kRangeEnd ? "END"
                                                                       : "MARK"});
            continue;
          }
          if (e.device < 0 || (!block && e.kind != MemEventKind::kOom)) continue;
          // A block that would end past 2^64 (a file's made-up numbers) has no place in a
          // segment: left out, and said.
          if (block && e.addr + e.size_bytes < e.addr) {
            ++impossible;
            continue;
          }
          device_process.note_pid(e.pid);
          DeviceEntries& d = devices[e.device];
          if (d.entries.empty()) d.first_ns = e.ts_ns;
          Entry entry;
          entry.ts_ns = e.ts_ns;
          entry.addr = e.addr;
          entry.size = e.size_bytes;
          entry.stream = e.stream;
          entry.stack_python = e.stack_python;
          entry.stack_c = e.stack_c;
          entry.owner = e.owner;
          entry.name = e.name;
          if (before_trace == 0 && e.owner != 0 && rec.strings.get(e.owner) == kBeforeTraceOwner) {
            before_trace = e.owner;
          }
          // (A block freed but still in use on another stream when the trace began was
          // there before it too, pending: its free_requested is part of that state.)
          entry.before_trace = (e.kind == MemEventKind::kMalloc ||
                                (e.kind == MemEventKind::kFree && e.free_pending)) &&
                               e.owner != 0 && e.owner == before_trace && e.ts_ns == d.first_ns;
          if (e.kind == MemEventKind::kOom) {
            entry.action = Action::kOom;
            entry.addr = d.capacity > 0 && uint64_t(d.capacity) > d.driver_live_bytes
                             ? uint64_t(d.capacity) - d.driver_live_bytes
                             : 0;
            d.entries.push_back(entry);
            continue;
          }
          if (e.layer == Layer::kHal) {
            if (cu_mem_map == 0 && e.name != 0 && rec.strings.get(e.name) == "cuMemMap") {
              cu_mem_map = e.name;
            }
            if (e.kind == MemEventKind::kMalloc) {
              const bool mapped = e.name != 0 && e.name == cu_mem_map;
              entry.action = mapped ? Action::kSegmentMap : Action::kSegmentAlloc;
              if (auto [it, added] = d.driver_live.try_emplace(
                      e.addr, DeviceEntries::Driver{e.size_bytes, mapped});
                  !added) {
                d.driver_live_bytes -= it->second.size;  // its FREE was lost
                it->second = {e.size_bytes, mapped};
              }
              d.driver_live_bytes += e.size_bytes;
            } else if (e.kind == MemEventKind::kFree) {
              // The FREE's Name is not its MALLOC's: the live block says how it came.
              bool mapped = false;
              if (const auto it = d.driver_live.find(e.addr); it != d.driver_live.end()) {
                mapped = it->second.mapped;
                d.driver_live_bytes -= it->second.size;
                d.driver_live.erase(it);
              }
              entry.action = mapped ? Action::kSegmentUnmap : Action::kSegmentFree;
              entry.name = 0;
            } else {
              continue;
            }
            d.entries.push_back(entry);
            continue;
          }
          d.has_pool = true;
          if (e.kind == MemEventKind::kMalloc) {
            entry.action = Action::kAlloc;
            d.entries.push_back(entry);
          } else if (e.kind == MemEventKind::kFree) {
            entry.action = Action::kFreeRequested;
            entry.name = 0;
            d.entries.push_back(entry);
            if (!e.free_pending) {
              entry.action = Action::kFreeCompleted;
              entry.owner = 0;
              d.entries.push_back(entry);
            }
          } else {
            entry.action = Action::kFreeCompleted;
            entry.name = 0;
            d.entries.push_back(entry);
          }
        }
        return true;
      },
      error, options.progress);
  if (!read) return false;
  if (!device_process.check(in, "torch-snapshot", error)) return false;
  bool any = false;
  for (const auto& [device, d] : devices) any = any || !d.entries.empty();
  // Nothing at all (an empty snapshot) is written as an empty snapshot; host memory alone
  // is a mistake worth saying.
  if (!any && host_events > 0) {
    *error = in + ": no accelerator memory to export (a PyTorch snapshot holds a device's " +
             "memory; this recording's is the host's)";
    return false;
  }
  // device_traces is a list indexed by device: a made-up ordinal must not make it huge.
  constexpr int32_t kMaxDevices = 1024;
  if (!devices.empty() && devices.rbegin()->first >= kMaxDevices) {
    *error = in + ": device " + std::to_string(devices.rbegin()->first) +
             " is beyond what a snapshot lists (its device_traces are indexed by device, at most " +
             std::to_string(kMaxDevices) + ")";
    return false;
  }
  std::unique_ptr<TextFile> file = TextFile::create(partial, error);
  if (file == nullptr) return false;
  SnapshotWriter out(file.get(), rec.strings);
  out.begin();
  // Each device's entries as written, and the pool they leave.
  std::map<int32_t, PoolPlay> pools;
  std::map<int32_t, OutSegment> spanning;  // devices whose blocks lie outside their segments
  for (auto& [device, d] : devices) {
    if (!d.has_pool) d.entries = driver_blocks_as_tensors(d.entries);
    order_instants(d.entries);
    PoolPlay& pool = pools[device];
    for (const Entry& e : d.entries) pool.play(e);
    if (!pool.blocks_in_segments) {
      std::erase_if(d.entries, [](const Entry& e) { return is_segment_action(e.action); });
      pool = PoolPlay{};
      uint64_t lo = UINT64_MAX, hi = 0;
      for (const Entry& e : d.entries) {
        pool.play(e);
        if (e.action == Action::kOom) continue;
        lo = std::min(lo, e.addr);
        hi = std::max(hi, e.addr + e.size);
      }
      if (lo < hi) spanning[device] = {lo, hi - lo, 0, false, 0, 0};
      summary->notes.push_back("device " + std::to_string(device) +
                               ": its pool blocks do not lie inside the driver blocks recorded, "
                               "so one segment spans them all");
    }
  }
  out.begin_traces();
  const int32_t last_device = devices.empty() ? -1 : devices.rbegin()->first;
  for (int32_t device = 0; device <= last_device; ++device) {
    out.begin_trace();
    if (auto it = devices.find(device); it != devices.end()) {
      for (const Entry& e : it->second.entries) {
        if (e.before_trace) continue;
        out.entry(e);
        ++summary->rows;
      }
    }
    out.end_trace();
  }
  out.end_traces();
  out.begin_segments();
  uint64_t overlapping = 0;
  for (const auto& [device, pool] : pools) {
    if (auto it = spanning.find(device); it != spanning.end()) {
      overlapping += out.segment(device, it->second, pool.blocks);
      continue;
    }
    for (const OutSegment& s : out_segments(pool))
      overlapping += out.segment(device, s, pool.blocks);
  }
  out.end_segments();
  // The annotations of the process whose memory this is (a program's other processes may
  // have made some too).
  if (const std::optional<uint32_t> pid = device_process.pid()) {
    std::erase_if(annotations, [&](const Annotation& a) { return a.pid != *pid; });
  }
  out.annotations(annotations);
  out.finish();
  if (overlapping > 0) {
    summary->notes.push_back(std::to_string(overlapping) +
                             " blocks live at the end overlap one before them (a FREE the "
                             "recording lost) and are not among the segments' blocks");
  }
  if (impossible > 0) {
    summary->notes.push_back("left out " + std::to_string(impossible) +
                             (impossible == 1 ? " block whose address and size end"
                                              : " blocks whose addresses and sizes end") +
                             " past 2^64");
  }
  if (host_events > 0) {
    summary->notes.push_back("left out " + std::to_string(host_events) + " event" +
                             (host_events == 1 ? "" : "s") +
                             " of host memory, which a snapshot has no place for");
  }
  summary->unread_rows = rec.warning;
  return file->close(error);
}

}  // namespace memtap
