// `memtap record`: a standalone headless monitor. Records every process that connects
// until SIGINT or SIGTERM, then finishes the database cleanly.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/endpoint.h"
#include "common/socket_dir.h"
#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/live/live_recording.h"

namespace memtap {

int record_command(const std::vector<std::string>& args) {
  std::string endpoint, out;
  bool compact = false;
  ListenSecurity security;
  SessionLimits limits;
  CLI::App app;
  describe_command(&app, "record", "memtap record [options]",
                   "A headless monitor: record every process that connects until Ctrl-C or "
                   "SIGTERM.");
  app.add_option("-l,--listen", endpoint,
                 "where agents connect (default: the per-user IPC socket); tcp://HOST:* picks a "
                 "free port; tcp:// beyond loopback takes --keys or, knowingly, --insecure")
      ->type_name("ENDPOINT");
  app.add_option("-o", out, "the recording (default: ./memscope_dump_<YYYYmmddHHMMSS>.db)")
      ->type_name("OUT.db");
  app.add_flag("--compact", compact,
               "integer rows (~35 B an event, written twice as fast) with memscope_dump a view; "
               "memtap, SQL and pandas read it, MindStudio Insight does not");
  app.add_option("--keys", security.keys_dir,
                 "accept only agents with a key of DIR (memtap keygen), the stream encrypted "
                 "with CURVE; agents set MEMTAP_KEYS")
      ->type_name("DIR");
  app.add_flag("--insecure", security.insecure,
               "accept unauthenticated agents over tcp:// beyond loopback");
  add_checked_option(
      &app, "--max-processes", "N",
      [&limits](const std::string& v, std::string* error) {
        return parse_max_processes(v, &limits.max_processes, error);
      },
      "how many processes may be recorded at once (4096); further ones are refused and counted");
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  std::string error;
  if (endpoint.empty()) {
    endpoint = user_ipc_endpoint(kDefaultSocketName, &error);
    if (endpoint.empty()) {
      fprintf(stderr, "memtap record: %s\n", error.c_str());
      return 2;
    }
  }
  if (out.empty()) out = default_db_path();
  install_stop_signals();
  MemscopeWriterOptions store;
  if (!recording_options(compact, &store, &error)) {
    fprintf(stderr, "memtap record: %s\n", error.c_str());
    return 2;
  }
  auto rec = LiveRecording::start(endpoint, out, store, &error, {}, security, limits);
  if (!rec) {
    fprintf(stderr, "memtap record: %s\n", error.c_str());
    return 2;
  }
  fprintf(stderr, "memtap record: listening on %s%s, recording to %s (Ctrl-C to stop)\n",
          rec->endpoint().c_str(), security.keys_dir.empty() ? "" : " (CURVE)", out.c_str());
  auto last_check = std::chrono::steady_clock::now();
  const std::chrono::milliseconds progress_every(progress_interval_ms());
  auto next_progress = last_check + progress_every;
  while (!interrupted()) {
    rec->pump(100);
    auto now = std::chrono::steady_clock::now();
    if (progress_every.count() != 0 && now >= next_progress) {
      fprintf(stderr, "%s\n", rec->progress_line().c_str());
      next_progress += progress_every;
    }
    if (now - last_check >= std::chrono::milliseconds(100)) {
      rec->check_liveness(std::chrono::milliseconds(500));
      // The traced programs come first while any of them runs (on this machine or another:
      // from here they look the same); between runs the recording catches up at full speed.
      rec->set_program_running(rec->any_running());
      last_check = now;
    }
  }
  std::vector<std::pair<std::string, std::string>> meta = {{"memtap_version", MEMTAP_VERSION},
                                                           {"mode", "record"}};
  const bool written = rec->finish(meta, &error);
  // A stop (a full disk) was said when it happened, and the summary says where.
  if (!written && rec->writer().stopped().reason.empty()) {
    fprintf(stderr, "memtap record: %s\n", error.c_str());
  }
  rec->print_summary(stderr, written);
  return written ? 0 : 1;
}

}  // namespace memtap
