// A PyTorch snapshot as MemEvents (see snapshot_events.h).
//
// Two passes per device. The first walks the trace over an empty pool to find what was
// there before it began: a free or completion of a block it never allocated, a segment
// range released that it never mapped, and what the dump holds that the trace leaves
// unexplained. The second starts the pool with those (at the trace's start, owner
// kBeforeTraceOwner) and replays the trace through the live session's pairing rules, so
// every FREE finds its MALLOC and the curves, the pool view and the OOM blocks are right.
#include "monitor/store/reader/torch/snapshot_events.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "monitor/engine/device_pairing.h"
#include "monitor/engine/row_events.h"
#include "monitor/store/reader/torch/snapshot_stacks.h"

namespace memtap::torch_snapshot {
namespace {

using pickle::Document;

// A free_completed right after its free_requested within this folds into it, as the live
// session folds a poolFreeCompleted (device_pairing.h says why this long).
constexpr int64_t kFoldNs = kPoolFreeFoldNs;
// Made-up times: 1 ms apart, from 1 s after the epoch (a time of 0 means "none yet" to the
// window's status, and a snapshot's whole trace must not read as no events), the dump one
// step after the last entry: a trace of one entry, or none, still spans a time the window
// can draw (at 1 us apart, its axis read 0.0000 at every tick).
constexpr int64_t kSyntheticStepNs = 1000000;
constexpr int64_t kSyntheticStartNs = 1000000000;
constexpr auto kMaxBytes = uint64_t(std::numeric_limits<int64_t>::max());

// Sorted, disjoint [start, end) ranges of addresses.
class RangeSet {
 public:
  void add(uint64_t start, uint64_t end) {
    if (start >= end) return;
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin()) {
      auto before = std::prev(it);
      if (before->second >= start) {
        start = before->first;
        end = std::max(end, before->second);
        it = ranges_.erase(before);
      }
    }
    while (it != ranges_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(start, end);
  }
  // Calls fn(s, e) for each part of [start, end) the set does not hold, in order.
  template <typename Fn>
  void missing(uint64_t start, uint64_t end, Fn&& fn) const {
    uint64_t at = start;
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin()) at = std::max(at, std::prev(it)->second);
    for (; at < end; ++it) {
      if (it == ranges_.end() || it->first >= end) {
        fn(at, end);
        return;
      }
      if (it->first > at) fn(at, it->first);
      at = std::max(at, it->second);
    }
  }
  // Takes [start, end) out; fn(s, e) for each part of it the set did not hold.
  template <typename Fn>
  void remove(uint64_t start, uint64_t end, Fn&& gap) {
    if (start >= end) return;
    missing(start, end, gap);
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin()) {
      auto before = std::prev(it);
      if (before->second > start) {
        const uint64_t before_end = before->second;
        if (before->first == start) {
          ranges_.erase(before);
        } else {
          before->second = start;
        }
        if (before_end > end) ranges_.emplace(end, before_end);
      }
    }
    it = ranges_.lower_bound(start);
    while (it != ranges_.end() && it->first < end) {
      const uint64_t range_end = it->second;
      it = ranges_.erase(it);
      if (range_end > end) {
        ranges_.emplace(end, range_end);
        break;
      }
    }
  }

 private:
  std::map<uint64_t, uint64_t> ranges_;  // start -> end
};

// A block or segment range there before the trace began.
struct BeforeBlock {
  uint64_t addr = 0, size = 0, stream = 0;
  bool pending = false;         // freed, not yet back in the pool, when the trace began
  bool freed_in_trace = false;  // the trace frees or completes it
  ValueId frames = kNoValue;    // the dump's block's
};
struct BeforeRange {
  uint64_t addr = 0, size = 0;
  bool mapped = false;  // an expandable segment's pages (cuMemMap), not a cudaMalloc
  ValueId frames = kNoValue;
};

uint64_t end_of(uint64_t addr, uint64_t size) {
  return size > std::numeric_limits<uint64_t>::max() - addr ? std::numeric_limits<uint64_t>::max()
                                                            : addr + size;
}

// What one device's trace says was there before it began (the first pass).
struct Before {
  std::vector<BeforeBlock> blocks;
  std::vector<BeforeRange> ranges;
};

Before find_before(const Snapshot& s, int32_t device, size_t begin, size_t end) {
  Before before;
  std::unordered_map<uint64_t, uint64_t> live, pending;
  std::unordered_set<uint64_t> before_addrs;
  RangeSet mapped, claimed;
  auto add_block = [&](const BeforeBlock& b) {
    if (before_addrs.insert(b.addr).second) before.blocks.push_back(b);
  };
  auto add_ranges = [&](uint64_t start, uint64_t stop, bool map, ValueId frames) {
    claimed.missing(start, stop, [&](uint64_t s2, uint64_t e2) {
      before.ranges.push_back({s2, e2 - s2, map, frames});
    });
    claimed.add(start, stop);
  };
  for (size_t i = begin; i < end; ++i) {
    const TraceEntry& e = s.entries[i];
    switch (e.action) {
      case Action::kAlloc:
        pending.erase(e.addr);
        live[e.addr] = e.size;
        break;
      case Action::kFreeRequested:
        if (live.erase(e.addr) == 0) {
          add_block({e.addr, e.size, e.stream, false, true, kNoValue});
        }
        pending[e.addr] = e.size;
        break;
      case Action::kFreeCompleted:
        if (pending.erase(e.addr) == 0 && live.count(e.addr) == 0) {
          add_block({e.addr, e.size, e.stream, true, true, kNoValue});
        }
        break;
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        mapped.add(e.addr, end_of(e.addr, e.size));
        break;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        mapped.remove(e.addr, end_of(e.addr, e.size), [&](uint64_t gs, uint64_t ge) {
          add_ranges(gs, ge, e.action == Action::kSegmentUnmap, kNoValue);
        });
        break;
      default:
        break;
    }
  }
  // What the dump holds that the trace does not explain was there all along.
  for (const Segment& seg : s.segments) {
    if (seg.device != device) continue;
    mapped.missing(seg.address, end_of(seg.address, seg.total_size), [&](uint64_t gs, uint64_t ge) {
      add_ranges(gs, ge, seg.is_expandable, seg.frames);
    });
    for (uint32_t b = seg.first_block; b < seg.first_block + seg.block_count; ++b) {
      const Block& k = s.blocks[b];
      if (k.state == BlockState::kInactive || live.count(k.address) != 0 ||
          pending.count(k.address) != 0) {
        continue;
      }
      // The bytes asked for, as the trace's entries give a block's size.
      add_block({k.address, k.requested_size, seg.stream, k.state == BlockState::kActivePendingFree,
                 false, k.frames});
    }
  }
  return before;
}

// Each entry's time, and the session's first and last.
struct Times {
  bool synthetic = true;
  std::vector<int64_t> entry_ns;
  int64_t first_ns = 0, last_ns = 0;
};

int64_t us_to_ns(int64_t us) {
  return us > std::numeric_limits<int64_t>::max() / 1000 ? std::numeric_limits<int64_t>::max()
                                                         : us * 1000;
}

Times entry_times(const Snapshot& s) {
  Times t;
  t.entry_ns.resize(s.entries.size());
  t.synthetic = s.entries.empty() && s.annotations.empty();
  for (const TraceEntry& e : s.entries) {
    if (e.time_us < 0) t.synthetic = true;
  }
  bool any = false;
  auto note = [&](int64_t ns) {
    t.first_ns = any ? std::min(t.first_ns, ns) : ns;
    t.last_ns = any ? std::max(t.last_ns, ns) : ns;
    any = true;
  };
  int32_t device = -1;
  int64_t previous = 0, index = 0;
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const TraceEntry& e = s.entries[i];
    if (e.device != device) {
      device = e.device;
      index = 0;
      previous = std::numeric_limits<int64_t>::min();
    }
    ++index;
    int64_t ns = t.synthetic ? kSyntheticStartNs + index * kSyntheticStepNs : us_to_ns(e.time_us);
    ns = std::max(ns, previous);  // each device's trace stays in its order
    previous = ns;
    t.entry_ns[i] = ns;
    note(ns);
  }
  if (!t.synthetic) {
    for (const Annotation& a : s.annotations) {
      if (a.time_us >= 0) note(us_to_ns(a.time_us));
    }
  }
  if (t.synthetic) {
    t.first_ns = kSyntheticStartNs;
    t.last_ns = std::max(t.last_ns, kSyntheticStartNs) + kSyntheticStepNs;
  }
  return t;
}

// The second pass, one device at a time, through the live session's pairing.
class Emitter {
 public:
  Emitter(const Document& doc, Recording* out)
      : doc_(doc),
        out_(out),
        strings_(&out->strings),
        stacks_(doc, [this](std::string_view text) { return intern(text); }),
        pairing_{rows_, last_id_, unmatched_, lost_} {
    before_owner_ = intern(kBeforeTraceOwner);
    cuda_malloc_ = intern("cudaMalloc");
    cu_mem_map_ = intern("cuMemMap");
    allocator_ = intern("CUDACachingAllocator");
  }

  void device(const Snapshot& s, const Times& t, int32_t device, size_t begin, size_t end,
              const Before& before);
  void annotation(int64_t ts_ns, Stage stage, ValueId name);

 private:
  uint32_t intern(std::string_view text) {
    if (text.empty()) return 0;
    const uint32_t id = out_->strings.intern(text);
    // The table's ids serve as the rows' string ids (RowStrings maps them onto themselves).
    if (id >= registered_) {
      strings_.add(id, text);
      registered_ = id + 1;
    }
    return id;
  }
  uint32_t text_id(ValueId v) {
    const std::string_view text = doc_.text(v);
    return text == "N/A" ? 0 : intern(text);
  }
  AllocContext context(uint32_t owner, uint32_t name, ValueId frames) {
    const StackTexts::Ids ids = stacks_.of(frames);
    return AllocContext{owner, name, ids.python, ids.c};
  }
  void drain() {
    for (const DumpRow& row : rows_) out_->events.push_back(event_from_row(row, strings_));
    rows_.clear();
  }
  void pool_state(const RowStamp& stamp) {
    const unsigned __int128 live = tables_.pools[device_].live_bytes;
    pool_state_row(tables_, stamp, device_, int64_t(std::min<unsigned __int128>(live, kMaxBytes)),
                   int64_t(std::min<unsigned __int128>(hal_bytes_, kMaxBytes)), rows_);
  }
  void hal_malloc(const RowStamp& stamp, uint64_t addr, uint64_t size, const AllocContext& ctx) {
    if (size == 0) return;
    hal_release(stamp, addr, end_of(addr, size));  // a range mapped twice: the first was lost
    DeviceCall call;
    call.addr = addr;
    call.size_bytes = size;
    call.device = device_;
    pair_device_malloc(tables_, DeviceLayer::kHal, stamp, call, ctx, pairing_);
    hal_.emplace(addr, size);
    hal_bytes_ += size;
  }
  // Releases [start, stop): every HAL block it touches is freed, and the parts of them
  // outside it are allocated again (new ids, the same owner and stacks).
  void hal_release(const RowStamp& stamp, uint64_t start, uint64_t stop) {
    auto it = hal_.upper_bound(start);
    if (it != hal_.begin() && end_of(std::prev(it)->first, std::prev(it)->second) > start) --it;
    while (it != hal_.end() && it->first < stop) {
      const uint64_t block = it->first, block_end = end_of(block, it->second);
      const DeviceBlock info = tables_.hal[block];
      DeviceCall call;
      call.addr = block;
      call.device = device_;
      pair_device_free(tables_, DeviceLayer::kHal, stamp, call, pairing_);
      hal_bytes_ -= it->second;
      it = hal_.erase(it);
      const AllocContext ctx{info.owner, info.name, info.stack_python, info.stack_c};
      if (block < start) hal_malloc(stamp, block, start - block, ctx);
      if (block_end > stop) hal_malloc(stamp, stop, block_end - stop, ctx);
      // The parts kept lie before `start` and from `stop` on: the next block to release is
      // the first at or after `start`.
      it = hal_.lower_bound(start);
    }
  }
  DeviceCall pool_call(uint64_t addr, uint64_t size, uint64_t stream) const {
    DeviceCall call;
    call.addr = addr;
    call.size_bytes = size;
    call.device = device_;
    call.has_stream = true;
    call.stream = stream;
    return call;
  }
  void entry(const TraceEntry& e, const RowStamp& stamp, bool completed_with_it);

  const Document& doc_;
  Recording* out_;
  RowStrings strings_;
  StackTexts stacks_;
  uint32_t registered_ = 1;  // ids below are in strings_ (0, "", always)
  std::vector<DumpRow> rows_;
  uint64_t last_id_ = 0, unmatched_ = 0, lost_ = 0;
  PairingOutput pairing_;
  uint32_t before_owner_ = 0, cuda_malloc_ = 0, cu_mem_map_ = 0, allocator_ = 0;

  // The device being replayed.
  int32_t device_ = 0;
  DeviceTables tables_;
  std::map<uint64_t, uint64_t> hal_;  // its live HAL blocks: address -> size
  unsigned __int128 hal_bytes_ = 0;
};

void Emitter::device(const Snapshot& s, const Times& t, int32_t device, size_t begin, size_t end,
                     const Before& before) {
  device_ = device;
  tables_ = DeviceTables{};
  hal_.clear();
  hal_bytes_ = 0;
  RowStamp stamp;
  stamp.timestamp_ns = t.first_ns;
  // Blocks first, then their segments, then the pool's figures: until a pool state says
  // Reserved, it follows the blocks' bytes, so no instant of the start shows the segments
  // held and empty (a fragmentation that never was).
  for (const BeforeBlock& b : before.blocks) {
    const DeviceCall call = pool_call(b.addr, b.size, b.stream);
    pair_pool_malloc(tables_, stamp, call, context(before_owner_, 0, b.frames), pairing_);
    if (b.pending) pair_pool_free(tables_, stamp, call, false, pairing_);
  }
  for (const BeforeRange& r : before.ranges) {
    hal_malloc(stamp, r.addr, r.size,
               context(before_owner_, r.mapped ? cu_mem_map_ : cuda_malloc_, r.frames));
  }
  if (begin < end || !before.ranges.empty() || !before.blocks.empty()) pool_state(stamp);
  drain();

  for (size_t i = begin; i < end; ++i) {
    const TraceEntry& e = s.entries[i];
    stamp.timestamp_ns = t.entry_ns[i];
    // A completion right behind its request folds into it: the pool took the block back at
    // once (no other stream had used it).
    bool completed = false;
    if (e.action == Action::kFreeRequested && i + 1 < end) {
      const TraceEntry& next = s.entries[i + 1];
      completed = next.action == Action::kFreeCompleted && next.addr == e.addr &&
                  (t.synthetic || t.entry_ns[i + 1] - t.entry_ns[i] <= kFoldNs);
    }
    entry(e, stamp, completed);
    if (completed) ++i;
    drain();
  }

  if (s.has_segments) {
    // The pool at the dump, as its segments say.
    unsigned __int128 allocated = 0, reserved = 0;
    for (const Segment& seg : s.segments) {
      if (seg.device != device) continue;
      allocated += seg.allocated_size;
      reserved += seg.total_size;
    }
    stamp.timestamp_ns = t.last_ns;
    pool_state_row(tables_, stamp, device,
                   int64_t(std::min<unsigned __int128>(allocated, kMaxBytes)),
                   int64_t(std::min<unsigned __int128>(reserved, kMaxBytes)), rows_);
    drain();
  }
}

void Emitter::entry(const TraceEntry& e, const RowStamp& stamp, bool completed_with_it) {
  switch (e.action) {
    case Action::kAlloc: {
      const uint32_t owner = text_id(e.user_metadata);
      pair_pool_malloc(tables_, stamp, pool_call(e.addr, e.size, e.stream),
                       context(owner, text_id(e.compile_context), e.frames), pairing_);
      return;
    }
    case Action::kFreeRequested:
      pair_pool_free(tables_, stamp, pool_call(e.addr, e.size, e.stream), completed_with_it,
                     pairing_);
      return;
    case Action::kFreeCompleted:
      complete_pool_free(tables_, stamp, pool_call(e.addr, e.size, e.stream), pairing_);
      return;
    case Action::kSegmentAlloc:
    case Action::kSegmentMap:
      hal_malloc(stamp, e.addr, e.size,
                 context(text_id(e.user_metadata),
                         e.action == Action::kSegmentMap ? cu_mem_map_ : cuda_malloc_, e.frames));
      pool_state(stamp);
      return;
    case Action::kSegmentFree:
    case Action::kSegmentUnmap:
      hal_release(stamp, e.addr, end_of(e.addr, e.size));
      pool_state(stamp);
      return;
    case Action::kSnapshot:
      pool_state(stamp);
      return;
    case Action::kOom: {
      DumpRow row;
      row.event = DumpEvent::kOomDetail;
      row.event_type = DumpEventType::kOomTrigger;
      row.device = device_;
      row.timestamp_ns = stamp.timestamp_ns;
      row.size_bytes = e.size;
      row.has_stream = true;
      row.stream = e.stream;
      row.name = allocator_;
      const StackTexts::Ids ids = stacks_.of(e.frames);
      row.stack_python = ids.python;
      row.stack_c = ids.c;
      rows_.push_back(row);
      append_oom_top_rows(tables_, stamp, device_, rows_);
      return;
    }
    case Action::kAnnotate:
      annotation(stamp.timestamp_ns, e.stage, e.name);
      return;
  }
}

void Emitter::annotation(int64_t ts_ns, Stage stage, ValueId name) {
  DumpRow row;
  row.event = DumpEvent::kMstx;
  row.event_type = stage == Stage::kStart ? DumpEventType::kRangeStart
                   : stage == Stage::kEnd ? DumpEventType::kRangeEnd
                                          : DumpEventType::kMark;
  row.timestamp_ns = ts_ns;
  row.name = text_id(name);
  rows_.push_back(row);
  drain();
}

}  // namespace

void append_snapshot_events(const Document& doc, const Snapshot& s, Recording* out,
                            reader::RowProblems* problems) {
  const Times t = entry_times(s);
  TorchSnapshotFacts& facts = out->torch_snapshot;
  facts.known = true;
  facts.synthetic_time = t.synthetic;
  facts.trace_entries = s.entries.size();

  // Each device's entries are one run of s.entries; devices with only segments have none.
  std::map<int32_t, std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < s.entries.size(); ++i) {
    auto [it, added] = runs.try_emplace(s.entries[i].device, i, i + 1);
    if (!added) it->second.second = i + 1;
  }
  for (const Segment& seg : s.segments) runs.try_emplace(seg.device, 0, 0);

  // About an event per entry (a fold makes two one, a segment adds a pool state).
  out->events.reserve(out->events.size() + s.entries.size() + 2 * s.blocks.size() +
                      s.annotations.size() + 64);
  Emitter emitter(doc, out);
  for (const auto& [device, run] : runs) {
    const Before before = find_before(s, device, run.first, run.second);
    facts.blocks_before_trace += before.blocks.size();
    facts.segments_before_trace += before.ranges.size();
    for (const BeforeBlock& b : before.blocks) facts.blocks_before_trace_freed += b.freed_in_trace;
    emitter.device(s, t, device, run.first, run.second, before);
  }
  for (size_t i = 0; i < s.annotations.size(); ++i) {
    const Annotation& a = s.annotations[i];
    if (t.synthetic || a.time_us < 0) {
      reader::skip_row(
          problems, "external_annotations[" + std::to_string(i) + "]",
          t.synthetic ? "no time to place it at: the trace has no time_us" : "no time_us");
      continue;
    }
    emitter.annotation(us_to_ns(a.time_us), a.stage, a.name);
  }
}

}  // namespace memtap::torch_snapshot
