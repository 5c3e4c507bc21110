// See report_diff.h.
#include "monitor/report/report_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "monitor/report/report_lineup.h"
#include "monitor/report/units.h"

namespace memtap {
namespace {

// One run's value of a figure, or nothing where the run cannot tell.
struct Value {
  bool known = false;
  double v = 0;
};

Value known(double v) {
  return {true, v};
}
Value bytes_value(int64_t v) {
  return v == kUnknown ? Value{} : known(double(v));
}

Change make_change(std::string key, DiffUnit unit, Value base, Value now) {
  Change c;
  c.key = std::move(key);
  c.unit = unit;
  c.in_base = base.known;
  c.in_now = now.known;
  c.base = base.v;
  c.now = now.v;
  c.delta = c.now - c.base;
  c.percent = c.in_base && c.in_now && c.base != 0 ? c.delta / std::fabs(c.base) * 100 : NAN;
  c.status = !c.in_base ? "new" : !c.in_now ? "vanished" : c.delta == 0 ? "same" : "changed";
  return c;
}

bool larger_change(const Change& a, const Change& b) {
  const double da = std::fabs(a.delta), db = std::fabs(b.delta);
  if (da != db) return da > db;
  return a.key < b.key;
}

// A run's list of keys and their values, as its report gives them.
struct Listing {
  std::map<std::string, double> values;
  bool full = false;     // as long as the report lists: more keys may lie below it
  bool present = false;  // the run has the device (and, for leaks, steps)
};

Listing breakdown_listing(const std::vector<BreakdownEntry>* entries, size_t listed) {
  Listing l;
  if (!entries) return l;
  l.present = true;
  for (const BreakdownEntry& e : *entries) l.values[e.key] += double(e.bytes);
  l.full = entries->size() >= listed;
  return l;
}

// Every key of either listing, largest change first, the first `top`.
std::vector<Change> key_changes(const Listing& base, const Listing& now, DiffUnit unit,
                                size_t top) {
  std::set<std::string> keys;
  for (const auto& [k, v] : base.values) keys.insert(k);
  for (const auto& [k, v] : now.values) keys.insert(k);
  std::vector<Change> out;
  for (const std::string& k : keys) {
    auto b = base.values.find(k);
    auto n = now.values.find(k);
    // A run that has the device but not the key holds none of it, unless its list was
    // full: then the key may just be below the list's end.
    Value bv = b != base.values.end() ? known(b->second) : base.present ? known(0) : Value{};
    Value nv = n != now.values.end() ? known(n->second) : now.present ? known(0) : Value{};
    const bool base_unlisted = b == base.values.end() && base.full;
    const bool now_unlisted = n == now.values.end() && now.full;
    Change c = make_change(k, unit, bv, nv);
    if (base.present && b == base.values.end() && !base_unlisted) c.status = "new";
    if (now.present && n == now.values.end() && !now_unlisted) c.status = "vanished";
    if (base_unlisted || now_unlisted) {
      c.status = "unlisted";
      c.in_base = !base_unlisted && base.present;
      c.in_now = !now_unlisted && now.present;
      c.percent = NAN;
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), larger_change);
  if (out.size() > top) out.resize(top);
  return out;
}

const CurveSummary* curve(const DeviceReport* d, const std::string& name) {
  return d ? find_curve(*d, name) : nullptr;
}

// A figure of a device, or nothing where the device is not in the run.
template <class F>
Value of(const DeviceReport* d, F f) {
  return d ? f(*d) : Value{};
}

std::vector<Change> figures(const DeviceReport* b, const DeviceReport* n) {
  std::vector<Change> bytes, others;
  auto add = [](std::vector<Change>* to, const char* key, DiffUnit unit, Value bv, Value nv) {
    if (bv.known || nv.known) to->push_back(make_change(key, unit, bv, nv));
  };
  std::vector<std::string> curve_names;
  for (const DeviceReport* d : {b, n})
    if (d)
      for (const CurveSummary& c : d->curves)
        if (std::find(curve_names.begin(), curve_names.end(), c.name) == curve_names.end())
          curve_names.push_back(c.name);
  for (const std::string& name : curve_names) {
    const CurveSummary* cb = curve(b, name);
    const CurveSummary* cn = curve(n, name);
    const Value pb = cb ? bytes_value(cb->peak_bytes) : Value{};
    const Value pn = cn ? bytes_value(cn->peak_bytes) : Value{};
    add(&bytes, (name + " peak").c_str(), DiffUnit::kBytes, pb, pn);
    const Value fb = cb ? bytes_value(cb->final_bytes) : Value{};
    const Value fn = cn ? bytes_value(cn->final_bytes) : Value{};
    add(&bytes, (name + " at end").c_str(), DiffUnit::kBytes, fb, fn);
  }
  auto both = [&](std::vector<Change>* to, const char* key, DiffUnit unit, auto f) {
    add(to, key, unit, of(b, f), of(n, f));
  };
  both(&bytes, "bytes allocated", DiffUnit::kBytes,
       [](const DeviceReport& d) { return known(double(d.bytes_allocated)); });
  both(&bytes, "fragmentation at worst", DiffUnit::kBytes, [](const DeviceReport& d) {
    const FragmentationSection& f = d.fragmentation;
    return f.worst_ns == kUnknown ? Value{} : known(double(f.reserved - f.allocated));
  });
  both(&bytes, "unused at end", DiffUnit::kBytes, [](const DeviceReport& d) {
    return d.fragmentation.worst_ns == kUnknown ? Value{} : bytes_value(d.fragmentation.final_gap);
  });
  both(&bytes, "largest free gap", DiffUnit::kBytes,
       [](const DeviceReport& d) { return bytes_value(d.fragmentation.largest_free_gap); });
  std::stable_sort(bytes.begin(), bytes.end(), [](const Change& x, const Change& y) {
    return std::fabs(x.delta) > std::fabs(y.delta);
  });
  both(&others, "allocations", DiffUnit::kCount,
       [](const DeviceReport& d) { return known(double(d.allocations)); });
  both(&others, "steps", DiffUnit::kCount,
       [](const DeviceReport& d) { return known(double(d.leaks.steps)); });
  both(&others, "live bytes per step", DiffUnit::kBytesPerStep, [](const DeviceReport& d) {
    return d.step_figures.size() >= 3 ? known(d.leaks.live_bytes_per_step) : Value{};
  });
  both(&others, "growth", DiffUnit::kBytesPerSecond, [](const DeviceReport& d) {
    return known(d.oom.sustained_growth ? d.oom.growth_bytes_per_s : 0);
  });
  both(&others, "time to OOM", DiffUnit::kSeconds, [](const DeviceReport& d) {
    return d.oom.seconds_to_oom >= 0 ? known(d.oom.seconds_to_oom) : Value{};
  });
  both(&others, "OOMs", DiffUnit::kCount,
       [](const DeviceReport& d) { return known(double(d.oom_count)); });
  bytes.insert(bytes.end(), others.begin(), others.end());
  return bytes;
}

Listing suspect_listing(const DeviceReport* d, const char* what) {
  Listing l;
  if (!d || d->leaks.steps == 0) return l;
  l.present = true;
  for (const LeakSuspect& s : d->leaks.suspects)
    if (s.what == what) l.values[s.key] += s.bytes_per_step;
  return l;
}

Listing scope_listing(const DeviceReport* d, const char* kind, size_t listed) {
  Listing l;
  if (!d) return l;
  l.present = true;
  size_t n = 0;
  for (const ScopeEntry& s : d->scopes) {
    if (s.kind != kind) continue;
    l.values[s.name] += double(s.inclusive_bytes);
    ++n;
  }
  l.full = n >= listed;
  return l;
}

std::vector<StepChange> step_changes(const DeviceReport* b, const DeviceReport* n, size_t top) {
  std::vector<StepChange> out;
  if (!b || !n || b->step_figures.empty() || n->step_figures.empty()) return out;
  std::map<int64_t, const StepSummary*> now_steps;
  for (const StepSummary& s : n->step_figures) now_steps.emplace(s.step, &s);
  for (const StepSummary& s : b->step_figures) {
    auto it = now_steps.find(s.step);
    if (it == now_steps.end()) continue;
    StepChange c;
    c.step = s.step;
    c.peak = make_change("peak", DiffUnit::kBytes, known(double(s.peak_bytes)),
                         known(double(it->second->peak_bytes)));
    c.end = make_change("end", DiffUnit::kBytes, known(double(s.end_bytes)),
                        known(double(it->second->end_bytes)));
    out.push_back(std::move(c));
  }
  auto size = [](const StepChange& c) {
    return std::max(std::fabs(c.peak.delta), std::fabs(c.end.delta));
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const StepChange& x, const StepChange& y) { return size(x) > size(y); });
  if (out.size() > top) out.resize(top);
  return out;
}

// Owners (or operator names) a run names anywhere in its report, with the most bytes each
// held or allocated; `complete` false where a list was full (more may lie below it).
struct KeySet {
  std::map<std::string, double> bytes;
  bool complete = true;
};

void add_keys(KeySet* set, const std::vector<BreakdownEntry>& entries, size_t listed) {
  for (const BreakdownEntry& e : entries)
    set->bytes[e.key] = std::max(set->bytes[e.key], double(e.bytes));
  if (entries.size() >= listed) set->complete = false;
}

KeySet named_keys(const DeviceReport& d, bool owners, size_t listed) {
  KeySet set;
  add_keys(&set, owners ? d.peak.by_owner : d.peak.by_name, listed);
  add_keys(&set, owners ? d.leaks.alive_at_end_by_owner : d.leaks.alive_at_end_by_name, listed);
  size_t scopes = 0;
  for (const ScopeEntry& s : d.scopes) {
    if (s.kind != (owners ? "owner" : "operator")) continue;
    set.bytes[s.name] = std::max(set.bytes[s.name], double(s.inclusive_bytes));
    ++scopes;
  }
  if (scopes >= listed) set.complete = false;
  if (owners)
    for (const LeakSuspect& s : d.leaks.suspects)
      if (s.what == "owner") set.bytes[s.key] = std::max(set.bytes[s.key], double(s.live_bytes));
  set.bytes.erase("");
  return set;
}

// Keys of `in` that `other` lacks, most bytes first; none where `other`'s lists were full.
void lone_keys(const KeySet& in, const KeySet& other, const char* kind, std::vector<LoneKey>* out) {
  if (!other.complete) return;
  for (const auto& [key, bytes] : in.bytes)
    if (!other.bytes.count(key)) out->push_back({kind, key, bytes});
}

void lone(const DeviceReport& b, const DeviceReport& n, size_t listed, DeviceDiff* out) {
  for (bool owners : {true, false}) {
    const KeySet kb = named_keys(b, owners, listed);
    const KeySet kn = named_keys(n, owners, listed);
    const char* kind = owners ? "owner" : "name";
    lone_keys(kn, kb, kind, &out->appeared);
    lone_keys(kb, kn, kind, &out->vanished);
  }
  auto order = [](const LoneKey& x, const LoneKey& y) {
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    return x.key < y.key;
  };
  std::sort(out->appeared.begin(), out->appeared.end(), order);
  std::sort(out->vanished.begin(), out->vanished.end(), order);
}

DeviceDiff device_diff(const DevicePair& p, const DiffOptions& o) {
  const DeviceReport* b = p.base;
  const DeviceReport* n = p.now;
  DeviceDiff d;
  d.label = p.label;
  d.in_base = b != nullptr;
  d.in_now = n != nullptr;
  d.base_pid = b ? b->pid : 0;
  d.now_pid = n ? n->pid : 0;
  d.device = b ? b->device : n->device;
  d.figures = figures(b, n);
  auto peak = [&](std::vector<BreakdownEntry> PeakSection::*list) {
    return key_changes(breakdown_listing(b ? &(b->peak.*list) : nullptr, o.listed),
                       breakdown_listing(n ? &(n->peak.*list) : nullptr, o.listed),
                       DiffUnit::kBytes, o.top);
  };
  auto alive = [&](std::vector<BreakdownEntry> LeakSection::*list) {
    return key_changes(breakdown_listing(b ? &(b->leaks.*list) : nullptr, o.listed),
                       breakdown_listing(n ? &(n->leaks.*list) : nullptr, o.listed),
                       DiffUnit::kBytes, o.top);
  };
  d.peak_by_owner = peak(&PeakSection::by_owner);
  d.peak_by_name = peak(&PeakSection::by_name);
  d.peak_by_stack = peak(&PeakSection::by_stack);
  d.alive_by_owner = alive(&LeakSection::alive_at_end_by_owner);
  d.alive_by_name = alive(&LeakSection::alive_at_end_by_name);
  d.alive_by_stack = alive(&LeakSection::alive_at_end);
  if ((b && b->leaks.steps > 0) || (n && n->leaks.steps > 0)) {
    d.leak_by_owner = key_changes(suspect_listing(b, "owner"), suspect_listing(n, "owner"),
                                  DiffUnit::kBytesPerStep, o.top);
    d.leak_by_stack = key_changes(suspect_listing(b, "stack"), suspect_listing(n, "stack"),
                                  DiffUnit::kBytesPerStep, o.top);
  }
  auto scopes = [&](const char* kind) {
    return key_changes(scope_listing(b, kind, o.listed), scope_listing(n, kind, o.listed),
                       DiffUnit::kBytes, o.top);
  };
  d.scope_owners = scopes("owner");
  d.scope_operators = scopes("operator");
  d.scope_ranges = scopes("range");
  d.steps = step_changes(b, n, o.top);
  if (b && n) lone(*b, *n, o.listed, &d);
  return d;
}

const Change* figure(const DeviceDiff& d, const std::string& key) {
  for (const Change& c : d.figures)
    if (c.key == key) return &c;
  return nullptr;
}

// The largest change of the finding's sign in `list`, under a name (not "(none)").
void add_cause(const char* kind, const std::vector<Change>& list, double sign, Finding* f) {
  for (const Change& c : list) {
    if (c.key.empty() || c.delta * sign <= 0) continue;
    f->causes.push_back({kind, c});
    return;
  }
}

bool notable(const Change& c, double min_share) {
  const double larger = std::max(std::fabs(c.base), std::fabs(c.now));
  return c.delta != 0 && std::fabs(c.delta) >= min_share * larger;
}

// The device whose figure `key` changed most, and by how much; nullptr where none did.
const DeviceDiff* most_changed(const std::vector<DeviceDiff>& devices, const std::string& key,
                               double min_share) {
  const DeviceDiff* best = nullptr;
  double best_delta = 0;
  for (const DeviceDiff& d : devices) {
    const Change* c = figure(d, key);
    if (!c || !c->in_base || !c->in_now || !notable(*c, min_share)) continue;
    if (std::fabs(c->delta) > best_delta) {
      best = &d;
      best_delta = std::fabs(c->delta);
    }
  }
  return best;
}

std::vector<Finding> headline(const std::vector<DeviceDiff>& devices, const DiffOptions& o) {
  std::vector<Finding> out;
  if (const DeviceDiff* d = most_changed(devices, "Allocated peak", o.headline_min_share)) {
    Finding f{"peak", d->label, *figure(*d, "Allocated peak"), {}};
    const double sign = f.change.delta > 0 ? 1 : -1;
    add_cause("owner", d->peak_by_owner, sign, &f);
    add_cause("name", d->peak_by_name, sign, &f);
    add_cause("stack", d->peak_by_stack, sign, &f);
    out.push_back(std::move(f));
  }
  // A leak is what the analyses judged one (a suspect), not any drift of live bytes: the
  // device whose suspects changed most.
  const DeviceDiff* leak = nullptr;
  double leak_delta = 0;
  for (const DeviceDiff& d : devices) {
    if (!d.in_base || !d.in_now) continue;
    for (const std::vector<Change>* list : {&d.leak_by_owner, &d.leak_by_stack})
      if (!list->empty() && std::fabs(list->front().delta) > std::fabs(leak_delta)) {
        leak = &d;
        leak_delta = list->front().delta;
      }
  }
  if (leak) {
    Finding f{"leak", leak->label, {}, {}};
    if (const Change* c = figure(*leak, "live bytes per step")) f.change = *c;
    f.change.key = "live bytes per step";
    f.change.unit = DiffUnit::kBytesPerStep;
    const double sign = leak_delta > 0 ? 1 : -1;
    add_cause("owner", leak->leak_by_owner, sign, &f);
    add_cause("stack", leak->leak_by_stack, sign, &f);
    out.push_back(std::move(f));
  }
  if (const DeviceDiff* d = most_changed(devices, "Allocated at end", o.headline_min_share)) {
    Finding f{"live at end", d->label, *figure(*d, "Allocated at end"), {}};
    const double sign = f.change.delta > 0 ? 1 : -1;
    add_cause("owner", d->alive_by_owner, sign, &f);
    add_cause("name", d->alive_by_name, sign, &f);
    add_cause("stack", d->alive_by_stack, sign, &f);
    out.push_back(std::move(f));
  }
  for (const DeviceDiff& d : devices) {
    const Change* c = figure(d, "OOMs");
    if (c && c->in_base && c->in_now && c->delta != 0) {
      out.push_back({"OOMs", d.label, *c, {}});
      break;
    }
  }
  return out;
}

// How much a device changed, to put the most changed first: its largest bytes change, or
// for a device only one run has, its peak.
double device_weight(const DeviceDiff& d) {
  double w = 0;
  for (const Change& c : d.figures)
    if (c.unit == DiffUnit::kBytes) w = std::max(w, std::fabs(c.delta));
  return w;
}

RunSummary summary(const Report& r) {
  return {r.source, r.format, r.events, r.processes.size(), r.devices.size(), r.unfinished};
}

// "1 process", "2 processes"; "1 device", "3 devices".
std::string count_of(size_t n, const std::string& word) {
  const bool es = word.back() == 's';
  return count_text(n) + " " + word + (n == 1 ? "" : es ? "es" : "s");
}

void cautions(const Report& base, const Report& now, ReportDiff* out) {
  std::vector<std::string>& c = out->cautions;
  if (!out->lined_up) {
    c.push_back("the runs cannot be lined up: no process and device of BASE is in NEW (" +
                count_of(base.devices.size(), "device") + " in BASE, " +
                std::to_string(now.devices.size()) +
                " in NEW); each is shown alone, nothing is compared");
  }
  if (!out->by_rank) {
    if (base.processes.size() != now.processes.size()) {
      c.push_back("BASE has " + count_of(base.processes.size(), "process") + " and NEW " +
                  count_of(now.processes.size(), "process") +
                  ": processes were paired by the order they started");
    }
    for (size_t i = 0; i < base.processes.size() && i < now.processes.size(); ++i) {
      const std::string& bc = base.processes[i].command_line;
      const std::string& nc = now.processes[i].command_line;
      if (!bc.empty() && !nc.empty() && bc != nc) {
        c.push_back("process " + std::to_string(i + 1) + " ran '" + bc + "' in BASE and '" + nc +
                    "' in NEW");
      }
    }
  }
  for (const DeviceDiff& d : out->devices) {
    if (!d.in_base || !d.in_now) continue;
    const Change* steps = figure(d, "steps");
    if (steps && (steps->base == 0) != (steps->now == 0)) {
      c.push_back(d.label + ": only " + std::string(steps->base == 0 ? "NEW" : "BASE") +
                  " has step markers; steps are not compared");
    }
  }
  if (base.unfinished) c.push_back("BASE is an unfinished recording (its monitor stopped early)");
  if (now.unfinished) c.push_back("NEW is an unfinished recording (its monitor stopped early)");
}

}  // namespace

const char* diff_unit_name(DiffUnit unit) {
  switch (unit) {
    case DiffUnit::kBytes:
      return "bytes";
    case DiffUnit::kBytesPerSecond:
      return "bytes_per_s";
    case DiffUnit::kBytesPerStep:
      return "bytes_per_step";
    case DiffUnit::kSeconds:
      return "seconds";
    case DiffUnit::kCount:
      return "count";
  }
  return "?";
}

ReportDiff diff_reports(const Report& base, const Report& now, const DiffOptions& options) {
  ReportDiff out;
  out.base = summary(base);
  out.now = summary(now);
  out.by_rank = pairs_by_rank(base, now);
  for (const DevicePair& p : line_up(base, now)) {
    out.devices.push_back(device_diff(p, options));
    out.lined_up = out.lined_up || (p.base && p.now);
  }
  std::stable_sort(
      out.devices.begin(), out.devices.end(),
      [](const DeviceDiff& a, const DeviceDiff& b) { return device_weight(a) > device_weight(b); });
  out.headline = headline(out.devices, options);
  cautions(base, now, &out);
  return out;
}

}  // namespace memtap
