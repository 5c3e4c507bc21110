// Helpers for the PyTorch snapshot tests: the sample files, and the independent reading of
// a snapshot by Python's own unpickler (torch_snapshot_expect.py).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace memtap::test {

inline const std::string kTorchSnapshotDir =
    std::string(MEMTAP_SHARED_DATA_DIR) + "/torch_snapshots/";
inline const std::string kPython = "/usr/bin/python3";
inline const std::string kExpectScript = MEMTAP_TORCH_EXPECT_SCRIPT;

// The tests that ask Python for the expected figures skip where it is missing.
#define MEMTAP_SKIP_WITHOUT_PYTHON()                                                    \
  do {                                                                                  \
    if (!std::filesystem::exists(::memtap::test::kPython))                              \
      GTEST_SKIP() << ::memtap::test::kPython << " is missing: no independent reading"; \
  } while (0)

// The sample snapshots (SOURCES.txt lists them), sorted; empty when the workspace has none.
inline std::vector<std::string> torch_snapshot_samples() {
  std::vector<std::string> files;
  if (!std::filesystem::is_directory(kTorchSnapshotDir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(kTorchSnapshotDir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".pickle" || ext == ".pkl") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs `command` and returns what it printed; fails the test if it did not exit 0.
inline std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return out;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << command << "\n" << out;
  return out;
}

// The figures Python reads off `path` ("key value" lines): absent keys read as 0.
inline std::map<std::string, long long> python_figures(const std::string& path) {
  std::map<std::string, long long> figures;
  std::istringstream lines(command_output(kPython + " " + kExpectScript + " '" + path + "'"));
  std::string key;
  long long value;
  while (lines >> key >> value) figures[key] = value;
  return figures;
}

// `path` pickled again by Python with `protocol` into `out`.
inline void redump(const std::string& path, int protocol, const std::string& out) {
  command_output(kPython + " " + kExpectScript + " --redump " + std::to_string(protocol) + " '" +
                 path + "' '" + out + "'");
}

}  // namespace memtap::test
