// Per-user socket directory and endpoint checks (see endpoint.h).
#include "common/endpoint.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/socket_dir.h"

namespace memtap {

namespace {

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, strlen(prefix), prefix) == 0;
}

std::string secure_dir(const std::string& dir, std::string* error) {
  // mkdir does not follow a symbolic link planted at `dir` (it fails with EEXIST), and
  // lstat looks at the link itself: such a link is refused, never followed. The parent is
  // /tmp (sticky: nobody else can rename our directory away once it is ours) or our own
  // runtime directory, so the checks below still hold when the socket is bound.
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = "cannot create socket directory " + dir + ": " + strerror(errno);
    return "";
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    *error = "cannot stat socket directory " + dir + ": " + strerror(errno);
    return "";
  }
  if (S_ISLNK(st.st_mode)) {
    *error = "socket directory " + dir +
             " is a symbolic link: refusing to follow it (remove it; memtap creates the "
             "directory itself)";
    return "";
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = "socket directory " + dir + " is not a directory";
    return "";
  }
  if (st.st_uid != getuid()) {
    *error = "socket directory " + dir + " belongs to another user (uid " +
             std::to_string(st.st_uid) + ")";
    return "";
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    *error = "socket directory " + dir + " is open to other users (mode " + mode +
             "; expected 0700: chmod 700 " + dir + ")";
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

bool is_loopback_endpoint(const std::string& endpoint) {
  if (!starts_with(endpoint, "tcp://")) return false;
  std::string host = endpoint.substr(6);
  host = host.substr(0, host.rfind(':'));
  return starts_with(host, "127.") || host == "localhost" || host == "[::1]";
}

std::string check_listen_endpoint(const std::string& endpoint, bool curve, bool insecure) {
  if (starts_with(endpoint, "ipc://")) {
    std::string path = endpoint.substr(6);
    if (path.empty()) return "endpoint '" + endpoint + "': expected ipc://<path>";
    if (path.size() >= sizeof(sockaddr_un::sun_path))
      return "endpoint '" + endpoint + "': socket path longer than " +
             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return "";
  }
  if (starts_with(endpoint, "tcp://")) {
    if (is_loopback_endpoint(endpoint) || curve || insecure) return "";
    // Anything else would accept an unauthenticated stream from the network.
    return "endpoint '" + endpoint +
           "' is not loopback: agents on other machines need authentication (--keys DIR, "
           "from memtap keygen DIR), or --insecure to listen without it knowingly";
  }
  return "endpoint '" + endpoint + "': expected ipc://<path> or tcp://<host>:<port>";
}

}  // namespace memtap
