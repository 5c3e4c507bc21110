// `memtap record`: a standalone headless monitor. Records every process that connects
// until SIGINT or SIGTERM, then finishes the database cleanly.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/endpoint.h"
#include "common/socket_dir.h"
#include "monitor/cli/commands.h"
#include "monitor/live/live_recording.h"

namespace memtap {

int record_command(const std::vector<std::string>& args) {
  std::string endpoint, out;
  bool compact = false;
  ListenSecurity security;
  SessionLimits limits;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--listen" || a == "-l") && i + 1 < args.size()) {
      endpoint = args[++i];
    } else if (a == "-o" && i + 1 < args.size()) {
      out = args[++i];
    } else if (a == "--compact") {
      compact = true;
    } else if (a == "--keys" && i + 1 < args.size()) {
      security.keys_dir = args[++i];
    } else if (a == "--insecure") {
      security.insecure = true;
    } else if (a == "--max-processes" && i + 1 < args.size()) {
      std::string error;
      if (!parse_max_processes(args[++i], &limits.max_processes, &error)) {
        fprintf(stderr, "memtap record: %s\n", error.c_str());
        return 2;
      }
    } else {
      fprintf(stderr, "memtap record: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
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
