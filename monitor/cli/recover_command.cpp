// `memtap recover FILE.partial [-o OUT]`: finishes a recording whose monitor was killed.
#include <cstdio>
#include <string>
#include <vector>

#include "monitor/cli/commands.h"
#include "monitor/cli/file_and_output.h"
#include "monitor/report/report_render.h"
#include "monitor/store/recover.h"

namespace memtap {

int recover_command(const std::vector<std::string>& args) {
  std::string in, out, bad;
  if (!parse_file_and_output(args, &in, &out, &bad)) {
    fprintf(stderr,
            "memtap recover: unexpected argument '%s' (memtap recover FILE.partial [-o OUT])\n",
            bad.c_str());
    return 2;
  }
  if (in.empty()) {
    fprintf(stderr, "memtap recover: no file given (memtap recover FILE.partial [-o OUT])\n");
    return 2;
  }
  RecoverResult result;
  std::string error;
  if (!recover_recording(in, out, &result, &error)) {
    fprintf(stderr, "memtap recover: %s\n", error.c_str());
    return 1;
  }
  fprintf(stderr,
          "memtap recover: %s: %llu events of %zu process%s, as committed before the recording "
          "was cut\n",
          result.out_path.c_str(), (unsigned long long)result.rows, result.processes,
          result.processes == 1 ? "" : "es");
  if (!result.stopped.reason.empty()) {
    fprintf(stderr,
            "memtap recover: the recording had stopped %s (%s); the %llu events after them are "
            "not in it\n",
            recording_stop_position(result.stopped).c_str(), result.stopped.reason.c_str(),
            (unsigned long long)result.stopped.rows_not_recorded);
  }
  if (result.spool_left) {
    fprintf(stderr,
            "memtap recover: %s.spool holds rows that were still queued on disk; they are not in "
            "the recording (delete it once you have what you need)\n",
            in.c_str());
  }
  return 0;
}

}  // namespace memtap
