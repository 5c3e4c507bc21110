// See run_options.h.
#include "monitor/cli/run_options.h"

#include "monitor/cli/command_line.h"
#include "monitor/live/live_support.h"

namespace memtap {

void declare_run_command(CLI::App* app, RunOptions* o) {
  describe_command(app, "run", "memtap run [options] [--] PROGRAM [ARGS...]",
                   "Run PROGRAM with the agent preloaded and record its memory events (and those "
                   "of every process it starts); exits with PROGRAM's exit code. Every argument "
                   "after PROGRAM is PROGRAM's own. `import memtap` works in Python programs it "
                   "runs.");
  app->add_option("-o", o->out, "the recording (default: ./memscope_dump_<YYYYmmddHHMMSS>.db)")
      ->type_name("OUT.db");
  app->add_flag("--compact", o->compact,
                "integer rows (~35 B an event, written twice as fast) with memscope_dump a view; "
                "memtap, SQL and pandas read it, MindStudio Insight does not (it wants a table: "
                "leave --compact out for it)");
  app->add_option("--connect", o->connect,
                  "stream into a monitor elsewhere (memtap record --listen), recording nothing "
                  "here")
      ->type_name("ENDPOINT");
  app->add_option("--keys", o->keys,
                  "the agent authenticates with the keys in DIR (MEMTAP_KEYS; memtap keygen), as "
                  "a monitor with --keys wants")
      ->type_name("DIR");
  add_checked_option(
      app, "--stacks", "python,c",
      [o](const std::string& v, std::string* error) {
        if (!valid_stacks(v)) {
          *error = "--stacks '" + v + "': expected python, c or python,c";
          return false;
        }
        o->stacks = v;
        return true;
      },
      "call stacks (Python, C or both) on allocations of at least --stack-min-size");
  add_checked_option(
      app, "--stack-min-size", "SIZE",
      [o](const std::string& v, std::string* error) {
        uint64_t bytes = 0;
        if (!parse_size(v, &bytes)) {
          *error = "--stack-min-size '" + v +
                   "' is not a size (bytes, or a number with KiB, MiB or GiB: 1MiB)";
          return false;
        }
        o->stack_min_size = std::to_string(bytes);
        return true;
      },
      "the smallest allocation that gets a stack (bytes, or with KiB/MiB/GiB: 1MiB)");
  app->add_flag("--torch-ops", o->torch_ops,
                "PyTorch operators as OP_LAUNCH events, naming the memory they allocate");
  app->add_flag_callback(
      "--no-torch-pool", [o] { o->torch_pool = false; },
      "leave PyTorch's CUDA caching allocator unwatched (by default its blocks are the PTA layer; "
      "the first run compiles a small tracker against the installed torch, cached in "
      "~/.cache/memtap)");
  add_checked_option(
      app, "--max-processes", "N",
      [o](const std::string& v, std::string* error) {
        return parse_max_processes(v, &o->limits.max_processes, error);
      },
      "how many processes may be recorded at once (4096), as for record");
}

std::string run_options_problem(const CLI::App& app, const RunOptions& o, bool gui) {
  if (o.command.empty()) return "no program given";
  if (app.count("--max-processes") != 0 && !o.connect.empty()) {
    return "--max-processes limits a monitor here; with --connect the one elsewhere has its own "
           "(memtap record --max-processes)";
  }
  if (gui && !o.connect.empty()) return "--gui records here; it cannot be combined with --connect";
  return "";
}

}  // namespace memtap
