// Placeholder until `memtap diff` lands (commands.h fixes its entry point).
#include <cstdio>

#include "monitor/cli/commands.h"

namespace memtap {

int diff_command(const std::vector<std::string>&) {
  fprintf(stderr, "memtap diff: not built yet\n");
  return 2;
}

}  // namespace memtap
