// See report_render.h.
#include "monitor/report/report_render.h"

#include <algorithm>
#include <ctime>
#include <string>

#include "monitor/report/json_writer.h"
#include "monitor/report/units.h"

namespace memtap {
namespace {

// Seconds since the session began, or the wall-clock time when no start is known.
std::string time_text(int64_t ts_ns, int64_t origin_ns) {
  if (ts_ns == kUnknown) return "?";
  char buf[64];
  if (origin_ns != kUnknown && ts_ns >= origin_ns) {
    snprintf(buf, sizeof buf, "+%.3f s", double(ts_ns - origin_ns) / 1e9);
    return buf;
  }
  time_t secs = time_t(ts_ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// A recording without owners (or stacks, or names) has one key, "none": nothing to show.
bool any_key(const std::vector<BreakdownEntry>& entries) {
  for (const BreakdownEntry& e : entries)
    if (!e.key.empty()) return true;
  return false;
}

// An owner's top stacks, each under the owner's line: where its bytes were allocated, and
// which part of the owner's `owner_bytes` each holds (the JSON keeps the share of the whole).
void top_stacks_text(FILE* out, const char* indent, const std::vector<BreakdownEntry>& stacks,
                     int64_t owner_bytes) {
  // A recording without stacks (the default) has one unnamed stack per owner: no line.
  if (!any_key(stacks)) return;
  for (const BreakdownEntry& e : stacks) {
    const double of_owner = owner_bytes > 0 ? double(e.bytes) / double(owner_bytes) : 0.0;
    fprintf(out, "%sfrom %10s  %5.1f%% of it  %7s blocks  %s\n", indent,
            bytes_text(double(e.bytes)).c_str(), of_owner * 100,
            count_text(uint64_t(e.blocks)).c_str(), key_text(e.key).c_str());
  }
}

void breakdown_text(FILE* out, const char* title, const std::vector<BreakdownEntry>& entries) {
  if (!any_key(entries)) return;
  fprintf(out, "      by %s:\n", title);
  for (const BreakdownEntry& e : entries) {
    fprintf(out, "        %10s  %5.1f%%  %7s blocks  %s\n", bytes_text(double(e.bytes)).c_str(),
            e.share * 100, count_text(uint64_t(e.blocks)).c_str(), key_text(e.key).c_str());
    top_stacks_text(out, "          ", e.top_stacks, e.bytes);
  }
}

// Who holds the memory, each owner with its top stacks; by stack alone only when the
// recording names no owner (the stacks are then all there is to say).
void owners_or_stacks_text(FILE* out, const std::vector<BreakdownEntry>& by_owner,
                           const std::vector<BreakdownEntry>& by_stack) {
  if (any_key(by_owner))
    breakdown_text(out, "owner", by_owner);
  else
    breakdown_text(out, "stack", by_stack);
}

std::string hex_text(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)v);
  return buf;
}

// A stack by its innermost frame: Python's when there is one, else C's.
std::string stack_text(const std::string& python, const std::string& c) {
  return key_text(python.empty() ? c : python);
}

// ", refused again at +1.234 s" for a request the allocator asked again; empty for one refusal.
std::string refused_again_text(const OomEntry& o, int64_t origin_ns) {
  if (o.refusals <= 1) return "";
  if (o.refusals == 2) return ", refused again at " + time_text(o.last_ts_ns, origin_ns);
  return ", refused " + count_text(o.refusals) + " times until " +
         time_text(o.last_ts_ns, origin_ns);
}

void oom_text(const OomEntry& o, int64_t origin_ns, FILE* out) {
  fprintf(out, "    OOM at %s: %s asked %s (thread %u, stream %llu)%s\n",
          time_text(o.ts_ns, origin_ns).c_str(), key_text(o.api).c_str(),
          bytes_text(double(o.requested_bytes)).c_str(), o.tid, (unsigned long long)o.stream,
          refused_again_text(o, origin_ns).c_str());
  if (!o.stack_python.empty() || !o.stack_c.empty())
    fprintf(out, "      called from %s\n", stack_text(o.stack_python, o.stack_c).c_str());
  if (o.top.empty()) {
    fprintf(out, "      no block of the process was live on the device\n");
    return;
  }
  fprintf(out, "      largest blocks live %s:\n",
          o.refusals > 1 ? ("at " + time_text(o.last_ts_ns, origin_ns)).c_str() : "then");
  for (const OomBlockEntry& b : o.top) {
    fprintf(out, "        %10s  %s  id %llu  owner %s  name %s  stack %s\n",
            bytes_text(double(b.size_bytes)).c_str(), hex_text(b.addr).c_str(),
            (unsigned long long)b.allocation_id, key_text(b.owner).c_str(),
            key_text(b.name).c_str(), stack_text(b.stack_python, b.stack_c).c_str());
  }
}

// A curve's or a layer's line: its peak, when, and where it ended.
void peak_final_line(const char* prefix, const std::string& label, int64_t peak_ns,
                     int64_t peak_bytes, int64_t final_bytes, int64_t origin_ns, FILE* out) {
  fprintf(out, "    %s%-13s peak %10s at %-12s final %s\n", prefix, label.c_str(),
          bytes_text(double(peak_bytes)).c_str(), time_text(peak_ns, origin_ns).c_str(),
          bytes_text(double(final_bytes)).c_str());
}

// The peaks a pool reported itself, where its samples carried them.
void pool_peaks_text(const PoolSection& p, FILE* out) {
  if (p.max_allocated == kUnknown && p.max_reserved == kUnknown) return;
  const auto text = [](int64_t v) {
    return v == kUnknown ? std::string("?") : bytes_text(double(v));
  };
  fprintf(out, "    Pool's own peaks (inside the steps too): max_allocated %s, max_reserved %s\n",
          text(p.max_allocated).c_str(), text(p.max_reserved).c_str());
}

// Where a device's pool figures come from: its blocks, or only samples of its figures.
void pool_text(const DeviceReport& d, FILE* out) {
  const PoolSection& p = d.pool;
  if (p.source.empty() && d.device >= 0) {
    // A GPU whose framework pool was not recorded (not PyTorch, or memtap.torch could not
    // watch it: its reason was on the program's stderr): the curves stand in with the
    // driver's blocks, which the user must not read as tensors.
    fprintf(out,
            "    Pool: none recorded (no PTA blocks or samples): Allocated, Reserved and Active "
            "are the driver's blocks (HAL)\n");
    return;
  }
  if (p.source == "samples") {
    // The peak section comes only with blocks: a profiler's memory_record has none.
    fprintf(out,
            "    Pool: only samples of its figures (%s pool SNAPSHOTs, such as "
            "torch.cuda.memory_stats() at each step), no blocks: Allocated and Reserved follow "
            "the samples, Active is Allocated%s\n",
            count_text(p.snapshots).c_str(),
            d.allocations > 0 ? ", the peak below is of the driver's blocks (HAL)" : "");
    pool_peaks_text(p, out);
    return;
  }
  if (p.source != "blocks") return;
  fprintf(out, "    Pool: the framework's blocks (PTA): Allocated, Reserved and Active are its");
  if (p.pending_frees == 0) {
    fprintf(out, "; no free waited for another stream");
  } else {
    fprintf(out, "; %s free%s waited for another stream (Active above Allocated meanwhile)",
            count_text(p.pending_frees).c_str(), p.pending_frees == 1 ? "" : "s");
    if (p.pending_bytes > 0)
      fprintf(out, ", %s still waiting at the end", bytes_text(double(p.pending_bytes)).c_str());
  }
  fprintf(out, "\n");
  pool_peaks_text(p, out);
}

void device_text_section(const DeviceReport& d, FILE* out) {
  fprintf(out, "\n  pid %u, %s: %s allocations, %s frees, %s allocated", d.pid,
          device_text(d.device).c_str(), count_text(d.allocations).c_str(),
          count_text(d.frees).c_str(), bytes_text(double(d.bytes_allocated)).c_str());
  if (d.pool.source == "blocks") {
    fprintf(out, " by the pool's blocks (PTA), in %s of the driver's (HAL, %s)",
            count_text(d.driver_allocations).c_str(),
            bytes_text(double(d.driver_bytes_allocated)).c_str());
  }
  fprintf(out, "\n");
  for (const CurveSummary& c : d.curves) {
    if (c.peak_bytes == kUnknown) continue;
    peak_final_line("", c.name, c.peak_ns, c.peak_bytes, c.final_bytes, d.origin_ns, out);
  }
  // Which layers the curves are made of. On a device: HAL is what the CUDA runtime and
  // driver gave the process, a framework layer (PTA) what its blocks hold of that. On the
  // host only where pinned memory (HOST_PINNED, or HAL in older msMemScope files) is there
  // beside the heap and its mappings, which the curves' names already say.
  const bool host_layers_differ =
      std::any_of(d.layers.begin(), d.layers.end(), [](const LayerSummary& l) {
        return l.layer != layer_name(Layer::kHost) && l.layer != layer_name(Layer::kHost, true);
      });
  for (const LayerSummary& l : d.layers) {
    if ((d.device < 0 && !host_layers_differ) || l.peak_bytes == kUnknown) continue;
    peak_final_line("Layer ", l.layer, l.peak_ns, l.peak_bytes, l.final_bytes, d.origin_ns, out);
  }
  pool_text(d, out);
  for (const OomEntry& o : d.ooms) oom_text(o, d.origin_ns, out);
  if (d.oom_count > d.ooms.size()) {
    fprintf(out, "    ... %s more OOMs on this device\n",
            count_text(d.oom_count - d.ooms.size()).c_str());
  }
  if (d.peak.bytes != kUnknown) {
    fprintf(out, "    Peak: %s at %s\n", bytes_text(double(d.peak.bytes)).c_str(),
            time_text(d.peak.ts_ns, d.origin_ns).c_str());
    owners_or_stacks_text(out, d.peak.by_owner, d.peak.by_stack);
    breakdown_text(out, "name", d.peak.by_name);
  }
  const LeakSection& l = d.leaks;
  if (l.steps > 0) {
    fprintf(out, "    Leaks by step (%s steps):", count_text(uint64_t(l.steps)).c_str());
    if (l.suspects.empty())
      fprintf(out, " no owner or stack grows step after step\n");
    else
      fprintf(out, "\n");
    // Owners with the stacks that hold them; the stack suspects only when no owner grows
    // (they are the same memory seen the other way).
    bool owner_suspects = false;
    for (const LeakSuspect& s : l.suspects) owner_suspects = owner_suspects || s.what == "owner";
    for (const LeakSuspect& s : l.suspects) {
      if (owner_suspects && s.what != "owner") continue;
      fprintf(out, "      %s %s: +%s per step since step %lld (%s live)\n", s.what.c_str(),
              key_text(s.key).c_str(), bytes_text(s.bytes_per_step).c_str(),
              (long long)s.first_step, bytes_text(double(s.live_bytes)).c_str());
      top_stacks_text(out, "        ", s.top_stacks, s.live_bytes);
    }
  } else if (l.alive_at_end.empty() && l.alive_at_end_by_owner.empty()) {
    // Everything was freed: a trend over the session would only say how fast it was.
    fprintf(out, "    Leaks: no step markers; nothing live at the end\n");
  } else {
    // A growth only when live bytes rose (a snapshot's trace may free more than it allocates).
    std::string growth = session_growth_text(l.trend_bytes_per_s);
    if (!growth.empty()) growth = ", " + growth;
    fprintf(out, "    Leaks: no step markers; live at the end%s\n", growth.c_str());
    owners_or_stacks_text(out, l.alive_at_end_by_owner, l.alive_at_end);
  }
  const FragmentationSection& f = d.fragmentation;
  if (f.worst_ns != kUnknown && f.reserved <= f.allocated) {
    fprintf(out, "    Fragmentation: none (nothing reserved beyond what was allocated)\n");
  } else if (f.worst_ns != kUnknown) {
    fprintf(out,
            "    Fragmentation: worst at %s: reserved %s, allocated %s, %s; at the end %s unused\n",
            time_text(f.worst_ns, d.origin_ns).c_str(), bytes_text(double(f.reserved)).c_str(),
            bytes_text(double(f.allocated)).c_str(),
            f.largest_free_gap == kUnknown ? "largest free gap ?"
                                           : largest_free_gap_text(f, d.origin_ns).c_str(),
            bytes_text(double(f.final_gap)).c_str());
  }
  const InefficientSection& in = d.inefficient;
  if (in.has_usage_events) {
    fprintf(
        out,
        "    Inefficient blocks: lazy_used %s (%s), delayed_free %s (%s), long_idle %s "
        "(%s)\n",
        count_text(uint64_t(in.lazy_used)).c_str(), bytes_text(double(in.lazy_used_bytes)).c_str(),
        count_text(uint64_t(in.delayed_free)).c_str(),
        bytes_text(double(in.delayed_free_bytes)).c_str(),
        count_text(uint64_t(in.long_idle)).c_str(), bytes_text(double(in.long_idle_bytes)).c_str());
  }
  if (!d.scopes.empty()) {
    fprintf(out, "    Scopes (inclusive / exclusive allocated, true peak inside):\n");
    for (const ScopeEntry& s : d.scopes) {
      // Owner labels have no occurrences (nothing opens and closes them): -1.
      const std::string times = s.occurrences >= 0 ? "x" + count_text(uint64_t(s.occurrences)) : "";
      fprintf(out, "      %-8s %-32s %-6s %10s / %10s, peak %s\n", s.kind.c_str(), s.name.c_str(),
              times.c_str(), bytes_text(double(s.inclusive_bytes)).c_str(),
              bytes_text(double(s.exclusive_bytes)).c_str(),
              bytes_text(double(s.peak_bytes)).c_str());
    }
  }
  const OomSection& o = d.oom;
  if (o.sustained_growth && o.seconds_to_oom >= 0) {
    fprintf(out, "    Time to OOM: %s at +%s/s (capacity %s)\n",
            seconds_duration_text(o.seconds_to_oom).c_str(),
            bytes_text(o.growth_bytes_per_s).c_str(), bytes_text(double(o.capacity_bytes)).c_str());
  } else if (o.sustained_growth && o.too_early) {
    fprintf(out,
            "    Time to OOM: too early to tell (+%s/s over %s recorded; capacity %s would take "
            "%s at that rate)\n",
            bytes_text(o.growth_bytes_per_s).c_str(),
            seconds_duration_text((double(d.end_ns) - double(d.start_ns)) * 1e-9).c_str(),
            bytes_text(double(o.capacity_bytes)).c_str(),
            seconds_duration_text(o.seconds_at_rate).c_str());
  } else if (o.sustained_growth) {
    fprintf(out, "    Growth: +%s/s, sustained (capacity unknown)\n",
            bytes_text(o.growth_bytes_per_s).c_str());
  } else {
    fprintf(out, "    Time to OOM: no sustained growth\n");
  }
}

void breakdown_json(JsonWriter& j, const char* name, const std::vector<BreakdownEntry>& entries,
                    bool with_top_stacks = false) {
  j.key(name).begin_array();
  for (const BreakdownEntry& e : entries) {
    j.begin_object();
    j.key("key").value(e.key).key("bytes").value(e.bytes).key("blocks").value(e.blocks);
    j.key("share").value(e.share);
    if (with_top_stacks) breakdown_json(j, "top_stacks", e.top_stacks);
    j.end_object();
  }
  j.end_array();
}

void optional_int(JsonWriter& j, const char* name, int64_t v) {
  j.key(name);
  if (v == kUnknown)
    j.null();
  else
    j.value(v);
}

// Seconds, or null where the figure does not apply (a negative value).
void optional_seconds(JsonWriter& j, const char* name, double seconds) {
  j.key(name);
  if (seconds >= 0)
    j.value(seconds);
  else
    j.null();
}

// A curve's or a layer's object: its name under `label_key`, its peak and where it ended.
void peak_final_json(JsonWriter& j, const char* label_key, const std::string& label,
                     int64_t peak_ns, int64_t peak_bytes, int64_t final_bytes) {
  j.begin_object().key(label_key).value(label);
  optional_int(j, "peak_ns", peak_ns);
  optional_int(j, "peak_bytes", peak_bytes);
  optional_int(j, "final_bytes", final_bytes);
  j.end_object();
}

// "pool": null where no pool was recorded, else its source and three curves.
void pool_json(JsonWriter& j, const PoolSection& p) {
  j.key("pool");
  if (p.source.empty()) {
    j.null();
    return;
  }
  j.begin_object().key("source").value(p.source);
  auto curve = [&](const char* key, const CurveSummary& c) {
    j.key(key).begin_object();
    optional_int(j, "peak_ns", c.peak_ns);
    optional_int(j, "peak_bytes", c.peak_bytes);
    optional_int(j, "final_bytes", c.final_bytes);
    j.end_object();
  };
  curve("allocated", p.allocated);
  curve("reserved", p.reserved);
  curve("active", p.active);
  j.key("snapshots").value(p.snapshots);
  optional_int(j, "max_allocated", p.max_allocated);
  optional_int(j, "max_reserved", p.max_reserved);
  j.key("pending_frees").value(p.pending_frees);
  j.key("pending_bytes").value(p.pending_bytes);
  j.end_object();
}

// What of a process's events this recording lacks, and what went to an earlier monitor
// (docs/design-notes.md, monitor/engine "What was sent, what came"): " (5 events dropped, 12 lost
// on the way; 3400 sent to an earlier monitor before this recording)"; nothing when all are 0.
void process_counts_text(const RecordedProcess& p, FILE* out) {
  std::string parts;
  auto add = [&](uint64_t n, const char* words) {
    if (n == 0) return;
    parts += (parts.empty() ? "" : ", ") + count_text(n) + (parts.empty() ? " events " : " ");
    parts += words;
  };
  add(p.events_dropped, "dropped");
  add(p.events_lost, "lost on the way");
  if (p.events_sent_before != 0) {
    parts += (parts.empty() ? "" : "; ") + count_text(p.events_sent_before) +
             " sent to an earlier monitor before this recording";
  }
  if (!parts.empty()) fprintf(out, " (%s)", parts.c_str());
}

}  // namespace

std::string largest_free_gap_text(const FragmentationSection& f, int64_t origin_ns) {
  if (f.largest_free_gap == kUnknown) return "";
  std::string out = "largest free gap " + bytes_text(double(f.largest_free_gap));
  // Another instant, as far as the reader can tell (the same millisecond reads as the same).
  const std::string at = time_text(f.largest_free_gap_ns, origin_ns);
  if (f.largest_free_gap_ns != kUnknown && at != time_text(f.worst_ns, origin_ns)) {
    out += " (at " + at + ")";
  }
  return out;
}

void live_input_text(const LiveInput& input, const char* prefix, FILE* out) {
  if (input.rejected_messages != 0) {
    fprintf(out, "%s%s message%s rejected:", prefix, count_text(input.rejected_messages).c_str(),
            input.rejected_messages == 1 ? "" : "s");
    const char* separator = " ";
    for (const LiveInputKey& k : kLiveInputKeys) {
      if (k.words == nullptr || input.*k.field == 0) continue;
      fprintf(out, "%s%s %s", separator, count_text(input.*k.field).c_str(), k.words);
      separator = ", ";
    }
    fprintf(out, "\n");
  }
  if (input.silent_hellos != 0) {
    fprintf(out, "%s%s hello%s dropped: nothing followed %s in time, no process recorded\n", prefix,
            count_text(input.silent_hellos).c_str(), input.silent_hellos == 1 ? "" : "s",
            input.silent_hellos == 1 ? "it" : "them");
  }
}

std::string stalled_text(uint64_t stalls) {
  if (stalls == 0) return "";
  const std::string times = stalls == 1 ? "once" : count_text(stalls) + " times";
  return "stalled " + times + ": the recording went on without it, and what it sent later " +
         "came late";
}

std::string recording_stop_position(const RecordingStop& s) {
  std::string text = "after " + count_text(s.rows_recorded) + " events";
  if (s.first_ns != 0 && s.stopped_ns >= s.first_ns) {
    text += ", " + duration_text(s.stopped_ns - s.first_ns) + " into the session";
  }
  if (s.stopped_ns > 0) {
    const time_t seconds = time_t(s.stopped_ns / 1000000000);
    tm local{};
    char clock[16];
    if (localtime_r(&seconds, &local) && strftime(clock, sizeof clock, "%H:%M:%S", &local)) {
      text += std::string(" (at ") + clock + ")";
    }
  }
  return text;
}

namespace {

// A PyTorch snapshot's line: where its times come from, and what was there before its trace.
void torch_snapshot_text(const TorchSnapshotFacts& f, FILE* out) {
  if (!f.known) return;
  fprintf(out, "  snapshot: %s trace %s, ", count_text(f.trace_entries).c_str(),
          f.trace_entries == 1 ? "entry" : "entries");
  if (!f.synthetic_time) {
    fprintf(out, "times from its time_us");
  } else if (f.trace_entries > 0) {
    fprintf(out, "times made up (its trace has no time_us): 1 ms apart in trace order");
  } else {
    fprintf(out, "times made up (no trace): only the pool at the dump");
  }
  if (f.blocks_before_trace > 0 || f.segments_before_trace > 0) {
    fprintf(out,
            "; %s blocks and %s segment ranges were there before the trace began (owner "
            "'%s'), %s of those blocks freed in it",
            count_text(f.blocks_before_trace).c_str(), count_text(f.segments_before_trace).c_str(),
            kBeforeTraceOwner, count_text(f.blocks_before_trace_freed).c_str());
  }
  fprintf(out, "\n");
}

}  // namespace

void report_text(const Report& r, FILE* out) {
  fprintf(out, "memtap report: %s (%s), %s events", r.source.c_str(), r.format.c_str(),
          count_text(r.events).c_str());
  if (r.rows_skipped)
    fprintf(out, ", %s row%s not understood", count_text(r.rows_skipped).c_str(),
            r.rows_skipped == 1 ? "" : "s");
  fprintf(out, "\n");
  const RecordingStop& stop = r.stopped;
  if (!stop.reason.empty()) {
    fprintf(out, "  the recording stopped %s: %s\n", recording_stop_position(stop).c_str(),
            stop.reason.c_str());
    fprintf(out, "  the file holds those events");
    if (stop.first_ns != 0 && stop.recorded_until_ns >= stop.first_ns) {
      fprintf(out, ", up to %s into the session",
              duration_text(stop.recorded_until_ns - stop.first_ns).c_str());
    }
    fprintf(out, "; %s events after them were not recorded%s\n",
            count_text(stop.rows_not_recorded).c_str(),
            r.source == "live" ? " (this report, from the live analyses, counts them all)" : "");
    if (r.unfinished) {
      fprintf(out, "  once the disk has room, 'memtap recover %s' makes it a finished recording\n",
              r.source.c_str());
    }
  } else if (r.unfinished) {
    fprintf(out,
            "  not finished: its monitor stopped before the end (killed?); this is what it had "
            "committed. 'memtap recover %s' makes it a finished recording\n",
            r.source.c_str());
  }
  live_input_text(r.live_input, "  live input: ", out);
  torch_snapshot_text(r.torch_snapshot, out);
  for (const RecordedProcess& p : r.processes) {
    fprintf(out, "  process %u", p.pid);
    if (!p.hostname.empty()) fprintf(out, " on %s", p.hostname.c_str());
    if (p.rank >= 0) fprintf(out, ", rank %d of %d", p.rank, p.world_size);
    if (p.forked_from_pid) fprintf(out, ", fork of %u", p.forked_from_pid);
    if (!p.command_line.empty()) fprintf(out, ": %s", p.command_line.c_str());
    process_counts_text(p, out);
    if (p.stalls) fprintf(out, "; %s", stalled_text(p.stalls).c_str());
    if (p.ended_by.rfind("no final flush", 0) == 0) {
      fprintf(out, "; %s", p.ended_by.c_str());
    } else if (!p.ended_by.empty()) {
      fprintf(out, "; ended by %s", p.ended_by.c_str());
    }
    fprintf(out, "\n");
  }
  for (const DeviceReport& d : r.devices) device_text_section(d, out);
}

std::string report_json(const Report& r) {
  JsonWriter j;
  j.begin_object();
  j.key("source").value(r.source).key("format").value(r.format);
  j.key("unfinished").value(r.unfinished);
  j.key("stopped");
  if (r.stopped.reason.empty()) {
    j.null();
  } else {
    const RecordingStop& stop = r.stopped;
    j.begin_object().key("reason").value(stop.reason).key("disk_full").value(stop.disk_full);
    j.key("rows_recorded").value(stop.rows_recorded);
    j.key("rows_not_recorded").value(stop.rows_not_recorded);
    j.key("first_ns").value(stop.first_ns).key("recorded_until_ns").value(stop.recorded_until_ns);
    j.key("stopped_ns").value(stop.stopped_ns).end_object();
  }
  j.key("events").value(r.events).key("rows_skipped").value(r.rows_skipped);
  // What the live monitor refused of its senders; null when the recording does not say.
  j.key("live_input");
  if (r.live_input.known) {
    j.begin_object();
    for (const LiveInputKey& k : kLiveInputKeys) j.key(k.json_key).value(r.live_input.*k.field);
    j.end_object();
  } else {
    j.null();
  }
  // A PyTorch snapshot's: made-up times, what was there before its trace; null otherwise.
  j.key("torch_snapshot");
  if (r.torch_snapshot.known) {
    const TorchSnapshotFacts& f = r.torch_snapshot;
    j.begin_object().key("synthetic_time").value(f.synthetic_time);
    j.key("trace_entries").value(f.trace_entries);
    j.key("blocks_before_trace").value(f.blocks_before_trace);
    j.key("blocks_before_trace_freed").value(f.blocks_before_trace_freed);
    j.key("segments_before_trace").value(f.segments_before_trace).end_object();
  } else {
    j.null();
  }
  j.key("processes").begin_array();
  for (const RecordedProcess& p : r.processes) {
    j.begin_object();
    j.key("pid").value(p.pid).key("hostname").value(p.hostname);
    j.key("command_line").value(p.command_line).key("rank").value(p.rank);
    j.key("world_size").value(p.world_size).key("forked_from_pid").value(p.forked_from_pid);
    j.key("events_dropped").value(p.events_dropped).key("events_lost").value(p.events_lost);
    j.key("events_sent_before").value(p.events_sent_before);
    j.key("ended_by").value(p.ended_by);
    j.key("stalls").value(p.stalls);
    j.end_object();
  }
  j.end_array();
  j.key("devices").begin_array();
  for (const DeviceReport& d : r.devices) {
    j.begin_object();
    j.key("pid").value(d.pid).key("device").value(device_text(d.device));
    optional_int(j, "start_ns", d.start_ns);
    optional_int(j, "origin_ns", d.origin_ns);
    optional_int(j, "end_ns", d.end_ns);
    j.key("allocations").value(d.allocations).key("frees").value(d.frees);
    j.key("bytes_allocated").value(d.bytes_allocated);
    j.key("driver_allocations").value(d.driver_allocations);
    j.key("driver_bytes_allocated").value(d.driver_bytes_allocated);
    j.key("curves").begin_array();
    for (const CurveSummary& c : d.curves) {
      peak_final_json(j, "name", c.name, c.peak_ns, c.peak_bytes, c.final_bytes);
    }
    j.end_array();
    j.key("layers").begin_array();
    for (const LayerSummary& l : d.layers) {
      peak_final_json(j, "layer", l.layer, l.peak_ns, l.peak_bytes, l.final_bytes);
    }
    j.end_array();
    pool_json(j, d.pool);
    j.key("peak").begin_object();
    optional_int(j, "ts_ns", d.peak.ts_ns);
    optional_int(j, "bytes", d.peak.bytes);
    breakdown_json(j, "by_owner", d.peak.by_owner, true);
    breakdown_json(j, "by_stack", d.peak.by_stack);
    breakdown_json(j, "by_name", d.peak.by_name);
    j.end_object();
    j.key("leaks").begin_object();
    j.key("steps").value(d.leaks.steps);
    j.key("suspects").begin_array();
    for (const LeakSuspect& s : d.leaks.suspects) {
      j.begin_object().key("what").value(s.what).key("key").value(s.key);
      j.key("bytes_per_step").value(s.bytes_per_step).key("first_step").value(s.first_step);
      j.key("live_bytes").value(s.live_bytes);
      optional_int(j, "growth_start_ns", s.growth_start_ns);
      optional_int(j, "last_step_ns", s.last_step_ns);
      if (s.what == "owner") breakdown_json(j, "top_stacks", s.top_stacks);
      j.end_object();
    }
    j.end_array();
    breakdown_json(j, "alive_at_end", d.leaks.alive_at_end);
    breakdown_json(j, "alive_at_end_by_owner", d.leaks.alive_at_end_by_owner, true);
    breakdown_json(j, "alive_at_end_by_name", d.leaks.alive_at_end_by_name);
    j.key("trend_bytes_per_s").value(d.leaks.trend_bytes_per_s);
    j.key("live_bytes_per_step").value(d.leaks.live_bytes_per_step);
    j.end_object();
    // Each step's live bytes: where a leak shows as a staircase.
    j.key("step_figures").begin_array();
    for (const StepSummary& s : d.step_figures) {
      j.begin_object().key("step").value(s.step);
      optional_int(j, "start_ns", s.start_ns);
      j.key("start_bytes").value(s.start_bytes).key("peak_bytes").value(s.peak_bytes);
      j.key("end_bytes").value(s.end_bytes).end_object();
    }
    j.end_array();
    j.key("fragmentation").begin_object();
    optional_int(j, "worst_ns", d.fragmentation.worst_ns);
    optional_int(j, "reserved", d.fragmentation.reserved);
    optional_int(j, "allocated", d.fragmentation.allocated);
    optional_int(j, "largest_free_gap", d.fragmentation.largest_free_gap);
    optional_int(j, "largest_free_gap_ns", d.fragmentation.largest_free_gap_ns);
    optional_int(j, "final_gap", d.fragmentation.final_gap);
    j.end_object();
    const InefficientSection& in = d.inefficient;
    j.key("inefficient").begin_object();
    j.key("has_usage_events").value(in.has_usage_events);
    j.key("lazy_used").value(in.lazy_used).key("lazy_used_bytes").value(in.lazy_used_bytes);
    j.key("delayed_free").value(in.delayed_free);
    j.key("delayed_free_bytes").value(in.delayed_free_bytes);
    j.key("long_idle").value(in.long_idle).key("long_idle_bytes").value(in.long_idle_bytes);
    j.key("top").begin_array();
    for (const InefficientBlock& b : in.top) {
      j.begin_object().key("category").value(b.category).key("addr").value(b.addr);
      j.key("size_bytes").value(b.size_bytes).key("owner").value(b.owner);
      j.key("name").value(b.name).key("wasted_ns").value(b.wasted_ns);
      optional_int(j, "alloc_ns", b.alloc_ns);
      optional_int(j, "gap_start_ns", b.gap_start_ns);
      j.end_object();
    }
    j.end_array();
    j.end_object();
    j.key("scopes").begin_array();
    for (const ScopeEntry& s : d.scopes) {
      j.begin_object().key("kind").value(s.kind).key("name").value(s.name);
      j.key("occurrences").value(s.occurrences).key("inclusive_bytes").value(s.inclusive_bytes);
      j.key("exclusive_bytes").value(s.exclusive_bytes).key("peak_bytes").value(s.peak_bytes);
      j.end_object();
    }
    j.end_array();
    j.key("oom").begin_object();
    j.key("sustained_growth").value(d.oom.sustained_growth);
    j.key("growth_bytes_per_s").value(d.oom.growth_bytes_per_s);
    optional_int(j, "capacity_bytes", d.oom.capacity_bytes);
    optional_seconds(j, "seconds_to_oom", d.oom.seconds_to_oom);
    j.key("too_early").value(d.oom.too_early);
    optional_seconds(j, "seconds_at_rate", d.oom.seconds_at_rate);
    j.end_object();
    j.key("oom_count").value(d.oom_count);
    j.key("ooms").begin_array();
    for (const OomEntry& o : d.ooms) {
      j.begin_object();
      optional_int(j, "ts_ns", o.ts_ns);
      j.key("tid").value(o.tid).key("api").value(o.api);
      j.key("requested_bytes").value(o.requested_bytes).key("stream").value(o.stream);
      j.key("stack_python").value(o.stack_python).key("stack_c").value(o.stack_c);
      j.key("refusals").value(o.refusals);
      optional_int(j, "last_ts_ns", o.last_ts_ns);
      j.key("top").begin_array();
      for (const OomBlockEntry& b : o.top) {
        j.begin_object().key("addr").value(b.addr).key("size_bytes").value(b.size_bytes);
        j.key("allocation_id").value(b.allocation_id).key("owner").value(b.owner);
        j.key("name").value(b.name).key("stack_python").value(b.stack_python);
        j.key("stack_c").value(b.stack_c);
        j.end_object();
      }
      j.end_array();
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace memtap
