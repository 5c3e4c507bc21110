// `memtap keygen DIR`: the key pairs for streaming from other machines over CURVE (the
// directory's layout: common/curve_keys.h).
#include <cstdio>

#include "common/curve_keys.h"
#include "monitor/cli/commands.h"
#include "monitor/transport/curve_keys.h"

namespace memtap {

int keygen_command(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    fprintf(stderr, "memtap keygen: expected one directory (memtap keygen DIR)\n");
    return 2;
  }
  const std::string& dir = args[0];
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
