// See process_runner.h.
#include "tests/e2e/process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "tests/e2e/stuck_processes.h"

extern char** environ;

namespace memtap::e2e {

std::vector<std::string> child_environment(const ProcessSpec& spec) {
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  auto listed = [&](const std::string& name) {
    for (const std::string& n : spec.env_unset)
      if (n == name) return true;
    for (const std::string& kv : spec.env_set)
      if (name_of(kv) == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!listed(name_of(kv))) env.push_back(kv);
  }
  for (const std::string& kv : spec.env_set) env.push_back(kv);
  return env;
}

namespace {

// Writes `text` to the file at `path`; 0 or the errno. Async-signal-safe.
int write_file(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = write(fd, text, strlen(text));
  const int e = n == ssize_t(strlen(text)) ? 0 : (n < 0 ? errno : EIO);
  close(fd);
  return e;
}

// In the child, before exec: a UTS namespace named `hostname`, inside a user namespace
// whose ids are the test's own. 0 or the errno. Async-signal-safe.
int become_host(const char* hostname, const char* uid_map, const char* gid_map) {
  if (unshare(CLONE_NEWUSER | CLONE_NEWUTS) != 0) return errno;
  if (int e = write_file("/proc/self/setgroups", "deny"); e != 0) return e;
  if (int e = write_file("/proc/self/uid_map", uid_map); e != 0) return e;
  if (int e = write_file("/proc/self/gid_map", gid_map); e != 0) return e;
  return sethostname(hostname, strlen(hostname)) == 0 ? 0 : errno;
}

void close_fd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// Appends what is readable on *fd to *text; closes *fd at end of file.
void read_some(int* fd, std::string* text) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) {
      text->append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    close_fd(fd);  // EOF or a real error: nothing more will come
    return;
  }
}

}  // namespace

std::string describe(const ProcessResult& r) {
  if (r.timed_out) return "timed out (killed); what was running then:\n" + r.at_timeout;
  if (r.exited) return "exit " + std::to_string(r.exit_code);
  if (r.term_signal) return std::string("signal ") + strsignal(r.term_signal);
  return "did not run";
}

std::unique_ptr<Process> Process::start(const ProcessSpec& spec, std::string* error) {
  if (spec.argv.empty()) {
    *error = "no program given";
    return nullptr;
  }
  // Everything the child needs is built before fork: it only calls async-signal-safe
  // functions between fork and exec.
  std::vector<std::string> env = child_environment(spec);
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char uid_map[64], gid_map[64];
  snprintf(uid_map, sizeof uid_map, "%u %u 1", unsigned(getuid()), unsigned(getuid()));
  snprintf(gid_map, sizeof gid_map, "%u %u 1", unsigned(getgid()), unsigned(getgid()));

  int in[2] = {-1, -1}, out[2], err[2], exec_err[2];
  if ((spec.pipe_stdin && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0 || pipe2(exec_err, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    return nullptr;
  }
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = spec.pipe_stdin ? -1 : open("/dev/null", O_RDONLY);
    dup2(spec.pipe_stdin ? in[0] : null_fd, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    // The test runner may have blocked or ignored signals; the program gets the defaults.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD}) ::signal(sig, SIG_DFL);
    int e = 0;
    if (cwd && chdir(cwd) != 0) {
      e = errno;
    } else if (!spec.hostname.empty()) {
      e = become_host(spec.hostname.c_str(), uid_map, gid_map);
    }
    if (e == 0) {
      execve(argv[0], argv.data(), envp.data());
      e = errno;
    }
    (void)!write(exec_err[1], &e, sizeof e);
    _exit(127);
  }
  for (int fd : {in[0], out[1], err[1], exec_err[1]})
    if (fd >= 0) close(fd);
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(errno);
    for (int fd : {in[1], out[0], err[0], exec_err[0]})
      if (fd >= 0) close(fd);
    return nullptr;
  }
  std::unique_ptr<Process> p(new Process);
  p->pid_ = pid;
  p->stdin_fd_ = in[1];
  p->out_fd_ = out[0];
  p->err_fd_ = err[0];
  fcntl(p->out_fd_, F_SETFL, O_NONBLOCK);
  fcntl(p->err_fd_, F_SETFL, O_NONBLOCK);
  int e = 0;
  ssize_t n;
  do n = read(exec_err[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  close(exec_err[0]);
  if (n == sizeof e) {
    *error = "cannot run '" + spec.argv[0] + "': " + strerror(e);
    return nullptr;  // the destructor reaps the child
  }
  p->pidfd_ = int(syscall(SYS_pidfd_open, pid, 0));
  return p;
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    reap(true);
  }
  close_fd(&stdin_fd_);
  close_fd(&out_fd_);
  close_fd(&err_fd_);
  close_fd(&pidfd_);
}

bool Process::signal(int sig) {
  return !reaped_ && kill(pid_, sig) == 0;
}

bool Process::write_stdin(const std::string& text) {
  size_t done = 0;
  while (stdin_fd_ >= 0 && done < text.size()) {
    ssize_t n = write(stdin_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return done == text.size();
}

void Process::close_stdin() {
  close_fd(&stdin_fd_);
}

void Process::reap(bool block) {
  if (reaped_) return;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid_) {
    reaped_ = true;
    status_ = status;
  }
}

bool Process::pump(std::chrono::steady_clock::time_point deadline) {
  pollfd fds[3];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  // Without a pidfd (old kernel) the exit is noticed by polling waitpid every few ms.
  bool have_pidfd = pidfd_ >= 0 && !reaped_;
  if (have_pidfd) fds[n++] = {pidfd_, POLLIN, 0};
  auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
  int timeout_ms = int(std::min<long long>(left, have_pidfd || reaped_ ? 1000 : 5));
  if (n > 0) {
    int r = poll(fds, nfds_t(n), timeout_ms);
    if (r < 0 && errno != EINTR) return false;
  }
  if (out_fd_ >= 0) read_some(&out_fd_, &out_);
  if (err_fd_ >= 0) read_some(&err_fd_, &err_);
  reap(false);
  return true;
}

bool Process::wait_for_output(
    const std::function<bool(const std::string&, const std::string&)>& done,
    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done(out_, err_)) return true;
    if (reaped_ && out_fd_ < 0 && err_fd_ < 0) return false;  // nothing more can come
    if (!pump(deadline)) return done(out_, err_);
  }
}

ProcessResult Process::wait(std::chrono::milliseconds timeout) {
  ProcessResult r;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!(reaped_ && out_fd_ < 0 && err_fd_ < 0)) {
    if (!pump(deadline)) {
      r.timed_out = true;
      std::vector<pid_t> pids;
      for (int fd : {out_fd_, err_fd_})
        if (fd >= 0 && pids.empty()) pids = pipe_holders(fd);
      if (!reaped_ && std::find(pids.begin(), pids.end(), pid_) == pids.end())
        pids.insert(pids.begin(), pid_);
      pids = with_children(pids);
      r.at_timeout = describe_stuck(pids);
      for (pid_t p : pids) kill(p, SIGKILL);
      reap(true);
      break;
    }
  }
  close_fd(&stdin_fd_);
  r.out = out_;
  r.err = err_;
  if (!r.timed_out && WIFEXITED(status_)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status_);
  } else if (WIFSIGNALED(status_)) {
    r.term_signal = WTERMSIG(status_);
  }
  return r;
}

ProcessResult run_process(const ProcessSpec& spec, std::chrono::milliseconds timeout) {
  std::string error;
  std::unique_ptr<Process> p = Process::start(spec, &error);
  if (!p) {
    ProcessResult r;
    r.err = error;
    return r;
  }
  return p->wait(timeout);
}

bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int64_t realtime_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace memtap::e2e
