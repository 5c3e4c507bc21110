// `memtap recover FILE.partial [-o OUT]`: finishes a recording whose monitor was killed.
#include <cstdio>
#include <string>
#include <vector>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/file_and_output.h"
#include "monitor/report/report_render.h"
#include "monitor/report/units.h"
#include "monitor/store/recover.h"

namespace memtap {

int recover_command(const std::vector<std::string>& args) {
  std::string in, out;
  CLI::App app;
  describe_command(&app, "recover", "memtap recover [-o OUT] FILE.partial",
                   "Finish a recording whose monitor was killed before it could, or that a full "
                   "disk stopped (what `report` and `monitor` call not finished): indexes and "
                   "tables added, renamed to FILE.");
  add_file_and_output(&app, &in, &out, "the unfinished recording",
                      "where the finished recording goes (default: FILE, without .partial)");
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (in.empty()) return usage_error("recover", "no file given");
  RecoverResult result;
  std::string error;
  if (!recover_recording(in, out, &result, &error)) {
    fprintf(stderr, "memtap recover: %s\n", error.c_str());
    return 1;
  }
  fprintf(stderr,
          "memtap recover: %s: %s events of %zu process%s, as committed before the recording "
          "was cut\n",
          result.out_path.c_str(), count_text(result.rows).c_str(), result.processes,
          result.processes == 1 ? "" : "es");
  if (!result.stopped.reason.empty()) {
    fprintf(stderr,
            "memtap recover: the recording had stopped %s (%s); the %s events after them are "
            "not in it\n",
            recording_stop_position(result.stopped).c_str(), result.stopped.reason.c_str(),
            count_text(result.stopped.rows_not_recorded).c_str());
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
