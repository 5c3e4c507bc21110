// A key directory, as `memtap keygen DIR` writes it, and what monitor and agent accept in
// it. Header-only and allocation-free: the agent checks its keys in its constructor,
// before the application's heap may be touched.
//
//   monitor.key  the monitor's CURVE secret key (mode 0600; only the monitor's host needs it)
//   monitor.pub  its public key: agents check that they talk to this monitor
//   agent.key    the agents' secret key (mode 0600; copied to every training host)
//   agent.pub    their public key: the monitor accepts agents that hold the matching secret
//   authorized/  more agent public keys (*.pub), each accepted too: one monitor, several
//                teams or clusters with key pairs of their own
//
// Each file holds one key as Z85 text (40 characters, zmq_curve_keypair's), optionally
// followed by a newline.
#pragma once

#include <cstddef>
#include <cstring>

namespace memtap {

constexpr const char* kMonitorSecretKeyFile = "monitor.key";
constexpr const char* kMonitorPublicKeyFile = "monitor.pub";
constexpr const char* kAgentSecretKeyFile = "agent.key";
constexpr const char* kAgentPublicKeyFile = "agent.pub";
constexpr const char* kAuthorizedKeysDir = "authorized";

// A 32-byte CURVE key in Z85.
constexpr size_t kZ85KeyChars = 40;

// The length of the key in a key file's `len` bytes: 40 when they are 40 Z85 characters,
// optionally followed by one newline; 0 otherwise.
inline size_t z85_key_length(const char* text, size_t len) {
  static const char kAlphabet[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (len == kZ85KeyChars + 1 && text[kZ85KeyChars] == '\n') len = kZ85KeyChars;
  if (len != kZ85KeyChars) return 0;
  for (size_t i = 0; i < len; ++i) {
    if (text[i] == '\0' || strchr(kAlphabet, text[i]) == nullptr) return 0;
  }
  return kZ85KeyChars;
}

}  // namespace memtap
