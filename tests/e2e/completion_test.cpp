// Bash completion (monitor/cli/completion/memtap.bash) offers what memtap takes: for every
// command, exactly the options its --help lists, and the values memtap accepts for --format
// and --view; `cmake --install` puts it where bash-completion looks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kScript = MEMTAP_COMPLETION_SCRIPT;

ProcessResult run_in(const TempDir& dir, std::vector<std::string> argv,
                     std::vector<std::string> env = {}) {
  ProcessSpec spec = spec_in(dir, std::move(argv));
  spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
  spec.env_unset.insert(spec.env_unset.end(), {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"});
  return run_process(spec, kProcessTimeout);
}

// What the completion offers for the command line `words`, the last being completed.
std::set<std::string> offered(const TempDir& dir, const std::vector<std::string>& words,
                              const std::string& script = kScript) {
  std::string array;
  for (const std::string& w : words) array += " '" + w + "'";
  const std::string bash = ". '" + script + "' && COMP_WORDS=(" + array +
                           ") && COMP_CWORD=" + std::to_string(words.size() - 1) +
                           " && { _memtap; printf '%s\\n' \"${COMPREPLY[@]}\"; }";
  const ProcessResult r = run_in(dir, {"/bin/bash", "--norc", "-c", bash});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  std::set<std::string> out;
  for (const std::string& line : split_lines(r.out)) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

// The options `memtap <command> --help` lists: the words starting with - at the start of
// its option lines ("  -l,--listen ENDPOINT  ...").
std::set<std::string> help_options(const TempDir& dir, const std::string& command) {
  const ProcessResult r = run_in(dir, {kMemtapBin, command, "--help"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << command << ": " << describe(r) << r.err;
  std::set<std::string> options;
  const std::regex line("^  (-[^ ]+)");
  for (const std::string& l : split_lines(r.out)) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    std::string names = m[1];
    size_t start = 0;
    while (start < names.size()) {
      size_t end = names.find(',', start);
      if (end == std::string::npos) end = names.size();
      options.insert(names.substr(start, end - start));
      start = end + 1;
    }
  }
  return options;
}

// The commands `memtap --help` lists.
std::vector<std::string> listed_commands(const TempDir& dir) {
  const ProcessResult r = run_in(dir, {kMemtapBin, "--help"});
  std::vector<std::string> commands;
  const std::regex line("^  ([a-z]+) ");
  for (const std::string& l : split_lines(r.out)) {
    std::smatch m;
    if (std::regex_search(l, m, line)) commands.push_back(m[1]);
  }
  return commands;
}

TEST(Completion, OffersEveryCommandAndExactlyTheOptionsEachOneLists) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::vector<std::string> commands = listed_commands(dir);
  ASSERT_GE(commands.size(), 11u);
  const std::set<std::string> first = offered(dir, {"memtap", ""});
  for (const std::string& command : commands) {
    SCOPED_TRACE("memtap " + command);
    EXPECT_TRUE(first.count(command)) << "the command itself";
    const std::set<std::string> options = help_options(dir, command);
    ASSERT_TRUE(options.count("--help"));
    EXPECT_EQ(offered(dir, {"memtap", command, "-"}), options);
  }
}

// The values memtap lists when it refuses one, as the completion offers them.
std::set<std::string> accepted_values(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kMemtapBin};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult r = run_in(dir, argv);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::smatch m;
  const std::string first = split_lines(r.err).empty() ? "" : split_lines(r.err)[0];
  EXPECT_TRUE(std::regex_search(first, m, std::regex("one of:? ([a-z, -]+)"))) << first;
  std::set<std::string> values;
  std::string list = m[1];
  if (!list.empty() && list.back() == ')') list.pop_back();
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(", ", start);
    if (end == std::string::npos) end = list.size();
    values.insert(list.substr(start, end - start));
    start = end + 2;
  }
  return values;
}

TEST(Completion, OffersTheValuesMemtapTakes) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(offered(dir, {"memtap", "export", "x.db", "--format", ""}),
            accepted_values(dir, {"export", "x.db", "--format", "bogus"}));
  const std::set<std::string> views = accepted_values(dir, {"monitor", "x.db", "--view", "bogus"});
  EXPECT_EQ(views.size(), 8u);
  EXPECT_EQ(offered(dir, {"memtap", "monitor", "x.db", "--view", ""}), views);
  EXPECT_EQ(offered(dir, {"memtap", "run", "--gui", "--view", ""}), views);

  // Files where files go; after run's program, the program's own words are not memtap's.
  std::ofstream(dir.file("trace.db")) << "";
  const std::string prefix = dir.file("tr");
  EXPECT_EQ(offered(dir, {"memtap", "report", prefix}),
            std::set<std::string>{dir.file("trace.db")});
  EXPECT_EQ(offered(dir, {"memtap", "check", "--baseline", prefix}),
            std::set<std::string>{dir.file("trace.db")});
  EXPECT_EQ(offered(dir, {"memtap", "run", "-o", "x.db", "--", "prog", "--"}),
            std::set<std::string>{});
  EXPECT_TRUE(offered(dir, {"memtap", "run", "--", "bas"}).count("bash")) << "programs on PATH";
}

TEST(Completion, InstallPutsItWhereBashCompletionLooks) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string prefix = dir.file("prefix");
  const ProcessResult inst = install_build(dir, prefix);
  ASSERT_TRUE(inst.exited && inst.exit_code == 0) << describe(inst) << inst.err;
  // bash-completion loads completions/<command> from each of $XDG_DATA_DIRS.
  const std::string installed = prefix + "/share/bash-completion/completions/memtap";
  ASSERT_TRUE(std::filesystem::exists(installed)) << "installed files:\n" << inst.out;
  const std::string loader = "/usr/share/bash-completion/bash_completion";
  const std::string registered =
      std::filesystem::exists(loader)
          ? ". " + loader + " && __load_completion memtap && complete -p memtap"
          : ". '" + installed + "' && complete -p memtap";
  const ProcessResult r = run_in(dir, {"/bin/bash", "--norc", "-c", registered},
                                 {"XDG_DATA_DIRS=" + prefix + "/share"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_EQ(r.out, "complete -F _memtap memtap\n");
  EXPECT_EQ(offered(dir, {"memtap", "rec"}, installed),
            (std::set<std::string>{"record", "recover"}));
}

}  // namespace
}  // namespace memtap::e2e
