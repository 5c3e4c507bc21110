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

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/live/program_run.h"
#include "monitor/report/report_check.h"
#include "monitor/report/units.h"

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

// Declares check's options on `app`, filling *o.
void add_check_options(CLI::App* app, CheckOptions* o, std::vector<std::string>* files) {
  Thresholds& t = o->thresholds;
  app->add_option("FILE", *files, "the recording (any file report reads)")->type_name("");
  const struct {
    const char* name;
    std::optional<int64_t>* target;
    const char* help;
  } sizes[] = {
      {"--max-peak", &t.max_peak_bytes, "the highest Allocated may go (512MiB, 2GiB, bytes)"},
      {"--max-leak-per-step", &t.max_leak_per_step_bytes,
       "the most live bytes an owner or stack may gain per step"},
      {"--max-growth", &t.max_growth_bytes, "live bytes at the end minus at the start"},
  };
  for (const auto& s : sizes) {
    const std::string name = s.name;
    add_checked_option(
        app, name, "SIZE",
        [name, target = s.target](const std::string& v, std::string* error) {
          uint64_t bytes = 0;
          if (!parse_size(v, &bytes)) {
            *error = name + " '" + v +
                     "' is not a size (bytes, or a number with KiB, MiB or GiB: 512MiB)";
            return false;
          }
          *target = int64_t(bytes);
          return true;
        },
        s.help)
        ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  }
  const struct {
    const char* name;
    std::optional<double>* target;
    const char* help;
  } pcts[] = {
      {"--max-fragmentation", &t.max_fragmentation_pct,
       "the unused share of Reserved when the gap was largest (10%)"},
      {"--max-peak-increase", &t.max_peak_increase_pct,
       "how far above BASE's peak the peak may go (devices paired by rank or start order)"},
  };
  for (const auto& p : pcts) {
    const std::string name = p.name;
    add_checked_option(
        app, name, "PCT",
        [name, target = p.target](const std::string& v, std::string* error) {
          double value = 0;
          if (!parse_pct(v, &value)) {
            *error = name + " '" + v + "' is not a percentage (a number, with or without %: 10%)";
            return false;
          }
          *target = value;
          return true;
        },
        p.help)
        ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  }
  app->add_flag("--no-oom", t.no_oom, "fail when the recording ran out of memory");
  app->add_option("--baseline", o->baseline, "the run to compare with, for --max-peak-increase")
      ->type_name("BASE")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  add_checked_option(
      app, "--device", "cpu|N",
      [&t](const std::string& v, std::string* error) {
        int32_t device = kNoDevice;
        if (!parse_device_option(v, &device)) {
          *error = "--device '" + v + "': " + kDeviceOptionExpected;
          return false;
        }
        t.device = device;
        return true;
      },
      "check only this device (by default each process's each device)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app->add_flag("--strict", o->strict, "a recording that lacks events fails rather than warns");
  app->add_flag("--low-memory", o->low_memory, "read the recording in batches, as report does");
}

// What the thresholds given say together; false with *error when they cannot be checked.
bool check_thresholds(const CheckOptions* o, std::string* error) {
  const Thresholds& t = o->thresholds;
  if (threshold_count(t) == 0) {
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

}  // namespace

int check_command(const std::vector<std::string>& args) {
  CheckOptions o;
  std::string error;
  std::vector<std::string> files;
  CLI::App app;
  describe_command(&app, "check", "memtap check [thresholds] [options] FILE",
                   "A guard for CI: exit 0 when the recording keeps every threshold, on each "
                   "process's each device (only --device's, if given), 1 with a line per "
                   "violation naming who holds the memory, 2 when it cannot check. A recording "
                   "that lacks events warns, and --strict fails on it.");
  add_check_options(&app, &o, &files);
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (files.size() > 1) {
    return usage_error("check",
                       "one recording at a time ('" + files[0] + "' and '" + files[1] + "')");
  }
  if (files.empty()) return usage_error("check", "no recording given");
  o.file = files[0];
  if (!check_thresholds(&o, &error)) return usage_error("check", error);
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
      const std::string name = device_option_text(d.device);
      if (has.find(" " + name + ",") == std::string::npos) has += " " + name + ",";
    }
    if (!has.empty()) has.pop_back();
    fprintf(stderr, "memtap check: %s: no device %s in the recording (its devices:%s)\n",
            o.file.c_str(), device_option_text(*t.device).c_str(),
            has.empty() ? " none" : has.c_str());
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
