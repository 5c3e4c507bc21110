// See findings.h. The titles and details say what the report's text says, in the same
// words (report_render.cpp), one finding per line of the report that points at something.
#include "monitor/viewdata/findings.h"

#include <algorithm>
#include <cstdio>

#include "monitor/report/units.h"

namespace memtap::viewdata {
namespace {

std::string percent_text(double share) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

std::string entries_text(const char* what, const std::vector<BreakdownEntry>& entries, size_t n) {
  std::string out;
  for (size_t i = 0; i < entries.size() && i < n; ++i) {
    const BreakdownEntry& e = entries[i];
    if (e.key.empty()) continue;  // a recording without that key: "(none)" says nothing
    if (!out.empty() && e.share < 0.01) break;  // the rest is too small to name
    out += out.empty() ? std::string(what) + " " : ", ";
    out += key_text(e.key) + " " + bytes_text(double(e.bytes)) + " (" + percent_text(e.share) + ")";
  }
  return out;
}

// "; 66.1 MiB (99.8%) has no operator": the part of the peak that the entries named beside
// it leave out (1% or more), lest a small named entry read as the peak's cause.
std::string unnamed_text(int64_t bytes, double share, const char* what) {
  if (share < 0.01) return "";
  return "; " + bytes_text(double(bytes)) + " (" + percent_text(share) + ") has no " + what;
}

// The same for the entry without a key (no owner, no operator).
std::string unnamed_text(const std::vector<BreakdownEntry>& entries, const char* what) {
  for (const BreakdownEntry& e : entries) {
    if (e.key.empty()) return unnamed_text(e.bytes, e.share, what);
  }
  return "";
}

void add_peak(const DeviceReport& d, std::vector<Finding>* out) {
  if (d.peak.bytes == kUnknown || d.peak.ts_ns == kUnknown) return;
  Finding f;
  f.kind = FindingKind::kPeak;
  f.title = "Peak: " + bytes_text(double(d.peak.bytes)) + " allocated";
  std::string owners = entries_text("by owner", d.peak.by_owner, 3);
  // Named owners beside memory that has none: how much has none.
  if (!owners.empty()) owners += unnamed_text(d.peak.by_owner, "owner");
  // A block without a stack is grouped under its name (keys.h): "by stack cudaMalloc" would
  // call an API a stack. Such entries are named as operators instead.
  std::vector<BreakdownEntry> real_stacks;
  int64_t stackless_bytes = 0;
  double stackless_share = 0;
  for (const BreakdownEntry& e : d.peak.by_stack) {
    const bool is_name = std::any_of(d.peak.by_name.begin(), d.peak.by_name.end(),
                                     [&](const BreakdownEntry& n) { return n.key == e.key; });
    if (!is_name) real_stacks.push_back(e);
    if (is_name || e.key.empty()) stackless_bytes += e.bytes, stackless_share += e.share;
  }
  std::string stacks = real_stacks.empty() ? entries_text("by operator", d.peak.by_name, 2)
                                           : entries_text("by stack", real_stacks, 2);
  // And beside the operators or stacks named, how much has none: "by operator aten::mul
  // 65.0 KiB (0.1%)" alone read as the cause of a peak 99.8% of which had no operator.
  if (!stacks.empty()) {
    stacks += real_stacks.empty() ? unnamed_text(d.peak.by_name, "operator")
                                  : unnamed_text(stackless_bytes, stackless_share, "stack");
  }
  // As the report: the stacks under the owner that holds most, when owners are named.
  if (!owners.empty() && !real_stacks.empty() && !d.peak.by_owner.empty() &&
      !d.peak.by_owner.front().top_stacks.empty()) {
    stacks = entries_text("from", d.peak.by_owner.front().top_stacks, 1);
  }
  f.detail = owners.empty() ? stacks : stacks.empty() ? owners : owners + "; " + stacks;
  if (f.detail.empty()) f.detail = "see the breakdown at that moment";
  const PoolSection& pool = d.pool;
  if (pool.source == "samples") {
    // No pool blocks: the blocks behind the peak are the driver's, and the curves' Allocated
    // is the samples' (report_render.cpp says the same).
    f.title = "Peak: " + bytes_text(double(d.peak.bytes)) + " in the driver's blocks (HAL)";
    f.detail = "the framework pool is only sampled: its Allocated peaked at " +
               bytes_text(double(pool.allocated.peak_bytes)) + "; " + f.detail;
  } else if (pool.pending_frees != 0 && pool.active.peak_bytes > pool.allocated.peak_bytes) {
    f.detail += "; with the frees that waited for another stream, Active peaked at " +
                bytes_text(double(pool.active.peak_bytes));
  }
  f.t_ns = d.peak.ts_ns;
  f.bytes = d.peak.bytes;
  f.view = "breakdown";
  out->push_back(std::move(f));
}

// Without steps: the stack that holds most of what was still live at the end, in the
// finding's words and as the block table's filter.
void point_at_most_live(const LeakSection& l, Finding* f) {
  if (l.alive_at_end.empty() || l.alive_at_end.front().key.empty()) return;
  const BreakdownEntry& top = l.alive_at_end.front();
  f->detail += "; most still live at the end: stack " + key_text(top.key) + " " +
               bytes_text(double(top.bytes));
  f->block_filter = filter_text(top.key);
  f->view = "blocks";
}

void add_leaks(const DeviceReport& d, bool running, std::vector<Finding>* out) {
  const LeakSection& l = d.leaks;
  // As the report: a growing owner names the stacks that hold it, and the stack suspects
  // (the same memory seen the other way) are shown only when no owner grows.
  const bool owner_suspects = std::any_of(l.suspects.begin(), l.suspects.end(),
                                          [](const LeakSuspect& s) { return s.what == "owner"; });
  for (const LeakSuspect& s : l.suspects) {
    if (owner_suspects && s.what != "owner") continue;
    Finding f;
    f.kind = FindingKind::kLeak;
    f.title = "Leak suspect: " + s.what + " " + key_text(s.key);
    f.detail = "+" + bytes_text(s.bytes_per_step) + " per step since step " +
               std::to_string(s.first_step) + "; " + bytes_text(double(s.live_bytes)) +
               " live at the last step";
    if (!s.top_stacks.empty() && !s.top_stacks.front().key.empty()) {
      f.detail += "; from " + key_text(s.top_stacks.front().key);
    }
    f.t_ns = s.last_step_ns != kUnknown ? s.last_step_ns : d.end_ns;
    if (s.growth_start_ns != kUnknown && s.growth_start_ns < f.t_ns) {
      f.range_t0_ns = s.growth_start_ns;
      f.range_t1_ns = f.t_ns;
    }
    f.block_filter = filter_text(s.key);
    f.bytes = s.live_bytes;
    f.view = "blocks";
    out->push_back(std::move(f));
  }
  // Without step markers there is no leak to tell by steps: what was never freed is what
  // the report gives ("live at the end, growth ... over the session"), unless the growth
  // toward OOM says it (add_oom). The panel said "Nothing wrong found: no growing live
  // memory" of a program whose curve climbed and that kept 0.9 MiB to its end.
  const CurveSummary* allocated = find_curve(d, "Allocated");
  const bool oom_says_it = d.oom.sustained_growth && !d.oom.too_early;
  if (l.steps > 0 || oom_says_it || !allocated || allocated->final_bytes <= 0) return;
  Finding f;
  f.kind = FindingKind::kLeak;
  // While the process runs, its last event is no end, and nothing is freed "never" yet.
  f.title = running
                ? "Live now: " + bytes_text(double(allocated->final_bytes)) + " not freed yet"
                : "Live at the end: " + bytes_text(double(allocated->final_bytes)) + " never freed";
  f.detail = "no step markers to tell a leak by";
  if (const std::string growth = session_growth_text(l.trend_bytes_per_s); !growth.empty())
    f.detail += "; " + growth;
  point_at_most_live(l, &f);
  f.t_ns = d.end_ns;
  f.bytes = allocated->final_bytes;
  f.view = "blocks";
  out->push_back(std::move(f));
}

void add_fragmentation(const DeviceReport& d, std::vector<Finding>* out) {
  const FragmentationSection& g = d.fragmentation;
  if (g.worst_ns == kUnknown || g.reserved <= g.allocated) return;
  Finding f;
  f.kind = FindingKind::kFragmentation;
  f.title = "Fragmentation: " + bytes_text(double(g.reserved - g.allocated)) +
            " reserved but not allocated";
  f.detail = "at worst: reserved " + bytes_text(double(g.reserved)) + ", allocated " +
             bytes_text(double(g.allocated));
  if (g.largest_free_gap != kUnknown) f.detail += ", " + largest_free_gap_text(g, d.origin_ns);
  f.detail += "; " + bytes_text(double(g.final_gap)) + " unused at the end";
  f.t_ns = g.worst_ns;
  f.bytes = g.reserved - g.allocated;
  f.view = "pool";
  out->push_back(std::move(f));
}

void add_inefficient(const DeviceReport& d, std::vector<Finding>* out) {
  const InefficientSection& in = d.inefficient;
  if (!in.has_usage_events) return;
  struct Category {
    const char* name;
    int64_t blocks, bytes;
  };
  const Category categories[] = {{"lazy_used", in.lazy_used, in.lazy_used_bytes},
                                 {"delayed_free", in.delayed_free, in.delayed_free_bytes},
                                 {"long_idle", in.long_idle, in.long_idle_bytes}};
  for (const Category& c : categories) {
    if (c.blocks == 0) continue;
    Finding f;
    f.kind = FindingKind::kInefficient;
    f.title = std::string("Inefficient blocks: ") + c.name + " " + std::to_string(c.blocks) + " (" +
              bytes_text(double(c.bytes)) + ")";
    f.bytes = c.bytes;
    f.view = "blocks";
    // The worst block of the category (the report lists them most size x time first).
    for (const InefficientBlock& b : in.top) {
      if (b.category != c.name) continue;
      f.detail = "worst: " + bytes_text(double(b.size_bytes));
      if (!b.owner.empty()) f.detail += " of owner " + b.owner;
      if (!b.name.empty()) f.detail += " in " + b.name;
      f.detail += ", " + duration_text(b.wasted_ns) + " " +
                  (c.name == std::string("lazy_used")      ? "before its first use"
                   : c.name == std::string("delayed_free") ? "between its last use and its free"
                                                           : "without a use");
      if (b.gap_start_ns != kUnknown) {
        f.t_ns = b.gap_start_ns;
        f.range_t0_ns = b.gap_start_ns;
        f.range_t1_ns = b.gap_start_ns + b.wasted_ns;
      }
      if (b.alloc_ns != kUnknown)
        f.block = FindingBlock{b.addr, b.alloc_ns, uint64_t(b.size_bytes)};
      break;
    }
    out->push_back(std::move(f));
  }
}

void add_oom(const DeviceReport& d, std::vector<Finding>* out) {
  const OomSection& o = d.oom;
  // Too early: a run's first seconds grow steadily; the report says how fast.
  if (!o.sustained_growth || o.too_early) return;
  Finding f;
  f.kind = FindingKind::kOom;
  if (o.seconds_to_oom >= 0) {
    // As the report says it: "2.9 ms", "3 min 20 s", "1 h 02 min".
    f.title = "Time to OOM: " + seconds_duration_text(o.seconds_to_oom);
    f.detail = "at +" + bytes_text(o.growth_bytes_per_s) + "/s (capacity " +
               bytes_text(double(o.capacity_bytes)) + ")";
  } else {
    f.title = "Sustained growth: +" + bytes_text(o.growth_bytes_per_s) + "/s";
    f.detail = "the capacity is unknown, so no time to OOM";
  }
  // Without steps, what is still live at the end is where the growth went.
  if (d.leaks.steps == 0) point_at_most_live(d.leaks, &f);
  f.t_ns = d.end_ns;
  out->push_back(std::move(f));
}

// Allocations that failed for lack of device memory, each with the largest block live then.
void add_ooms_that_happened(const DeviceReport& d, std::vector<Finding>* out) {
  for (const OomEntry& o : d.ooms) {
    Finding f;
    f.kind = FindingKind::kOom;
    f.title = "Out of memory: " + o.api + " asked " + bytes_text(double(o.requested_bytes));
    // The allocator asked again after giving its cache back: say so, and the blocks are
    // those of the last refusal.
    const std::string again =
        o.refusals > 1 ? "refused " + std::to_string(o.refusals) + " times; " : "";
    if (o.top.empty()) {
      f.detail = again + "no block of the process was live on the device";
    } else {
      const OomBlockEntry& top = o.top.front();
      // A block with neither owner nor name (a pool block outside memtap.owner) is its size.
      const std::string& key = top.owner.empty() ? top.name : top.owner;
      const char* when =
          o.refusals > 1 ? "largest live at the last refusal: " : "largest live then: ";
      f.detail = again + when + bytes_text(double(top.size_bytes)) +
                 (key.empty() ? "" : " " + key_text(key)) + " (of " + std::to_string(o.top.size()) +
                 " listed)";
      if (!top.owner.empty()) f.block_filter = filter_text(top.owner);
    }
    f.t_ns = o.ts_ns;
    f.bytes = o.requested_bytes;
    f.view = "blocks";
    out->push_back(std::move(f));
  }
}

}  // namespace

std::string filter_text(const std::string& key) {
  const size_t nl = key.find('\n');
  return nl == std::string::npos ? key : key.substr(0, nl);
}

std::vector<Finding> compute_findings(const EngineView& engine, uint32_t pid, int32_t device,
                                      bool running) {
  const DeviceReport d = engine.analyzer.device_report(pid, device);
  std::vector<Finding> out;
  if (d.allocations == 0 && d.peak.bytes == kUnknown && d.ooms.empty()) return out;
  add_peak(d, &out);
  add_ooms_that_happened(d, &out);
  add_leaks(d, running, &out);
  add_fragmentation(d, &out);
  add_inefficient(d, &out);
  add_oom(d, &out);
  bool any = false;
  for (const Finding& f : out) any = any || f.kind != FindingKind::kPeak;
  if (!any) {
    Finding f;
    f.kind = FindingKind::kClean;
    f.title = running ? "Nothing wrong found so far" : "Nothing wrong found";
    f.detail = d.leaks.steps > 0 ? "no leak across " + std::to_string(d.leaks.steps) +
                                       " steps, no fragmentation, no growth toward OOM"
                                 : "no growing live memory, no fragmentation, no growth toward OOM";
    out.push_back(std::move(f));
  }
  return out;
}

std::optional<int64_t> find_finding_block(BlockQueries& blocks, uint32_t pid, int32_t device,
                                          const FindingBlock& block) {
  BlockFilter filter;
  filter.pid = pid;
  filter.device = device;
  filter.t0_ns = filter.t1_ns = block.alloc_ns;
  filter.min_size = filter.max_size = block.size_bytes;
  bool truncated = false;
  // Blocks of exactly that size live at that instant: few, whatever the session.
  for (const BlockRow& row : blocks.all(filter, 4096, &truncated)) {
    if (row.addr == block.addr && row.alloc_ns == block.alloc_ns) return row.id;
  }
  return std::nullopt;
}

}  // namespace memtap::viewdata
