// Per-user socket directory and endpoint checks (see endpoint.h).
#include "common/endpoint.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/socket_dir.h"

namespace memtap {

namespace {

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, strlen(prefix), prefix) == 0;
}

std::string secure_dir(const std::string& dir, std::string* error) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = "cannot create socket directory " + dir + ": " + strerror(errno);
    return "";
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    *error = "cannot stat socket directory " + dir + ": " + strerror(errno);
    return "";
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
    *error = "socket directory " + dir + " is not a directory owned by this user";
    return "";
  }
  if ((st.st_mode & 077) != 0) {
    *error = "socket directory " + dir + " is open to other users (expected mode 0700)";
    return "";
  }
  return dir;
}

}  // namespace

std::string user_socket_dir(std::string* error) {
  char dir[4096];
  if (!user_socket_dir_path(dir, sizeof dir)) {
    *error = "socket directory path is too long";
    return "";
  }
  return secure_dir(dir, error);
}

std::string user_ipc_endpoint(const std::string& name, std::string* error) {
  std::string dir = user_socket_dir(error);
  if (dir.empty()) return "";
  std::string path = dir + "/" + name + ".sock";
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    *error = "socket path " + path + " is longer than the system allows (" +
             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes)";
    return "";
  }
  return "ipc://" + path;
}

std::string ipc_path(const std::string& endpoint) {
  return starts_with(endpoint, "ipc://") ? endpoint.substr(6) : "";
}

std::string check_listen_endpoint(const std::string& endpoint) {
  if (starts_with(endpoint, "ipc://")) {
    std::string path = endpoint.substr(6);
    if (path.empty()) return "endpoint '" + endpoint + "': expected ipc://<path>";
    if (path.size() >= sizeof(sockaddr_un::sun_path))
      return "endpoint '" + endpoint + "': socket path longer than " +
             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return "";
  }
  if (starts_with(endpoint, "tcp://")) {
    std::string host = endpoint.substr(6);
    host = host.substr(0, host.rfind(':'));
    bool loopback = starts_with(host, "127.") || host == "localhost" || host == "[::1]";
    if (loopback) return "";
    // Anything else would accept an unauthenticated stream from the network.
    return "endpoint '" + endpoint +
           "' is not loopback: remote endpoints need CURVE authentication, which memtap does "
           "not have yet (use ipc://<path> or tcp://127.0.0.1:<port>)";
  }
  return "endpoint '" + endpoint + "': expected ipc://<path> or tcp://<host>:<port>";
}

}  // namespace memtap
