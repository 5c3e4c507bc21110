// The monitor's side of a key directory (common/curve_keys.h): writing one (`memtap
// keygen`) and reading what a CURVE server needs from it.
#pragma once

#include <string>
#include <vector>

namespace memtap {

// One key file's key (40 Z85 characters). A secret key's file must not be readable by
// group or others. False with *error naming the file and what was expected.
bool read_key_file(const std::string& path, bool secret, std::string* key, std::string* error);

struct MonitorKeys {
  std::string secret;                    // monitor.key
  std::vector<std::string> agents;       // agent.pub, then authorized/*.pub in name order
  std::vector<std::string> agent_files;  // where each of `agents` came from
};

// What `--keys DIR` gives a monitor: its secret key and every agent public key it accepts
// (at least one). False with *error naming the file or directory at fault.
bool load_monitor_keys(const std::string& dir, MonitorKeys* out, std::string* error);

// Creates DIR (mode 0700, missing parents too) if it does not exist and writes two fresh key pairs
// into it, the monitor's and the agents'. Refuses, writing nothing, when any of the four files
// already exists (or is a symbolic link). False with *error naming the file and the reason.
bool write_key_directory(const std::string& dir, std::string* error);

}  // namespace memtap
