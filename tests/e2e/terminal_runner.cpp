// See terminal_runner.h.
#include "tests/e2e/terminal_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memtap::e2e {

ProcessResult run_on_terminal(const ProcessSpec& spec, std::chrono::milliseconds timeout) {
  ProcessResult result;
  int master = -1, slave = -1;
  winsize size{};
  size.ws_col = 200;
  size.ws_row = 50;
  int out_pipe[2] = {-1, -1};
  if (openpty(&master, &slave, nullptr, nullptr, &size) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("openpty/pipe: ") + strerror(errno);
    return result;
  }
  termios raw{};
  tcgetattr(slave, &raw);
  cfmakeraw(&raw);  // no "\n" -> "\r\n": the test sees exactly what memtap wrote
  tcsetattr(slave, TCSANOW, &raw);
  std::vector<std::string> env = child_environment(spec);
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (std::string& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, STDIN_FILENO);
    dup2(slave, STDERR_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(slave);
  close(out_pipe[1]);
  if (pid < 0) {
    close(master);
    close(out_pipe[0]);
    result.err = std::string("fork: ") + strerror(errno);
    return result;
  }
  // Until both ends report their end: the terminal's master reads EIO once the child (and
  // anything it started) has closed the terminal.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{master, POLLIN, 0}, {out_pipe[0], POLLIN, 0}};
  std::string* into[2] = {&result.err, &result.out};
  int open_ends = 2;
  while (open_ends > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, int(left.count())) < 0 && errno != EINTR) break;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        into[k]->append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        fds[k].fd = -1;
        --open_ends;
      }
    }
  }
  close(master);
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exited = WIFEXITED(status);
  result.exit_code = result.exited ? WEXITSTATUS(status) : -1;
  result.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

}  // namespace memtap::e2e
