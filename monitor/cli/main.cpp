// memtap: the command-line front end. Subcommands dispatch to commands.h; each reads its own
// options (command_line.h) and explains them with `memtap CMD --help`.
#include <cstdio>
#include <string>
#include <vector>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/gui_launch.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;  // one line for `memtap --help`
  int (*run)(const std::vector<std::string>& args);
};

constexpr Subcommand kSubcommands[] = {
    {"run", "run a program with the agent preloaded and record its memory events",
     memtap::run_command},
    {"record", "a headless monitor: record every process that connects until Ctrl-C",
     memtap::record_command},
    {"report", "analyse a recording and print the report", memtap::report_command},
    {"replay", "feed a recording through the engine as if live, then print the report",
     memtap::replay_command},
    {"diff", "compare two runs: what differs, largest change first", memtap::diff_command},
    {"check", "a guard for CI: fail when a recording breaks a memory threshold",
     memtap::check_command},
    {"monitor", "the window: open a recording, or watch processes live", memtap::monitor_command},
    {"export", "write a recording in a format other tools read", memtap::export_command},
    {"import", "make a PyTorch snapshot or a CSV a recording", memtap::import_command},
    {"recover", "finish a recording whose monitor was killed or stopped by a full disk",
     memtap::recover_command},
    {"keygen", "write CURVE keys for a monitor and its agents on other machines",
     memtap::keygen_command},
};

void usage(FILE* out) {
  fprintf(out, "usage: memtap <command> [options]\n\ncommands:\n");
  for (const Subcommand& c : kSubcommands) fprintf(out, "  %-9s %s\n", c.name, c.summary);
  fprintf(out,
          "\n"
          "memtap <command> --help (or memtap help <command>) says what a command takes.\n"
          "memtap --version prints the version.\n");
}

const Subcommand* find_subcommand(const std::string& name) {
  for (const Subcommand& c : kSubcommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (const Subcommand* c = find_subcommand(cmd)) return c->run(args);
  if (cmd == "--help" || cmd == "-h" || (cmd == "help" && args.empty())) {
    usage(stdout);
    return 0;
  }
  if (cmd == "help") {
    if (const Subcommand* c = find_subcommand(args[0])) return c->run({"--help"});
    fprintf(stderr, "memtap: unknown command '%s'\nsee memtap --help\n", args[0].c_str());
    return 2;
  }
  if (cmd == "--version") {
    printf("memtap %s\n", MEMTAP_VERSION);
    return 0;
  }
  fprintf(stderr, "memtap: unknown command '%s'\nsee memtap --help\n", cmd.c_str());
  return 2;
}
