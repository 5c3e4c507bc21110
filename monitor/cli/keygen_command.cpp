// `memtap keygen DIR`: the key pairs for streaming from other machines over CURVE (the
// directory's layout: common/curve_keys.h).
#include <cstdio>

#include "common/curve_keys.h"
#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/transport/curve_keys.h"

namespace memtap {

int keygen_command(const std::vector<std::string>& args) {
  std::string dir;
  CLI::App app;
  describe_command(&app, "keygen", "memtap keygen DIR",
                   "Write CURVE key pairs for the monitor and its agents into DIR (made mode "
                   "0700): monitor.key, monitor.pub, agent.key, agent.pub; never replaces a key.");
  app.add_option("DIR", dir, "the directory for the keys")->type_name("");
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (dir.empty()) return usage_error("keygen", "expected one directory");
  std::string error;
  if (!write_key_directory(dir, &error)) {
    fprintf(stderr, "memtap keygen: %s\n", error.c_str());
    return 1;
  }
  printf(
      "memtap keygen: wrote %s/{%s,%s,%s,%s}\n"
      "  on the monitor's machine: memtap record --listen tcp://0.0.0.0:PORT --keys %s\n"
      "  on each training machine: copy %s, %s and %s into a private directory\n"
      "  (mode 0700) and set MEMTAP_KEYS to it, with MEMTAP_ENDPOINT=tcp://MONITOR:PORT\n",
      dir.c_str(), kMonitorSecretKeyFile, kMonitorPublicKeyFile, kAgentSecretKeyFile,
      kAgentPublicKeyFile, dir.c_str(), kAgentSecretKeyFile, kAgentPublicKeyFile,
      kMonitorPublicKeyFile);
  return 0;
}

}  // namespace memtap
