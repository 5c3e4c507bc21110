// FILE [-o OUT] (see file_and_output.h).
#include "monitor/cli/file_and_output.h"

namespace memtap {

bool parse_file_and_output(const std::vector<std::string>& args, std::string* in, std::string* out,
                           std::string* bad) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" && i + 1 < args.size()) {
      *out = args[++i];
    } else if (!a.empty() && a[0] != '-' && in->empty()) {
      *in = a;
    } else {
      *bad = a;
      return false;
    }
  }
  return true;
}

}  // namespace memtap
