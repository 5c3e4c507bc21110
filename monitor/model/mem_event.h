// One event of a recording as every analysis sees it, whatever it came from: live agents
// (the Session's rows), a memtap or msMemScope database (memscope_dump / leaks_dump), or
// an msMemScope / CANN CSV export. The vocabulary is msMemScope's (docs/design.md, monitor/store):
// Event -> kind, Event Type -> layer (for MALLOC/FREE) or kind detail, Device Id -> device.
// Strings (operator names, owners, stacks) are interned in a StringTable and referred to
// by id, so an event stays a small fixed-size struct.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memtap {

enum class MemEventKind : uint8_t {
  kMalloc,         // MALLOC
  kFree,           // FREE
  kAccess,         // ACCESS (a block was read or written; msMemScope's access events)
  kOpStart,        // OP_LAUNCH ATEN_START (an operator begins)
  kOpEnd,          // OP_LAUNCH ATEN_END
  kKernelLaunch,   // KERNEL_LAUNCH
  kMark,           // MSTX Mark
  kRangeStart,     // MSTX Range_start
  kRangeEnd,       // MSTX Range_end
  kStep,           // SYSTEM STEP (a training step begins)
  kSnapshot,       // SNAPSHOT (a device or process memory sample)
  kTraceStart,     // SYSTEM START_TRACE
  kTraceStop,      // SYSTEM STOP_TRACE
  kOom,            // OOM_DETAIL OOM_TRIGGER (or of a type not known): an allocation failed
  kOomTopAlloc,    // OOM_DETAIL OOM_TOP_ALLOC: a large block live on the device at the OOM
                   // before it (addr, size, allocation_id, owner, name, stacks)
  kFreeCompleted,  // FREE_COMPLETED (a framework layer, PTA): the pool took back a block whose
                   // FREE said free_pending; it stops counting in Active (addr, size)
  kOther,          // anything else a file holds (kept, counted, not analysed)
};

// Where a block lives (msMemScope's Event Type for MALLOC/FREE).
enum class Layer : uint8_t {
  kHost,        // libc heap (and anonymous mappings, is_mmap)
  kHostPinned,  // page-locked host memory
  kHal,         // driver / runtime device memory
  kPta,         // the framework's caching pool (PyTorch / torch_npu)
  kPtaWorkspace,
  kAtb,
  kMindspore,
  kOther,
};

// A layer's name as the recording spells it (msMemScope's Event Type); HOST anonymous
// mappings are "HOST mmap", which the views and the report keep apart from the heap.
constexpr const char* layer_name(Layer layer, bool is_mmap = false) {
  switch (layer) {
    case Layer::kHost:
      return is_mmap ? "HOST mmap" : "HOST";
    case Layer::kHostPinned:
      return "HOST_PINNED";
    case Layer::kHal:
      return "HAL";
    case Layer::kPta:
      return "PTA";
    case Layer::kPtaWorkspace:
      return "PTA_WORKSPACE";
    case Layer::kAtb:
      return "ATB";
    case Layer::kMindspore:
      return "MINDSPORE";
    case Layer::kOther:
      return "other layer";
  }
  return "?";
}

constexpr int32_t kHostDevice = -1;  // Device Id "cpu" (older files: "host")
constexpr int32_t kNoDevice = -2;    // Device Id "N/A"
constexpr int64_t kUnknown = -1;     // a numeric field the source did not give

struct MemEvent {
  int64_t ts_ns = 0;  // nanoseconds since the Unix epoch
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t device = kNoDevice;
  MemEventKind kind = MemEventKind::kOther;
  Layer layer = Layer::kHost;
  bool is_mmap = false;  // HOST anonymous mapping rather than heap
  // FREE of a framework block (Attr pending): the block stays Active (another stream still
  // used it) until its FREE_COMPLETED event; without it the pool took it back at once.
  // (Here, in the padding after is_mmap: a reader holds every event of a file in memory.)
  bool free_pending = false;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;     // MALLOC/FREE: the block's size (on FREE too)
  uint64_t allocation_id = 0;  // 0: unknown
  uint32_t name = 0;           // StringTable ids; 0 is the empty string
  uint32_t owner = 0;          // owner label, levels joined by '@'
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
  uint64_t stream = 0;  // Attr stream, when given
  // Pool state after the event (Attr used/total), and SNAPSHOT figures; kUnknown if absent.
  int64_t pool_used = kUnknown;
  int64_t pool_total = kUnknown;
  // SNAPSHOT of a device's framework pool (Event Type PTA; Attr allocated, reserved): bytes
  // in blocks handed out and bytes the pool holds.
  int64_t snap_allocated = kUnknown;
  int64_t snap_reserved = kUnknown;
  // The same pool's own peaks (Attr max_allocated, max_reserved: torch.cuda.memory_stats()'s
  // allocated_bytes.all.peak and reserved_bytes.all.peak), where they were sampled.
  int64_t snap_max_allocated = kUnknown;
  int64_t snap_max_reserved = kUnknown;
  int64_t snap_app_reserved = kUnknown;  // what the whole process holds (host: RSS)
  int64_t snap_total = kUnknown;  // capacity (host: MemTotal or the cgroup limit); a device's
                                  // START_TRACE: the device's
  int64_t snap_free = kUnknown;
};
// A reader holds every event of a file in memory (10 M events: 1.4 GB): each 8 bytes more is
// 80 MB more and ~0.1 s of page faults for report and replay of 10 M events (136 -> 144 B, the
// pool's peaks: replay 5.32 -> 5.51 s wall, 9.36 -> 9.64 s CPU, medians of 5). Say why before
// raising this.
static_assert(sizeof(MemEvent) == 144, "MemEvent grew");

// Interned strings. Id 0 is always "". Not thread-safe.
class StringTable {
 public:
  StringTable() { strings_.emplace_back(); }
  uint32_t intern(std::string_view s) {
    if (s.empty()) return 0;
    auto it = ids_.find(s);  // no std::string for a lookup (transparent hash)
    if (it != ids_.end()) return it->second;
    uint32_t id = uint32_t(strings_.size());
    strings_.emplace_back(s);
    ids_.emplace(strings_.back(), id);
    return id;
  }
  const std::string& get(uint32_t id) const { return strings_.at(id); }
  size_t size() const { return strings_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
};

// What is known of a traced process (from memtap_session, or derived from a file's rows).
struct RecordedProcess {
  uint32_t pid = 0;
  std::string hostname;
  std::string command_line;
  int32_t rank = -1;
  int32_t world_size = -1;
  uint32_t forked_from_pid = 0;
  uint64_t events_dropped = 0;
  // memtap_session's: sent for this recording and never received (known from Bye), and
  // what went to an earlier monitor before this recording heard of the process (a restart).
  uint64_t events_lost = 0;
  uint64_t events_sent_before = 0;
  uint64_t stalls = 0;   // memtap_session's: times the recording went on without its events
  std::string ended_by;  // memtap_session's: "exit code 0", "signal SIGSEGV", "exec", ...
};

// What a live recording refused of what its senders sent (the Session's InputCounts, kept in
// memtap_meta). Each refused message changed nothing; silent Hellos were taken, then dropped
// with nothing recorded, since nothing followed them.
struct LiveInput {
  bool known = false;              // the recording says (memtap recordings made since it is kept)
  uint64_t rejected_messages = 0;  // every refusal below, silent Hellos aside
  uint64_t malformed = 0;          // not a message, or one beyond its bounds
  uint64_t protocol_version = 0;   // another protocol version
  uint64_t out_of_order = 0;       // after its process's Bye, a sequence already seen
  uint64_t unknown_process = 0;    // of a process whose Hello never came, or was refused
  uint64_t spoofed = 0;            // of a process another sender started
  uint64_t over_limit = 0;         // a process beyond the monitor's --max-processes
  uint64_t silent_hellos = 0;
};

// Each count's memtap_meta key, JSON key (report --json's "live_input") and words.
struct LiveInputKey {
  const char* meta_key;
  const char* json_key;
  uint64_t LiveInput::*field;
  const char* words;  // "3 malformed"; nullptr: not one of the kinds of refusal
};
inline constexpr LiveInputKey kLiveInputKeys[] = {
    {"rejected_messages", "rejected_messages", &LiveInput::rejected_messages, nullptr},
    {"rejected_malformed", "malformed", &LiveInput::malformed, "malformed"},
    {"rejected_protocol_version", "protocol_version", &LiveInput::protocol_version,
     "of another protocol version"},
    {"rejected_out_of_order", "out_of_order", &LiveInput::out_of_order, "out of order"},
    {"rejected_unknown_process", "unknown_process", &LiveInput::unknown_process,
     "of unknown processes"},
    {"rejected_spoofed", "spoofed", &LiveInput::spoofed,
     "spoofed (another sender's, for a known process)"},
    {"rejected_over_limit", "over_limit", &LiveInput::over_limit,
     "over the process limit (--max-processes)"},
    {"silent_hellos", "silent_hellos", &LiveInput::silent_hellos, nullptr},
};

// Where a recording stopped while its session went on: the disk was full (or refused a write)
// and the writer stopped rather than hold rows for a disk that may not come back
// (memscope_writer.h). The file holds the session's first rows_recorded rows; the rest were
// only analysed live. memtap_meta's `recording_stopped*` keys hold it.
struct RecordingStop {
  std::string reason;              // one line naming the file and the error; "": not stopped
  bool disk_full = false;          // ENOSPC, EDQUOT, EFBIG or SQLITE_FULL
  uint64_t rows_recorded = 0;      // rows in the file
  uint64_t rows_not_recorded = 0;  // rows of the session after them (final once it ended)
  int64_t first_ns = 0;            // Timestamp(ns) of the session's first row (0: none)
  int64_t recorded_until_ns = 0;   // of the last row in the file (0: none)
  int64_t stopped_ns = 0;          // when the writer stopped (realtime ns since the epoch)
};

}  // namespace memtap
