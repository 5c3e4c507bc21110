// What every end-to-end test needs: where the built binaries are, a private temporary
// directory, and starting a `memtap record` that is ready for connections.
//
// The paths come from the build (compile definitions set in tests/e2e/CMakeLists.txt), so
// the tests run the binaries of the same build tree, whatever the working directory.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"
#include "tests/e2e/process_runner.h"

namespace memtap::e2e {

// The build's binaries.
inline const std::string kMemtapBin = MEMTAP_BIN;
inline const std::string kAgentLib = MEMTAP_AGENT;
inline const std::string kAllocPattern = MEMTAP_TEST_ALLOC_PATTERN;
inline const std::string kForeignZmq = MEMTAP_TEST_FOREIGN_ZMQ;
inline const std::string kExitCode = MEMTAP_TEST_EXIT_CODE;
inline const std::string kHandoff = MEMTAP_TEST_HANDOFF;

// How long any one process of the suite may take before the test kills it and fails.
// Far above what a healthy run needs (well under a second); only a hang gets near it.
inline constexpr std::chrono::seconds kProcessTimeout{60};

// A fresh directory under $TMPDIR (or /tmp), removed with its content afterwards (kept
// when MEMTAP_E2E_KEEP=1, for looking at the recordings of a failed run).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names of the entries directly inside, sorted.
  std::vector<std::string> entries() const;

 private:
  std::string path_;
};

// Environment for processes the tests start: XDG_RUNTIME_DIR inside the test's temporary
// directory, so that `memtap run`'s private socket lands there (and a leftover one can be
// seen), and no LD_PRELOAD or MEMTAP_* from the caller's environment.
ProcessSpec spec_in(const TempDir& dir, std::vector<std::string> argv);

// `cmake --install` of this build into `prefix` (the tests of what is installed); the
// caller checks that it exited 0.
ProcessResult install_build(const TempDir& dir, const std::string& prefix);

// spec_in plus the agent preloaded by hand, streaming to `endpoint`.
ProcessSpec preloaded_spec(const TempDir& dir, std::vector<std::string> argv,
                           const std::string& endpoint);

// Whether a Unix socket exists at `path`.
bool is_socket(const std::string& path);

// `memtap record --listen <endpoint> -o <db>` (with `env` set: "NAME=VALUE"), returned once
// its socket exists (ZeroMQ binds and listens before that file appears). Fails the test and
// returns nullptr if it does not start.
std::unique_ptr<Process> start_recorder(const TempDir& dir, const std::string& endpoint,
                                        const std::string& db,
                                        const std::vector<std::string>& env = {});

// `memtap record --listen LISTEN ARGS -o db` over TCP, once it listens; *endpoint is the
// endpoint it chose (tcp://127.0.0.1:PORT). Fails the test and returns nullptr otherwise.
std::unique_ptr<Process> start_tcp_recorder(const TempDir& dir, const std::string& db,
                                            const std::vector<std::string>& args,
                                            std::string* endpoint,
                                            const std::string& listen = "tcp://127.0.0.1:*",
                                            const std::vector<std::string>& env = {});

// Stops a recorder with SIGTERM and waits for it; the result says how it ended.
ProcessResult stop_recorder(Process& recorder);

// Stops a recorder (it must exit) and opens what it wrote to `db`; null, with a test
// failure, if it cannot.
std::unique_ptr<DbQuery> stop_recorder_and_open(Process& recorder, const std::string& db);

// Lines of `text`, without their newlines (a last line without one included).
std::vector<std::string> split_lines(const std::string& text);

// A count as memtap's messages and reports say it, its digits grouped by threes: "3,400".
std::string count_said(uint64_t n);
// What matches such a count in a std::regex, as a group; count_read() makes it a number.
inline constexpr const char* kCountRegex = "([0-9]{1,3}(?:,[0-9]{3})*)";
uint64_t count_read(const std::string& said);

// This machine's host name as the agent reports it (uname's nodename).
std::string host_name();

// `path` with every link resolved (as the agent reports a module's path); `path` if it fails.
std::string real_path(const std::string& path);

// The function addr2line finds in `object` for the return address at `offset` (address minus
// load bias): it looks up offset - 1, the call instruction, since the instruction after a
// call may be the next function's first.
std::string function_at(const std::string& object, uint64_t offset);

}  // namespace memtap::e2e
