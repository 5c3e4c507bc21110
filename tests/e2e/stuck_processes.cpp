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

// "S 1234 cpu 0.42 s" from a /proc/.../stat line: state, parent and CPU time so far (a
// stuck process sleeps with little CPU; a slow one runs with much).
std::string stat_summary(const std::string& stat) {
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return "(no stat)";
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f;
  for (std::string x; fields >> x;) f.push_back(x);
  // After the name: state(0) ppid(1) ... utime(11) stime(12), in clock ticks.
  if (f.size() < 13) return "(short stat)";
  const double ticks = double(sysconf(_SC_CLK_TCK));
  char cpu[64];
  snprintf(cpu, sizeof cpu, "%.2f s", (atof(f[11].c_str()) + atof(f[12].c_str())) / ticks);
  return "state " + f[0] + ", parent " + f[1] + ", cpu " + cpu;
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

std::vector<pid_t> with_children(std::vector<pid_t> pids) {
  // Each pass adds the children of what is listed; a few passes cover any real tree.
  for (int pass = 0; pass < 4; ++pass) {
    bool added = false;
    for (const std::string& pid : entries("/proc")) {
      if (!is_number(pid)) continue;
      const pid_t p = pid_t(atoi(pid.c_str()));
      if (std::find(pids.begin(), pids.end(), p) != pids.end()) continue;
      const std::string stat = read_line("/proc/" + pid + "/stat");
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      int ppid = 0;
      char state = 0;
      if (sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
      if (std::find(pids.begin(), pids.end(), pid_t(ppid)) == pids.end()) continue;
      pids.push_back(p);
      added = true;
    }
    if (!added) break;
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
            stat_summary(read_line(dir + "/stat")) + ": " + command_line(dir + "/cmdline") + "\n";
    for (const std::string& tid : entries(dir + "/task")) {
      const std::string task = dir + "/task/" + tid;
      text += "  thread " + tid + " (" + read_line(task + "/comm") + "), " +
              stat_summary(read_line(task + "/stat")) + ", in " + read_line(task + "/wchan") + "\n";
    }
    if (i < kWithStacks) text += gdb_stacks(pids[i]);
  }
  return text;
}

}  // namespace memtap::e2e
