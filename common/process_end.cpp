// How a traced process ended, in words (see process_end.h).
#include "common/process_end.h"

#include <string.h>

namespace memtap {

std::string process_end_text(ProcessEnd end, int32_t code) {
  switch (end) {
    case ProcessEnd::kExited:
      return "exit code " + std::to_string(code);
    case ProcessEnd::kSignalled: {
      const char* abbrev = sigabbrev_np(code);
      return abbrev ? std::string("signal SIG") + abbrev : "signal " + std::to_string(code);
    }
    case ProcessEnd::kExeced:
      return "exec";
    case ProcessEnd::kUnknown:
      break;
  }
  return {};
}

}  // namespace memtap
