#include "monitor/report/report_check.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "monitor/report/report_lineup.h"
#include "monitor/report/report_render.h"
#include "monitor/report/units.h"

namespace memtap {
namespace {

std::string where_of(const Report& r, const DeviceReport& d) {
  std::string s = "pid " + std::to_string(d.pid);
  for (const RecordedProcess& p : r.processes) {
    if (p.pid == d.pid && p.rank >= 0) s += " (rank " + std::to_string(p.rank) + ")";
  }
  return s + ", " + device_text(d.device);
}

bool selected(const DeviceReport& d, const Thresholds& t) {
  return !t.device || d.device == *t.device;
}

std::string pct_text(double pct) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f%%", pct);
  return buf;
}

// A threshold as the user gave it: "20%", "12.5%".
std::string limit_pct_text(double pct) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g%%", pct);
  return buf;
}

std::string at_text(int64_t ts_ns, int64_t origin_ns) {
  if (ts_ns == kUnknown || origin_ns == kUnknown || ts_ns < origin_ns) return "";
  return " at +" + duration_text(ts_ns - origin_ns);
}

// A breakdown entry for the line: "owner leaks_mem (240.0 MiB, 78% of the peak)".
std::string entry_text(const char* what, const BreakdownEntry& e, const char* share_of) {
  char share[48];
  snprintf(share, sizeof share, ", %.0f%% of %s", e.share * 100, share_of);
  return std::string(what) + " " + key_text(e.key) + " (" + bytes_text(double(e.bytes)) +
         (e.share > 0 ? share : "") + ")";
}

struct Breakdown {
  const char* what;  // owner, operator, stack
  const std::vector<BreakdownEntry>* entries;
};

// Who holds the memory: the largest owner when it has a name, else the largest operator,
// else the largest stack. The largest of a kind that is unnamed ("(none)") passes to the
// next kind rather than naming a small one: a label on 1% of the bytes is not the culprit.
std::string responsible(const std::vector<Breakdown>& kinds, const char* share_of) {
  for (const Breakdown& k : kinds) {
    const auto largest = std::max_element(
        k.entries->begin(), k.entries->end(),
        [](const BreakdownEntry& a, const BreakdownEntry& b) { return a.bytes < b.bytes; });
    if (largest != k.entries->end() && !largest->key.empty()) {
      return entry_text(k.what, *largest, share_of);
    }
  }
  return "";
}

// Without any name on the blocks (an msMemScope file has its operators only as OP_LAUNCH
// ranges), the operator or range with the most memory live inside it at once.
const ScopeEntry* largest_scope(const DeviceReport& d) {
  const ScopeEntry* best = nullptr;
  for (const ScopeEntry& s : d.scopes) {
    if (s.kind == "owner" || s.peak_bytes <= 0) continue;
    if (!best || s.peak_bytes > best->peak_bytes) best = &s;
  }
  return best;
}

std::string peak_responsible(const DeviceReport& d) {
  const std::string named = responsible(
      {{"owner", &d.peak.by_owner}, {"operator", &d.peak.by_name}, {"stack", &d.peak.by_stack}},
      "the peak");
  if (!named.empty()) return "largest at the peak: " + named;
  std::string text = "no owner, operator or stack recorded at the peak";
  if (const ScopeEntry* s = largest_scope(d)) {
    text += "; largest " + s->kind + ": " + s->name + " (up to " +
            bytes_text(double(s->peak_bytes)) + " live inside it)";
  }
  return text;
}

std::string leak_text(const LeakSuspect& s) {
  return s.what + " " + key_text(s.key) + ", +" + bytes_text(s.bytes_per_step) +
         " per step since step " + std::to_string(s.first_step) + " (" +
         bytes_text(double(s.live_bytes)) + " live at the last step)";
}

// The suspect to name: an owner with a name, else a stack with one, else the largest (the
// owner and stack suspects are the same memory seen two ways; an owner reads best).
const LeakSuspect* leak_suspect(const std::vector<LeakSuspect>& suspects) {
  for (const char* what : {"owner", "stack"}) {
    const LeakSuspect* best = nullptr;
    for (const LeakSuspect& s : suspects) {
      if (s.what != what || s.key.empty()) continue;
      if (!best || s.bytes_per_step > best->bytes_per_step) best = &s;
    }
    if (best) return best;
  }
  const auto largest = std::max_element(suspects.begin(), suspects.end(),
                                        [](const LeakSuspect& a, const LeakSuspect& b) {
                                          return a.bytes_per_step < b.bytes_per_step;
                                        });
  return largest == suspects.end() ? nullptr : &*largest;
}

std::string oom_text(const DeviceReport& d) {
  std::string text = count_text(d.oom_count) + (d.oom_count == 1 ? " OOM" : " OOMs");
  if (d.ooms.empty()) return text;
  const OomEntry& o = d.ooms.front();
  text += (d.oom_count == 1 ? "" : ", the first") + at_text(o.ts_ns, d.origin_ns) + ": " +
          key_text(o.api) + " of " + bytes_text(double(o.requested_bytes)) + " failed" +
          (o.refusals > 1 ? " (refused " + count_text(o.refusals) + " times)" : "");
  if (o.top.empty()) return text + "; no live block recorded then";
  const OomBlockEntry& b = o.top.front();  // largest first
  text += "; largest live block then: " + bytes_text(double(b.size_bytes));
  if (!b.owner.empty()) text += ", owner " + key_text(b.owner);
  if (!b.name.empty()) text += ", " + key_text(b.name);
  const std::string& stack = b.stack_python.empty() ? b.stack_c : b.stack_python;
  if (b.owner.empty() && !stack.empty()) text += ", stack " + key_text(stack);
  return text;
}

// What grew most at the peak from the baseline's to this run's: an owner, else an operator,
// else a stack; without names, the operator or range whose peak inside grew most.
std::string peak_growth_responsible(const DeviceReport* base, const DeviceReport& now) {
  auto bytes_in = [](const std::vector<BreakdownEntry>* list, const std::string& key) {
    if (!list) return int64_t(0);
    for (const BreakdownEntry& e : *list) {
      if (e.key == key) return e.bytes;
    }
    return int64_t(0);
  };
  const std::vector<Breakdown> base_kinds = {{"owner", base ? &base->peak.by_owner : nullptr},
                                             {"operator", base ? &base->peak.by_name : nullptr},
                                             {"stack", base ? &base->peak.by_stack : nullptr}};
  const std::vector<Breakdown> now_kinds = {{"owner", &now.peak.by_owner},
                                            {"operator", &now.peak.by_name},
                                            {"stack", &now.peak.by_stack}};
  for (size_t k = 0; k < now_kinds.size(); ++k) {
    const BreakdownEntry* best = nullptr;
    int64_t best_growth = 0;
    for (const BreakdownEntry& e : *now_kinds[k].entries) {
      if (e.key.empty()) continue;
      const int64_t growth = e.bytes - bytes_in(base_kinds[k].entries, e.key);
      if (growth > best_growth) {
        best = &e;
        best_growth = growth;
      }
    }
    if (best) {
      return std::string("grew most at the peak: ") + now_kinds[k].what + " " +
             key_text(best->key) + " (" + bytes_text(double(best->bytes - best_growth)) + " -> " +
             bytes_text(double(best->bytes)) + ")";
    }
  }
  const ScopeEntry* best = nullptr;
  int64_t best_growth = 0, best_base = 0;
  for (const ScopeEntry& s : now.scopes) {
    int64_t before = 0;
    if (base) {
      for (const ScopeEntry& b : base->scopes) {
        if (b.kind == s.kind && b.name == s.name) before = b.peak_bytes;
      }
    }
    if (s.peak_bytes - before > best_growth) {
      best = &s;
      best_growth = s.peak_bytes - before;
      best_base = before;
    }
  }
  if (!best) return "no owner, operator or stack recorded at the peak";
  return "no owner, operator or stack recorded at the peak; grew most: " + best->kind + " " +
         best->name + " (most live inside it: " + bytes_text(double(best_base)) + " -> " +
         bytes_text(double(best->peak_bytes)) + ")";
}

void check_device(const Report& r, const DeviceReport& d, const Thresholds& t, CheckResult* out) {
  const std::string where = where_of(r, d);
  auto add = [&](const char* check, std::string text) {
    out->violations.push_back({check, where, std::move(text)});
  };
  if (t.max_peak_bytes && d.peak.bytes != kUnknown && d.peak.bytes > *t.max_peak_bytes) {
    add("max-peak", "peak " + bytes_text(double(d.peak.bytes)) +
                        at_text(d.peak.ts_ns, d.origin_ns) + " is above --max-peak " +
                        bytes_text(double(*t.max_peak_bytes)) + "; " + peak_responsible(d));
  }
  if (t.max_leak_per_step_bytes && d.leaks.steps > 0) {
    double worst = 0;
    for (const LeakSuspect& s : d.leaks.suspects) worst = std::max(worst, s.bytes_per_step);
    if (worst > double(*t.max_leak_per_step_bytes)) {
      add("max-leak-per-step", "leaks " + bytes_text(worst) + " per step over " +
                                   std::to_string(d.leaks.steps) +
                                   " steps, above --max-leak-per-step " +
                                   bytes_text(double(*t.max_leak_per_step_bytes)) +
                                   "; leak suspect: " + leak_text(*leak_suspect(d.leaks.suspects)));
    }
  }
  const CurveSummary* allocated = find_curve(d, "Allocated");
  // The curve starts from nothing at the recording's start: its final value is what was
  // live at the end minus what was live at the start.
  if (t.max_growth_bytes && allocated && allocated->final_bytes != kUnknown &&
      allocated->final_bytes > *t.max_growth_bytes) {
    std::string who = responsible({{"owner", &d.leaks.alive_at_end_by_owner},
                                   {"operator", &d.leaks.alive_at_end_by_name},
                                   {"stack", &d.leaks.alive_at_end}},
                                  "what is live");
    if (who.empty()) {
      who = "no owner, operator or stack recorded for it";
    } else {
      who = "largest live at the end: " + who;
    }
    add("max-growth", "grew " + bytes_text(double(allocated->final_bytes)) +
                          " (live at the end minus at the start), above --max-growth " +
                          bytes_text(double(*t.max_growth_bytes)) + "; " + who);
  }
  const FragmentationSection& f = d.fragmentation;
  if (t.max_fragmentation_pct && f.worst_ns != kUnknown && f.reserved > 0) {
    const double pct = std::max(0.0, double(f.reserved - f.allocated) / double(f.reserved) * 100);
    if (pct > *t.max_fragmentation_pct) {
      std::string text = "fragmentation " + pct_text(pct) + at_text(f.worst_ns, d.origin_ns) +
                         " (reserved " + bytes_text(double(f.reserved)) + ", allocated " +
                         bytes_text(double(f.allocated));
      if (f.largest_free_gap != kUnknown) text += ", " + largest_free_gap_text(f, d.origin_ns);
      add("max-fragmentation",
          text + ") is above --max-fragmentation " + limit_pct_text(*t.max_fragmentation_pct));
    }
  }
  if (t.no_oom && d.oom_count > 0) add("no-oom", oom_text(d) + " (--no-oom)");
}

void check_peak_increase(const Report& report, const Report& baseline, const Thresholds& t,
                         CheckResult* out) {
  const double limit = *t.max_peak_increase_pct;
  for (const DevicePair& pair : line_up(baseline, report)) {
    if (!pair.now || !selected(*pair.now, t) || pair.now->peak.bytes == kUnknown) continue;
    const int64_t now = pair.now->peak.bytes;
    const int64_t base = pair.base ? pair.base->peak.bytes : kUnknown;
    std::string text;
    if (base == kUnknown || base <= 0) {
      if (now <= 0) continue;
      text = "peak " + bytes_text(double(now)) +
             (pair.base ? " where the baseline had none" : ", a device the baseline lacks");
    } else {
      const double pct = double(now - base) / double(base) * 100;
      if (pct <= limit) continue;
      text = "peak " + bytes_text(double(now)) + " is " + pct_text(pct) + " above the baseline's " +
             bytes_text(double(base));
    }
    out->violations.push_back({"max-peak-increase", pair.label,
                               text + " (--max-peak-increase " + limit_pct_text(limit) + "); " +
                                   peak_growth_responsible(pair.base, *pair.now)});
  }
}

}  // namespace

int threshold_count(const Thresholds& t) {
  return int(t.max_peak_bytes.has_value()) + int(t.max_leak_per_step_bytes.has_value()) +
         int(t.max_growth_bytes.has_value()) + int(t.max_fragmentation_pct.has_value()) +
         int(t.no_oom) + int(t.max_peak_increase_pct.has_value());
}

bool has_checked_device(const Report& report, const Thresholds& t) {
  return std::any_of(report.devices.begin(), report.devices.end(),
                     [&](const DeviceReport& d) { return selected(d, t); });
}

CheckResult check_report(const Report& report, const Report* baseline, const Thresholds& t) {
  CheckResult out;
  bool any_steps = false, any_curves = false;
  for (const DeviceReport& d : report.devices) {
    if (!selected(d, t)) continue;
    any_steps = any_steps || d.leaks.steps > 0;
    any_curves = any_curves || d.fragmentation.worst_ns != kUnknown;
    check_device(report, d, t, &out);
  }
  if (t.max_peak_increase_pct && baseline) check_peak_increase(report, *baseline, t, &out);
  if (t.max_leak_per_step_bytes && !any_steps) {
    out.warnings.push_back(
        "--max-leak-per-step not checked: no step markers, or fewer than 3 complete steps "
        "(memtap.step() once per training step marks them)");
  }
  if (t.max_fragmentation_pct && !any_curves) {
    out.warnings.push_back("--max-fragmentation not checked: no memory curves in the recording");
  }
  return out;
}

std::vector<std::string> incomplete_recording(const Report& report) {
  std::vector<std::string> out;
  for (const RecordedProcess& p : report.processes) {
    if (p.events_dropped == 0 && p.events_lost == 0) continue;
    std::string text = "pid " + std::to_string(p.pid) + ":";
    if (p.events_dropped != 0) {
      text += " " + count_text(p.events_dropped) +
              " events dropped by the agent (its buffer was full: MEMTAP_BUFFER_MB, or "
              "MEMTAP_LOSSLESS=1 to wait instead)";
    }
    if (p.events_lost != 0) {
      text += std::string(p.events_dropped ? "," : "") + " " + count_text(p.events_lost) +
              " events lost on the way to the monitor";
    }
    out.push_back(text);
  }
  if (report.rows_skipped != 0) {
    out.push_back(count_text(report.rows_skipped) + (report.rows_skipped == 1 ? " row" : " rows") +
                  " not understood (skipped)");
  }
  if (report.live_input.rejected_messages != 0) {
    out.push_back("the live monitor rejected " + count_text(report.live_input.rejected_messages) +
                  " messages (memtap report says which)");
  }
  if (!report.stopped.reason.empty()) {
    out.push_back("the recording stopped " + recording_stop_position(report.stopped) + " (" +
                  report.stopped.reason + "); " + count_text(report.stopped.rows_not_recorded) +
                  " events after them were not recorded");
  } else if (report.unfinished) {
    out.push_back("not finished: its monitor stopped before the end (killed?)");
  }
  return out;
}

}  // namespace memtap
