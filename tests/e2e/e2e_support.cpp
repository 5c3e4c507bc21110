// See e2e_support.h.
#include "tests/e2e/e2e_support.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace memtap::e2e {

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/memtap_e2e_XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  const char* keep = getenv("MEMTAP_E2E_KEEP");
  if (keep && std::string(keep) == "1") {
    fprintf(stderr, "memtap e2e: kept %s\n", path_.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

ProcessSpec spec_in(const TempDir& dir, std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env_unset = {"LD_PRELOAD",
                    "MEMTAP_ENDPOINT",
                    "MEMTAP_LOSSLESS",
                    "MEMTAP_BUFFER_MB",
                    "MEMTAP_FLUSH_TIMEOUT_MS",
                    "MEMTAP_DISABLE",
                    "MEMTAP_CONNECT_TIMEOUT_MS",
                    "MEMTAP_DRAIN_INTERVAL_US",
                    "MEMTAP_KEYS"};
  spec.env_set = {"XDG_RUNTIME_DIR=" + dir.path()};
  return spec;
}

ProcessResult install_build(const TempDir& dir, const std::string& prefix) {
  return run_process(
      spec_in(dir, {CMAKE_COMMAND, "--install", MEMTAP_BUILD_DIR, "--prefix", prefix}),
      kProcessTimeout);
}

ProcessSpec preloaded_spec(const TempDir& dir, std::vector<std::string> argv,
                           const std::string& endpoint) {
  ProcessSpec spec = spec_in(dir, std::move(argv));
  spec.env_set.push_back("LD_PRELOAD=" + kAgentLib);
  spec.env_set.push_back("MEMTAP_ENDPOINT=" + endpoint);
  return spec;
}

bool is_socket(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::unique_ptr<Process> start_recorder(const TempDir& dir, const std::string& endpoint,
                                        const std::string& db,
                                        const std::vector<std::string>& env) {
  std::string error;
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "record", "--listen", endpoint, "-o", db});
  spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
  std::unique_ptr<Process> recorder = Process::start(spec, &error);
  if (!recorder) {
    ADD_FAILURE() << "memtap record did not start: " << error;
    return nullptr;
  }
  const std::string path = endpoint.substr(endpoint.find("://") + 3);
  if (!poll_until([&] { return is_socket(path); }, std::chrono::seconds(20))) {
    ProcessResult r = recorder->wait(std::chrono::seconds(1));
    ADD_FAILURE() << "memtap record never created its socket " << path << " (" << describe(r)
                  << ")\nstderr:\n"
                  << r.err;
    return nullptr;
  }
  return recorder;
}

std::unique_ptr<Process> start_tcp_recorder(const TempDir& dir, const std::string& db,
                                            const std::vector<std::string>& args,
                                            std::string* endpoint, const std::string& listen,
                                            const std::vector<std::string>& env) {
  std::vector<std::string> argv = {kMemtapBin, "record", "--listen", listen, "-o", db};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessSpec spec = spec_in(dir, argv);
  spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
  std::string error;
  std::unique_ptr<Process> recorder = Process::start(spec, &error);
  if (!recorder) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  const bool listening = recorder->wait_for_output(
      [](const std::string&, const std::string& err) {
        return err.find("recording to") != std::string::npos;
      },
      kProcessTimeout);
  const std::string err = recorder->err();
  const size_t at = err.find("listening on tcp://");
  if (!listening || at == std::string::npos) {
    ADD_FAILURE() << "memtap record did not start listening:\n" << err;
    return nullptr;
  }
  const size_t begin = at + strlen("listening on ");
  *endpoint = err.substr(begin, err.find_first_of(" ,", begin) - begin);
  return recorder;
}

ProcessResult stop_recorder(Process& recorder) {
  recorder.signal(SIGTERM);
  return recorder.wait(kProcessTimeout);
}

std::unique_ptr<DbQuery> stop_recorder_and_open(Process& recorder, const std::string& db) {
  ProcessResult stopped = stop_recorder(recorder);
  EXPECT_TRUE(stopped.exited) << describe(stopped) << stopped.err;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  EXPECT_TRUE(q) << error;
  return q;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string count_said(uint64_t n) {
  std::string out = std::to_string(n);
  for (size_t at = out.size(); at > 3; at -= 3) out.insert(at - 3, ",");
  return out;
}

uint64_t count_read(const std::string& said) {
  std::string digits;
  for (char c : said)
    if (c != ',') digits += c;
  return std::stoull(digits);
}

std::string host_name() {
  struct utsname u;
  return uname(&u) == 0 ? u.nodename : "";
}

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? resolved : path;
}

std::string function_at(const std::string& object, uint64_t offset) {
  char address[32];
  snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(offset - 1));
  ProcessSpec spec;
  spec.argv = {"/usr/bin/addr2line", "-f", "-e", object, address};
  ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  return r.out.substr(0, r.out.find('\n'));
}

}  // namespace memtap::e2e
