// See report_diff_render.h.
#include "monitor/report/report_diff_render.h"

#include <cmath>
#include <vector>

#include "monitor/report/json_writer.h"
#include "monitor/report/units.h"

namespace memtap {
namespace {

std::string value_text(double v, DiffUnit unit) {
  char buf[48];
  switch (unit) {
    case DiffUnit::kBytes:
      return bytes_text(v);
    case DiffUnit::kBytesPerSecond:
      return bytes_text(v) + "/s";
    case DiffUnit::kBytesPerStep:
      return bytes_text(v) + "/step";
    case DiffUnit::kSeconds:
      snprintf(buf, sizeof buf, "%.1f s", v);
      return buf;
    case DiffUnit::kCount:
      return (v < 0 ? "-" : "") + count_text(uint64_t(std::llround(std::fabs(v))));
  }
  return "?";
}

std::string delta_text(const Change& c) {
  return (c.delta > 0 ? "+" : "") + value_text(c.delta, c.unit);
}

// The percent, or what stands in for it: "new", "vanished", "?" (unlisted).
std::string percent_text(const Change& c) {
  if (c.status == "new" || c.status == "vanished") return c.status;
  if (c.status == "unlisted") return "?";
  if (std::isnan(c.percent)) return "";
  char buf[32];
  snprintf(buf, sizeof buf, std::fabs(c.percent) < 10 ? "%+.1f%%" : "%+.0f%%", c.percent);
  return buf;
}

std::string side_text(bool in, double v, DiffUnit unit) {
  return in ? value_text(v, unit) : "-";
}

// "+1.1 GiB (+40%)", "+40.0 MiB/step (new)".
std::string change_text(const Change& c) {
  const std::string p = percent_text(c);
  return delta_text(c) + (p.empty() ? "" : " (" + p + ")");
}

constexpr const char* kRow = "    %14s %14s %15s %9s  %s\n";

void row(FILE* out, const std::string& key, const Change& c) {
  fprintf(out, kRow, side_text(c.in_base, c.base, c.unit).c_str(),
          side_text(c.in_now, c.now, c.unit).c_str(), delta_text(c).c_str(),
          percent_text(c).c_str(), key.c_str());
}

size_t changed(const std::vector<Change>& list) {
  size_t n = 0;
  for (const Change& c : list) n += c.status != "same";
  return n;
}

// A section's changed entries; nothing when none changed.
void changes_text(FILE* out, const char* title, const std::vector<Change>& list,
                  bool keys_are_names = true) {
  if (changed(list) == 0) return;
  fprintf(out, "  %s:\n", title);
  for (const Change& c : list)
    if (c.status != "same") row(out, keys_are_names ? key_text(c.key) : c.key, c);
}

bool steps_changed(const std::vector<StepChange>& steps) {
  for (const StepChange& s : steps)
    if (s.peak.delta != 0 || s.end.delta != 0) return true;
  return false;
}

void steps_text(FILE* out, const std::vector<StepChange>& steps) {
  if (!steps_changed(steps)) return;
  fprintf(out, "  Steps (paired by number; live bytes):\n");
  for (const StepChange& s : steps) {
    if (s.peak.delta == 0 && s.end.delta == 0) continue;
    const std::string step = "step " + std::to_string(s.step);
    row(out, step + " peak", s.peak);
    row(out, step + " end", s.end);
  }
}

void lone_text(FILE* out, const char* title, const std::vector<LoneKey>& keys) {
  if (keys.empty()) return;
  fprintf(out, "  %s:\n", title);
  for (const LoneKey& k : keys) {
    fprintf(out, "    %-6s %s (%s)\n", k.kind.c_str(), key_text(k.key).c_str(),
            bytes_text(k.bytes).c_str());
  }
}

const char* presence(const DeviceDiff& d) {
  return d.in_base && d.in_now ? "in both" : d.in_base ? "only in BASE" : "only in NEW";
}

bool anything_changed(const DeviceDiff& d) {
  for (const std::vector<Change>* list :
       {&d.figures, &d.peak_by_owner, &d.peak_by_name, &d.peak_by_stack, &d.alive_by_owner,
        &d.alive_by_name, &d.alive_by_stack, &d.leak_by_owner, &d.leak_by_stack, &d.scope_owners,
        &d.scope_operators, &d.scope_ranges})
    if (changed(*list) != 0) return true;
  return steps_changed(d.steps) || !d.appeared.empty() || !d.vanished.empty();
}

void device_text_section(FILE* out, const DeviceDiff& d) {
  fprintf(out, "\n%s (%s)\n", d.label.c_str(), presence(d));
  if (!anything_changed(d)) {
    fprintf(out, "  nothing changed\n");
    return;
  }
  fprintf(out, "    %14s %14s %15s %9s\n", "BASE", "NEW", "delta", "change");
  changes_text(out, "Figures", d.figures, false);
  changes_text(out, "Peak by owner", d.peak_by_owner);
  changes_text(out, "Peak by name", d.peak_by_name);
  changes_text(out, "Peak by stack", d.peak_by_stack);
  changes_text(out, "Live at end by owner", d.alive_by_owner);
  changes_text(out, "Live at end by name", d.alive_by_name);
  changes_text(out, "Live at end by stack", d.alive_by_stack);
  changes_text(out, "Leak suspects by owner (growth per step)", d.leak_by_owner);
  changes_text(out, "Leak suspects by stack (growth per step)", d.leak_by_stack);
  changes_text(out, "Allocated inside owners", d.scope_owners);
  changes_text(out, "Allocated inside operators", d.scope_operators);
  changes_text(out, "Allocated inside ranges", d.scope_ranges);
  steps_text(out, d.steps);
  lone_text(out, "Only in NEW", d.appeared);
  lone_text(out, "Only in BASE", d.vanished);
}

void run_text(FILE* out, const char* role, const RunSummary& r) {
  fprintf(out, "%s %s (%s, %s events)%s\n", role, r.source.c_str(), r.format.c_str(),
          count_text(r.events).c_str(), r.unfinished ? ", unfinished" : "");
}

// A value, or null where the run lacks it; bytes and counts as integers.
void side_json(JsonWriter& j, const char* key, bool in, double v, DiffUnit unit) {
  j.key(key);
  if (!in)
    j.null();
  else if (unit == DiffUnit::kBytes || unit == DiffUnit::kCount)
    j.value(int64_t(std::llround(v)));
  else
    j.value(v);
}

void change_fields(JsonWriter& j, const Change& c) {
  j.key("unit").value(diff_unit_name(c.unit));
  side_json(j, "base", c.in_base, c.base, c.unit);
  side_json(j, "new", c.in_now, c.now, c.unit);
  side_json(j, "delta", true, c.delta, c.unit);
  j.key("percent").value(c.percent);  // NaN: null
  j.key("status").value(c.status);
}

void change_json(JsonWriter& j, const Change& c) {
  j.begin_object().key("key").value(c.key);
  change_fields(j, c);
  j.end_object();
}

void changes_json(JsonWriter& j, const char* name, const std::vector<Change>& list) {
  j.key(name).begin_array();
  for (const Change& c : list) change_json(j, c);
  j.end_array();
}

void lone_json(JsonWriter& j, const char* name, const std::vector<LoneKey>& keys) {
  j.key(name).begin_array();
  for (const LoneKey& k : keys) {
    j.begin_object().key("kind").value(k.kind).key("key").value(k.key);
    j.key("bytes").value(int64_t(std::llround(k.bytes))).end_object();
  }
  j.end_array();
}

void run_json(JsonWriter& j, const char* name, const RunSummary& r) {
  j.key(name).begin_object();
  j.key("source").value(r.source).key("format").value(r.format);
  j.key("events").value(r.events).key("processes").value(uint64_t(r.processes));
  j.key("devices").value(uint64_t(r.devices)).key("unfinished").value(r.unfinished);
  j.end_object();
}

void device_json(JsonWriter& j, const DeviceDiff& d) {
  j.begin_object().key("label").value(d.label).key("device").value(device_text(d.device));
  j.key("base");
  if (d.in_base)
    j.begin_object().key("pid").value(d.base_pid).end_object();
  else
    j.null();
  j.key("new");
  if (d.in_now)
    j.begin_object().key("pid").value(d.now_pid).end_object();
  else
    j.null();
  changes_json(j, "figures", d.figures);
  j.key("peak").begin_object();
  changes_json(j, "by_owner", d.peak_by_owner);
  changes_json(j, "by_name", d.peak_by_name);
  changes_json(j, "by_stack", d.peak_by_stack);
  j.end_object();
  j.key("live_at_end").begin_object();
  changes_json(j, "by_owner", d.alive_by_owner);
  changes_json(j, "by_name", d.alive_by_name);
  changes_json(j, "by_stack", d.alive_by_stack);
  j.end_object();
  j.key("leaks").begin_object();
  changes_json(j, "by_owner", d.leak_by_owner);
  changes_json(j, "by_stack", d.leak_by_stack);
  j.end_object();
  j.key("scopes").begin_object();
  changes_json(j, "owner", d.scope_owners);
  changes_json(j, "operator", d.scope_operators);
  changes_json(j, "range", d.scope_ranges);
  j.end_object();
  j.key("steps").begin_array();
  for (const StepChange& s : d.steps) {
    j.begin_object().key("step").value(s.step);
    j.key("peak").begin_object();
    change_fields(j, s.peak);
    j.end_object();
    j.key("end").begin_object();
    change_fields(j, s.end);
    j.end_object();
    j.end_object();
  }
  j.end_array();
  lone_json(j, "appeared", d.appeared);
  lone_json(j, "vanished", d.vanished);
  j.end_object();
}

}  // namespace

std::string finding_text(const Finding& f) {
  std::string text = f.what;
  if (!f.change.status.empty()) text += " " + change_text(f.change);
  text += " on " + f.device;
  for (size_t i = 0; i < f.causes.size(); ++i) {
    const Cause& c = f.causes[i];
    text += (i == 0 ? ": " : ", ") + c.kind + " " + key_text(c.change.key) + " " +
            change_text(c.change);
  }
  return text;
}

void diff_text(const ReportDiff& d, FILE* out) {
  run_text(out, "memtap diff: BASE", d.base);
  run_text(out, "             NEW ", d.now);
  fprintf(out, "  paired by %s:\n",
          d.by_rank ? "rank" : "the order the processes started (not every process has a rank)");
  for (const DeviceDiff& dev : d.devices)
    fprintf(out, "    %s: %s\n", dev.label.c_str(), presence(dev));
  for (const std::string& c : d.cautions) fprintf(out, "  caution: %s\n", c.c_str());
  if (!d.lined_up) {
    fprintf(out, "What changed most: nothing compared (the runs cannot be lined up)\n");
  } else if (d.headline.empty()) {
    fprintf(out,
            "What changed most: nothing of note (peak and live bytes at the end within 1%%, no "
            "leak suspect and no OOM count changed)\n");
  } else {
    fprintf(out, "What changed most:\n");
    for (const Finding& f : d.headline) fprintf(out, "  %s\n", finding_text(f).c_str());
  }
  for (const DeviceDiff& dev : d.devices) device_text_section(out, dev);
}

std::string diff_json(const ReportDiff& d) {
  JsonWriter j;
  j.begin_object();
  run_json(j, "base", d.base);
  run_json(j, "new", d.now);
  j.key("paired_by").value(d.by_rank ? "rank" : "order");
  j.key("lined_up").value(d.lined_up);
  j.key("cautions").begin_array();
  for (const std::string& c : d.cautions) j.value(c);
  j.end_array();
  j.key("headline").begin_array();
  for (const Finding& f : d.headline) {
    j.begin_object().key("what").value(f.what).key("device").value(f.device);
    j.key("text").value(finding_text(f));
    j.key("change");
    if (f.change.status.empty()) {
      j.null();
    } else {
      change_json(j, f.change);
    }
    j.key("causes").begin_array();
    for (const Cause& c : f.causes) {
      j.begin_object().key("kind").value(c.kind).key("key").value(c.change.key);
      change_fields(j, c.change);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("devices").begin_array();
  for (const DeviceDiff& dev : d.devices) device_json(j, dev);
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace memtap
