// Where a monitor listens and where agents connect.
//
// Secure by default: the default endpoint is an IPC socket inside a per-user directory of
// mode 0700, which is never followed through a symbolic link nor used when others can
// reach into it. TCP on loopback is open to the users of this machine, as today. TCP
// beyond loopback takes a key directory (`--keys DIR`: ZeroMQ CURVE authenticates the
// agents and encrypts the stream), or `--insecure` from a user who means it.
#pragma once

#include <string>

namespace memtap {

// Creates (if needed) and verifies the per-user socket directory: $XDG_RUNTIME_DIR/memtap
// or /tmp/memtap-<uid>. Fails if it exists but is not ours or is open to others.
// Returns the directory, or "" with *error set.
std::string user_socket_dir(std::string* error);

// "ipc://<user_socket_dir>/<name>.sock", or "" with *error set.
std::string user_ipc_endpoint(const std::string& name, std::string* error);

// Checks an endpoint a monitor is asked to bind: ipc://, tcp:// on loopback, or tcp://
// anywhere with `curve` (--keys) or `insecure` (--insecure). Returns "" if acceptable, else
// one line naming the endpoint and what was expected.
std::string check_listen_endpoint(const std::string& endpoint, bool curve = false,
                                  bool insecure = false);

// A tcp:// endpoint on 127.x.x.x, localhost or [::1].
bool is_loopback_endpoint(const std::string& endpoint);

// For an ipc:// endpoint, the filesystem path; "" otherwise.
std::string ipc_path(const std::string& endpoint);

}  // namespace memtap
