// See stuck_processes.h.
#include "tests/e2e/stuck_processes.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace memtap::e2e {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

// /proc/PID/cmdline's arguments, NUL-separated there, with spaces.
std::string command_line(const std::string& path) {
  std::string text = read_line(path);
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

bool is_number(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// The fields of a /proc/.../stat line these descriptions use; state 0 when it cannot be
// read (the process has gone).
struct Stat {
  char state = 0;
  pid_t ppid = 0;
  double cpu_s = 0;  // user and system time so far
};

Stat read_stat(const std::string& path) {
  const std::string line = read_line(path);
  Stat st;
  // After the name, which may hold spaces and ')': state(0) ppid(1) ... utime(11) stime(12),
  // in clock ticks.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return st;
  std::istringstream fields(line.substr(close + 1));
  std::vector<std::string> f;
  for (std::string x; fields >> x;) f.push_back(x);
  if (f.size() < 13 || f[0].size() != 1) return st;
  st.state = f[0][0];
  st.ppid = pid_t(atoi(f[1].c_str()));
  st.cpu_s = (atof(f[11].c_str()) + atof(f[12].c_str())) / double(sysconf(_SC_CLK_TCK));
  return st;
}

// "state S, parent 1234, cpu 0.42 s": a stuck process sleeps with little CPU; a slow one
// runs with much.
std::string stat_summary(const std::string& path) {
  const Stat st = read_stat(path);
  if (st.state == 0) return "(no stat)";
  char text[96];
  snprintf(text, sizeof text, "state %c, parent %d, cpu %.2f s", st.state, int(st.ppid), st.cpu_s);
  return text;
}

// gdb's stacks of every thread, where gdb is installed; bounded in time and length.
std::string gdb_stacks(pid_t pid) {
  if (access("/usr/bin/gdb", X_OK) != 0) return "";
  const std::string command = "timeout -s KILL 30 /usr/bin/gdb -batch -nx -p " +
                              std::to_string(pid) + " -ex 'thread apply all bt 24' 2>&1";
  std::string text;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    pclose(p);
  }
  constexpr size_t kMax = 12000;
  if (text.size() > kMax) text = text.substr(0, kMax) + "\n... (cut)\n";
  return text;
}

}  // namespace

char process_state(pid_t pid) {
  return read_stat("/proc/" + std::to_string(pid) + "/stat").state;
}

std::vector<pid_t> with_children(std::vector<pid_t> pids) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, its parent), read once
  for (const std::string& pid : entries("/proc")) {
    if (!is_number(pid)) continue;
    const Stat st = read_stat("/proc/" + pid + "/stat");
    if (st.state != 0) parent_of.emplace_back(pid_t(atoi(pid.c_str())), st.ppid);
  }
  auto listed = [&](pid_t p) { return std::find(pids.begin(), pids.end(), p) != pids.end(); };
  // Each pid listed brings its children in after it, and they theirs.
  for (size_t i = 0; i < pids.size(); ++i) {
    for (const auto& [pid, ppid] : parent_of)
      if (ppid == pids[i] && !listed(pid)) pids.push_back(pid);
  }
  return pids;
}

std::vector<pid_t> pipe_holders(int fd) {
  struct stat st;
  std::vector<pid_t> pids;
  if (fstat(fd, &st) != 0) return pids;
  const std::string target = "pipe:[" + std::to_string(st.st_ino) + "]";
  const std::string self = std::to_string(getpid());
  for (const std::string& pid : entries("/proc")) {
    if (!is_number(pid) || pid == self) continue;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    for (const std::string& n : entries(fd_dir)) {
      char link[256];
      const ssize_t len = readlink((fd_dir + "/" + n).c_str(), link, sizeof link - 1);
      if (len > 0 && target.compare(0, std::string::npos, link, size_t(len)) == 0) {
        pids.push_back(pid_t(atoi(pid.c_str())));
        break;
      }
    }
  }
  return pids;
}

std::string describe_stuck(const std::vector<pid_t>& pids) {
  std::string text;
  // gdb takes seconds per process; the first few (the oldest, by pid) are enough to tell.
  constexpr size_t kWithStacks = 4;
  for (size_t i = 0; i < pids.size(); ++i) {
    const std::string dir = "/proc/" + std::to_string(pids[i]);
    text += "process " + std::to_string(pids[i]) + " (" + read_line(dir + "/comm") + "), " +
            stat_summary(dir + "/stat") + ": " + command_line(dir + "/cmdline") + "\n";
    for (const std::string& tid : entries(dir + "/task")) {
      const std::string task = dir + "/task/" + tid;
      text += "  thread " + tid + " (" + read_line(task + "/comm") + "), " +
              stat_summary(task + "/stat") + ", in " + read_line(task + "/wchan") + "\n";
    }
    if (i < kWithStacks) text += gdb_stacks(pids[i]);
  }
  return text;
}

}  // namespace memtap::e2e
