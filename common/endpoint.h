// Where a monitor listens and where agents connect.
//
// Secure by default: the default endpoint is an IPC socket inside a per-user directory of
// mode 0700; TCP is accepted only on loopback until remote endpoints get CURVE
// authentication.
#pragma once

#include <string>

namespace memtap {

// Creates (if needed) and verifies the per-user socket directory: $XDG_RUNTIME_DIR/memtap
// or /tmp/memtap-<uid>. Fails if it exists but is not ours or is open to others.
// Returns the directory, or "" with *error set.
std::string user_socket_dir(std::string* error);

// "ipc://<user_socket_dir>/<name>.sock", or "" with *error set.
std::string user_ipc_endpoint(const std::string& name, std::string* error);

// Checks an endpoint a monitor is asked to bind: ipc://, or tcp:// on loopback. Returns ""
// if acceptable, else one line naming the endpoint and what was expected.
std::string check_listen_endpoint(const std::string& endpoint);

// For an ipc:// endpoint, the filesystem path; "" otherwise.
std::string ipc_path(const std::string& endpoint);

}  // namespace memtap
