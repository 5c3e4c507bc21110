// Placeholder until `memtap check` lands (commands.h fixes its entry point).
#include <cstdio>

#include "monitor/cli/commands.h"

namespace memtap {

int check_command(const std::vector<std::string>&) {
  fprintf(stderr, "memtap check: not built yet\n");
  return 2;
}

}  // namespace memtap
