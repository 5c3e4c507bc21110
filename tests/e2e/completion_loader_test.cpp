// Bash completion as a user's shell gets it: `cmake --install` into a prefix, then
// bash-completion's own loader finds memtap's file under $XDG_DATA_DIRS on demand (nothing
// sourced by hand), registers its function, and that function completes a command line.
// Skipped, saying why, where bash-completion is not installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kBashCompletion = "/usr/share/bash-completion/bash_completion";

TEST(CompletionLoader, BashCompletionLoadsTheInstalledFileAndCompletesACommand) {
  if (!std::filesystem::exists(kBashCompletion)) {
    GTEST_SKIP() << "bash-completion is not installed (no " << kBashCompletion
                 << "): its loader cannot be tried on this machine";
  }
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string prefix = dir.file("prefix");
  const ProcessResult inst = install_build(dir, prefix);
  ASSERT_TRUE(inst.exited && inst.exit_code == 0) << describe(inst) << inst.err;

  // The loader's entry point: __load_completion (bash-completion 2.x, kept as an alias in
  // 2.12), else _completion_loader (older). Then the function `complete -p` names completes
  // `memtap rep`.
  const std::string bash =
      ". " + kBashCompletion +
      " || exit 3\n"
      "if declare -F __load_completion >/dev/null; then __load_completion memtap\n"
      "elif declare -F _completion_loader >/dev/null; then _completion_loader memtap\n"
      "else echo 'bash-completion has no loader function' >&2; exit 4; fi\n"
      "spec=$(complete -p memtap) || exit 5\n"
      "echo \"$spec\"\n"
      "function=${spec#*-F }; function=${function%% *}\n"
      "COMP_WORDS=(memtap rep); COMP_CWORD=1; COMP_LINE='memtap rep'; COMP_POINT=10\n"
      "COMPREPLY=()\n"
      "\"$function\" memtap rep memtap\n"
      "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
  ProcessSpec spec = spec_in(dir, {"/bin/bash", "--norc", "-c", bash});
  // Only the prefix: the file must come from the install, not from a memtap installed on
  // this machine or in the user's own completions.
  spec.env_set.push_back("XDG_DATA_DIRS=" + prefix + "/share");
  spec.env_set.push_back("BASH_COMPLETION_USER_DIR=" + dir.file("no-user-completions"));
  const ProcessResult r = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  std::vector<std::string> lines = split_lines(r.out);
  ASSERT_FALSE(lines.empty()) << r.err;
  EXPECT_EQ(lines[0], "complete -F _memtap memtap");
  EXPECT_EQ(std::set<std::string>(lines.begin() + 1, lines.end()),
            (std::set<std::string>{"report", "replay"}));
}

}  // namespace
}  // namespace memtap::e2e
