// See curve_keys.h.
#include "monitor/transport/curve_keys.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/curve_keys.h"

namespace memtap {

namespace {

std::string mode_text(mode_t mode) {
  char text[8];
  snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
  return text;
}

// Creates `path` with `content`; never replaces a file, never follows a link.
bool write_new_file(const std::string& path, const std::string& content, mode_t mode,
                    std::string* error) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + strerror(errno) +
             (errno == EEXIST ? " (memtap keygen never replaces a key)" : "");
    return false;
  }
  bool ok = write(fd, content.data(), content.size()) == ssize_t(content.size());
  const int write_errno = errno;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    *error = "cannot write " + path + ": " + strerror(write_errno);
    unlink(path.c_str());
  }
  return ok;
}

}  // namespace

bool read_key_file(const std::string& path, bool secret, std::string* key, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot read key file " + path + ": " + strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *error = "key file " + path + " is not a regular file";
    return false;
  }
  if (secret && (st.st_mode & 077) != 0) {
    close(fd);
    *error = "secret key file " + path + " is open to other users (mode " + mode_text(st.st_mode) +
             "; expected 0600: chmod 600 " + path + ")";
    return false;
  }
  char text[128];
  const ssize_t n = read(fd, text, sizeof text);
  close(fd);
  if (n < 0 || z85_key_length(text, size_t(n)) == 0) {
    *error = "key file " + path +
             ": expected one CURVE key, 40 Z85 characters as memtap keygen writes them";
    return false;
  }
  key->assign(text, kZ85KeyChars);
  return true;
}

bool load_monitor_keys(const std::string& dir, MonitorKeys* out, std::string* error) {
  *out = MonitorKeys{};
  if (!read_key_file(dir + "/" + kMonitorSecretKeyFile, true, &out->secret, error)) return false;
  std::vector<std::string> files;
  const std::string agent_pub = dir + "/" + kAgentPublicKeyFile;
  if (access(agent_pub.c_str(), F_OK) == 0 || errno != ENOENT) files.push_back(agent_pub);
  const std::string authorized = dir + "/" + kAuthorizedKeysDir;
  if (DIR* d = opendir(authorized.c_str())) {
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".pub") == 0) names.push_back(name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) files.push_back(authorized + "/" + name);
  } else if (errno != ENOENT) {
    *error = "cannot read " + authorized + ": " + strerror(errno);
    return false;
  }
  for (const std::string& file : files) {
    std::string key;
    if (!read_key_file(file, false, &key, error)) return false;
    out->agents.push_back(key);
    out->agent_files.push_back(file);
  }
  if (out->agents.empty()) {
    *error = "no agent key in " + dir + ": expected " + agent_pub + " or " + authorized +
             "/*.pub (memtap keygen writes agent.pub)";
    return false;
  }
  return true;
}

bool write_key_directory(const std::string& dir, std::string* error) {
  if (!zmq_has("curve")) {
    *error = "this ZeroMQ library was built without CURVE (libsodium): no keys can be made";
    return false;
  }
  // Missing parents too (mkdir -p), each private: ~/.memtap/keys works on a fresh account.
  for (size_t slash = dir.find('/', 1); slash != std::string::npos;
       slash = dir.find('/', slash + 1)) {
    mkdir(dir.substr(0, slash).c_str(), 0700);
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = "cannot create " + dir + ": " + strerror(errno);
    return false;
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir + " is not a directory";
    return false;
  }
  // Checked all at once first, so that a refusal leaves no half-written directory.
  const char* files[] = {kMonitorSecretKeyFile, kMonitorPublicKeyFile, kAgentSecretKeyFile,
                         kAgentPublicKeyFile};
  for (const char* name : files) {
    const std::string path = dir + "/" + name;
    if (lstat(path.c_str(), &st) == 0) {
      *error = path +
               " already exists: memtap keygen never replaces a key (remove it, or "
               "choose another directory)";
      return false;
    }
  }
  const std::pair<const char*, const char*> pairs[] = {
      {kMonitorSecretKeyFile, kMonitorPublicKeyFile}, {kAgentSecretKeyFile, kAgentPublicKeyFile}};
  for (const auto& [secret_file, public_file] : pairs) {
    char public_key[kZ85KeyChars + 1], secret_key[kZ85KeyChars + 1];
    if (zmq_curve_keypair(public_key, secret_key) != 0) {
      *error = std::string("cannot make a CURVE key pair: ") + zmq_strerror(errno);
      return false;
    }
    if (!write_new_file(dir + "/" + secret_file, std::string(secret_key) + "\n", 0600, error) ||
        !write_new_file(dir + "/" + public_file, std::string(public_key) + "\n", 0644, error)) {
      return false;
    }
  }
  return true;
}

}  // namespace memtap
