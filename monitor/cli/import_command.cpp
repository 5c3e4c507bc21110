// Placeholder until `memtap import` lands (commands.h fixes its entry point).
#include <cstdio>

#include "monitor/cli/commands.h"

namespace memtap {

int import_command(const std::vector<std::string>&) {
  fprintf(stderr, "memtap import: not built yet\n");
  return 2;
}

}  // namespace memtap
