// `memtap check FILE [thresholds]`: memtap as a guard in CI. The recording's report (any
// file report reads) held against the thresholds given (report_check.h): exit 0 when every
// one holds, 1 with a line per violation on stdout, 2 when the command cannot check (bad
// arguments, a file it cannot read, a --device the recording lacks).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "monitor/cli/commands.h"
#include "monitor/live/program_run.h"
#include "monitor/report/report_check.h"
#include "monitor/store/reader/text_values.h"

namespace memtap {
namespace {

struct CheckOptions {
  std::string file;
  std::string baseline;  // --baseline
  Thresholds thresholds;
  bool strict = false;      // warnings fail too
  bool low_memory = false;  // --low-memory, as report's
};

// "10", "10%", "12.5%": a percentage, 0 or more.
bool parse_pct(const std::string& text, double* pct) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0) return false;
  if (*end == '%') ++end;
  if (*end != 0) return false;
  *pct = value;
  return true;
}

bool parse_check_args(const std::vector<std::string>& args, CheckOptions* o, std::string* error) {
  Thresholds& t = o->thresholds;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--no-oom") {
      t.no_oom = true;
      continue;
    }
    if (a == "--strict") {
      o->strict = true;
      continue;
    }
    if (a == "--low-memory") {
      o->low_memory = true;
      continue;
    }
    if (a.empty() || a[0] != '-') {
      if (!o->file.empty()) {
        *error = "one recording at a time ('" + o->file + "' and '" + a + "')";
        return false;
      }
      o->file = a;
      continue;
    }
    std::optional<int64_t>* size = a == "--max-peak"            ? &t.max_peak_bytes
                                   : a == "--max-leak-per-step" ? &t.max_leak_per_step_bytes
                                   : a == "--max-growth"        ? &t.max_growth_bytes
                                                                : nullptr;
    std::optional<double>* pct = a == "--max-fragmentation"   ? &t.max_fragmentation_pct
                                 : a == "--max-peak-increase" ? &t.max_peak_increase_pct
                                                              : nullptr;
    const bool takes_value = size || pct || a == "--device" || a == "--baseline";
    if (!takes_value) {
      *error = "unknown option '" + a + "'";
      return false;
    }
    if (i + 1 >= args.size()) {
      *error = a + " needs a value";
      return false;
    }
    const std::string& v = args[++i];
    const bool given = (size && size->has_value()) || (pct && pct->has_value()) ||
                       (a == "--device" && t.device) || (a == "--baseline" && !o->baseline.empty());
    if (given) {
      *error = a + " given twice";
      return false;
    }
    if (size) {
      uint64_t bytes = 0;
      if (!parse_size(v, &bytes)) {
        *error = a + " '" + v + "' is not a size (bytes, or a number with KiB, MiB or GiB: 512MiB)";
        return false;
      }
      *size = int64_t(bytes);
    } else if (pct) {
      double value = 0;
      if (!parse_pct(v, &value)) {
        *error = a + " '" + v + "' is not a percentage (a number, with or without %: 10%)";
        return false;
      }
      *pct = value;
    } else if (a == "--device") {
      int32_t device = kNoDevice;
      if (!reader::parse_device(v, &device) || device == kNoDevice) {
        *error = "--device '" + v + "': expected cpu or a GPU number (0, 1, ...)";
        return false;
      }
      t.device = device;
    } else {
      o->baseline = v;
    }
  }
  if (o->file.empty()) {
    *error = "no recording given (memtap check FILE THRESHOLDS...; memtap --help lists them)";
  } else if (threshold_count(t) == 0) {
    *error =
        "no threshold given: nothing to check (--max-peak, --max-leak-per-step, --max-growth, "
        "--max-fragmentation, --no-oom, --baseline with --max-peak-increase)";
  } else if (t.max_peak_increase_pct && o->baseline.empty()) {
    *error = "--max-peak-increase needs --baseline BASE (the run to compare with)";
  } else if (!o->baseline.empty() && !t.max_peak_increase_pct) {
    *error = "--baseline needs --max-peak-increase PCT (how much higher the peak may be)";
  }
  return error->empty();
}

std::string device_name(int32_t device) {
  return device == kHostDevice ? "cpu" : std::to_string(device);
}

}  // namespace

int check_command(const std::vector<std::string>& args) {
  CheckOptions o;
  std::string error;
  if (!parse_check_args(args, &o, &error)) {
    fprintf(stderr, "memtap check: %s\n", error.c_str());
    return 2;
  }
  ReportOptions options;
  options.low_memory = o.low_memory;
  Report report, baseline;
  if (!analyse_recording(o.file, options, "memtap check", &report, &error) ||
      (!o.baseline.empty() &&
       !analyse_recording(o.baseline, options, "memtap check", &baseline, &error))) {
    fprintf(stderr, "memtap check: %s\n", error.c_str());
    return 2;
  }
  const Thresholds& t = o.thresholds;
  if (t.device && !has_checked_device(report, t)) {
    std::string has;
    for (const DeviceReport& d : report.devices) {
      const std::string name = device_name(d.device);
      if (has.find(" " + name + ",") == std::string::npos) has += " " + name + ",";
    }
    if (!has.empty()) has.pop_back();
    fprintf(stderr, "memtap check: %s: no device %s in the recording (its devices:%s)\n",
            o.file.c_str(), device_name(*t.device).c_str(), has.empty() ? " none" : has.c_str());
    return 2;
  }

  const CheckResult result = check_report(report, o.baseline.empty() ? nullptr : &baseline, t);
  // What the checks could not see, the baseline's too: warnings, or failures with --strict.
  std::vector<std::string> lacks;
  for (const std::string& w : result.warnings) lacks.push_back(w);
  for (const std::string& w : incomplete_recording(report)) lacks.push_back(w);
  if (!o.baseline.empty()) {
    for (const std::string& w : incomplete_recording(baseline)) {
      lacks.push_back("baseline " + o.baseline + ": " + w);
    }
  }
  for (const Violation& v : result.violations) {
    printf("memtap check: %s: %s: %s\n", o.file.c_str(), v.where.c_str(), v.text.c_str());
  }
  for (const std::string& w : lacks) {
    if (o.strict) {
      printf("memtap check: %s: %s (--strict)\n", o.file.c_str(), w.c_str());
    } else {
      fprintf(stderr, "memtap check: %s: warning: %s; --strict makes this a failure\n",
              o.file.c_str(), w.c_str());
    }
  }
  if (!result.violations.empty() || (o.strict && !lacks.empty())) return 1;
  const int n = threshold_count(t);
  printf("memtap check: %s: all %d check%s passed\n", o.file.c_str(), n, n == 1 ? "" : "s");
  return 0;
}

}  // namespace memtap
