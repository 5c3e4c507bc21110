/* memtap_test_process_end: allocates, then ends its image as MODE says, well within one
 * drain interval (the tests set MEMTAP_DRAIN_INTERVAL_US=300000), so that only the flush that
 * way of ending makes can get the blocks to the recording.
 *
 * Usage: memtap_test_process_end MODE N
 *   Starts a thread that mallocs and frees 64-byte blocks while the rest goes on (the flush
 *   runs beside it), then allocates N blocks, block i of kFirstSize + 2*i bytes, kept; then:
 *   exec       execl()s itself in mode `image`
 *   exec-lp    the same with execlp(), exec-le with execle() and the environment it has
 *   exec-search  stops the thread, then searches as Python's subprocess does: execve() in
 *              kSearchMisses directories that do not exist, one after the other, then in the
 *              program's own (mode `image`)
 *   exec-fail-loop  (no first set) stops the thread, then kFailRounds times: allocates its
 *              share of N blocks of kAfterSize + 2*i bytes, frees them, and execve()s a path
 *              that does not exist; returns 0
 *   fork-close-loop  fork()s; the child says "child=<pid>", allocates N blocks of
 *              kAfterSize + 2*i bytes, closes every descriptor from 3 up one by one with
 *              close(), as a daemon or an older Python does, and execv()s itself in mode
 *              `image`; the parent returns the child's exit code
 *   dup-over   writes a file that reads as a /proc/self/statm of one resident page, dup2()s
 *              it onto every descriptor from 3 up that is open and not its own (memtap's,
 *              as a shell's `exec 5>log` takes a number), says "replaced=<count>", allocates
 *              N blocks of kAfterSize + 2*i bytes and returns 0
 *   fork-term  (no first set) stops the thread, then kForkTerms times: fork()s and sends
 *              the child SIGTERM at once, as a pool terminating a worker it has just
 *              started; says "child=<pid>" for each, and returns 0 when each ended by that
 *              signal (9 otherwise). A child that runs its code allocates N blocks of
 *              kAfterSize + 2*i bytes and waits for the signal
 *   exit-term  (no first set) stops the thread, fork()s; the child says "child=<pid>",
 *              blocks SIGTERM but in a second thread that waits for it, mallocs and frees
 *              kExitChurn small blocks (the flush at its exit has work to do), allocates N
 *              blocks of kAfterSize + 2*i bytes and calls _exit(0); its second thread tells
 *              the parent through a pipe once _exit's flush is under way (memtap's sender
 *              thread gone), and the parent sends it SIGTERM as soon as it hears, as a pool
 *              terminating a worker that is leaving anyway, and returns 0 when the child
 *              ended by either (9 otherwise; 10, with a line on stderr, when the child ended
 *              without telling: the test could not place the signal, true of the next modes too)
 *   exec-term  as exit-term, but with one thread, which execl()s itself as `image` where
 *              exit-term's calls _exit(0): the parent's SIGTERM comes to it while the exec's
 *              flush runs; returns
 *              0 when the child ended by exit code 0 (the image ran) or SIGTERM (9 otherwise)
 *   exec-term-other  as exec-term, but the SIGTERM goes to a second thread, and comes once
 *              the exec's flush is under way, as in exit-term; returns 0 only when the child
 *              ended by SIGTERM (9 otherwise), as it would without memtap: before the exec the
 *              signal ends the process, and after it the image, which takes SIGTERM again,
 *              dies of it
 *   term-exit  the other order: as exit-term, but the child tells the parent itself once it
 *              has allocated, and its second thread takes the SIGTERM and begins the final
 *              flush for it; the child calls _exit(0) once that thread waits on a futex (in
 *              its handler, for the flush); returns as exit-term
 *   exec-fail  execl()s a path that does not exist; then allocates N blocks more, block i of
 *              kAfterSize + 2*i bytes, and returns 0 (3 if exec did not fail with ENOENT)
 *   kill       execl()s a path that does not exist (its flush has everything so far written
 *              to the monitor's socket when it returns), then raise(SIGKILL)
 *   image      (what `exec` becomes) allocates N blocks of kImageSize + 2*i bytes, returns 0;
 *              it unblocks SIGTERM first (exec-term-other's image inherits it blocked)
 *
 * Output: "pid=<pid>" on stdout, then for exec-fail and kill "errno=<name>" (the name of the
 * error the failed exec left), each with one write(2).
 */
#define _GNU_SOURCE /* strerrorname_np */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define kFirstSize 30011
#define kAfterSize 40011
#define kImageSize 50011
#define kChurnRounds 20000
#define kSearchMisses 20
#define kFailRounds 60
#define kForkTerms 4
#define kExitChurn 300000

static const char kMissing[] = "/nonexistent/memtap-test-no-such-program";

static atomic_int g_churning;
static atomic_int g_stop;
/* exit-term's and exec-term-other's child: the main thread says it is leaving (one byte). */
static int g_leaving[2];

static void say(const char* text) {
  ssize_t ignored = write(1, text, strlen(text));
  (void)ignored;
}

static void* churn(void* arg) {
  (void)arg;
  for (int i = 0; i < kChurnRounds && !atomic_load(&g_stop); ++i) {
    void* volatile p = malloc(64);
    free(p);
    atomic_store(&g_churning, 1);
  }
  return NULL;
}

static void allocate(int n, int first_size) {
  for (int i = 0; i < n; ++i) {
    if (!malloc((size_t)(first_size + 2 * i))) exit(4);
  }
}

/* Blocks (1) or unblocks (0) SIGTERM on the calling thread. */
static void set_term_blocked(int blocked) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &term, NULL);
}

/* The thread id of the thread named memtap-sender in this process, 0 if there is none. Raw
 * system calls and buffers on the stack: an allocation here would be recorded. */
static int sender_thread_tid(void) {
  const int dir = open("/proc/self/task", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (dir < 0) return 0;
  char entries[4096];
  int found = 0;
  long got;
  while (!found && (got = syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0) {
    for (long at = 0; at < got && !found;) {
      const struct dirent64* e = (const struct dirent64*)(entries + at);
      at += e->d_reclen;
      if (e->d_name[0] == '.') continue;
      char path[320], comm[32];
      snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      const ssize_t n = read(fd, comm, sizeof comm - 1);
      close(fd);
      if (n > 0 && strncmp(comm, "memtap-sender\n", (size_t)n) == 0) found = atoi(e->d_name);
    }
  }
  close(dir);
  return found;
}

/* exit-term's and exec-term-other's second thread: takes the SIGTERM the main thread blocks,
 * and tells the parent (through `arg`, the pipe's write end) to send it once the main
 * thread's flush is under way: the flush joins the sender thread first. So the signal comes
 * during that flush, never before it. */
static void* wait_for_term(void* arg) {
  const int tell = *(const int*)arg;
  set_term_blocked(0);
  char leaving = 0;
  if (read(g_leaving[0], &leaving, 1) != 1) _exit(8);
  /* Found once (none: gone already), then asked for with one system call at a time: scans of
   * /proc took long enough that an exec's flush could end, and the exec be done, between two
   * of them (the parent then waited for a word that never came). */
  const int sender = sender_thread_tid();
  while (sender != 0 && syscall(SYS_tgkill, getpid(), sender, 0) == 0) {
  }
  const char now = 1;
  if (write(tell, &now, 1) != 1) _exit(8);
  for (;;) pause();
  return NULL;
}

/* term-exit's second thread: says who it is, and takes the SIGTERM the main thread blocks. */
static atomic_int g_term_tid;
static void* take_term(void* arg) {
  (void)arg;
  atomic_store(&g_term_tid, (int)gettid());
  set_term_blocked(0);
  for (;;) pause();
  return NULL;
}

/* Whether thread `tid` of this process is in a futex call (/proc's "syscall": its number
 * first). Raw calls, as in sender_thread_tid. */
static int in_futex(int tid) {
  char path[64], text[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = 0;
  return atol(text) == SYS_futex;
}

/* Execs the missing path: says how it failed, true if with ENOENT. */
static int exec_missing(void) {
  execl(kMissing, kMissing, (char*)NULL);
  const int error = errno;
  char line[64];
  const char* name = strerrorname_np(error);
  snprintf(line, sizeof line, "errno=%s\n", name ? name : "?");
  say(line);
  return error == ENOENT;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    say("usage: memtap_test_process_end exec|exec-lp|exec-le|exec-fail|kill|image N\n");
    return 2;
  }
  const char* mode = argv[1];
  const int n = atoi(argv[2]);
  char line[64];
  snprintf(line, sizeof line, "pid=%d\n", (int)getpid());
  say(line);
  if (strcmp(mode, "image") == 0) {
    set_term_blocked(0);
    allocate(n, kImageSize);
    return 0;
  }
  pthread_t thread;
  if (pthread_create(&thread, NULL, churn, NULL) != 0) return 5;
  while (!atomic_load(&g_churning)) {
  }
  if (strcmp(mode, "exec-fail-loop") == 0) {
    /* No first set: the heap stays small, so that giving memory back trims it. */
    atomic_store(&g_stop, 1);
    pthread_join(thread, NULL);
    extern char** environ;
    char* const missing_argv[] = {(char*)kMissing, NULL};
    void* round_blocks[64];
    for (int round = 0; round < kFailRounds; ++round) {
      const int first = n * round / kFailRounds, last = n * (round + 1) / kFailRounds;
      for (int i = first; i < last && i - first < 64; ++i) {
        if (!(round_blocks[i - first] = malloc((size_t)(kAfterSize + 2 * i)))) return 4;
      }
      for (int i = first; i < last && i - first < 64; ++i) free(round_blocks[i - first]);
      execve(kMissing, missing_argv, environ);
    }
    return 0;
  }
  if (strcmp(mode, "fork-term") == 0) {
    atomic_store(&g_stop, 1);
    pthread_join(thread, NULL);
    pid_t children[kForkTerms];
    for (int i = 0; i < kForkTerms; ++i) {
      children[i] = fork();
      if (children[i] < 0) return 7;
      if (children[i] == 0) {
        allocate(n, kAfterSize);
        for (;;) pause();
      }
      kill(children[i], SIGTERM);
      snprintf(line, sizeof line, "child=%d\n", (int)children[i]);
      say(line);
    }
    int all_termed = 1;
    for (int i = 0; i < kForkTerms; ++i) {
      int status = 0;
      if (waitpid(children[i], &status, 0) != children[i] || !WIFSIGNALED(status) ||
          WTERMSIG(status) != SIGTERM) {
        all_termed = 0;
      }
    }
    return all_termed ? 0 : 9;
  }
  if (strcmp(mode, "exit-term") == 0 || strcmp(mode, "exec-term") == 0 ||
      strcmp(mode, "exec-term-other") == 0 || strcmp(mode, "term-exit") == 0) {
    const int term_first = strcmp(mode, "term-exit") == 0;
    const int other_thread = strcmp(mode, "exec-term") != 0 && !term_first;
    const int by_exec = strcmp(mode, "exec-term") == 0 || strcmp(mode, "exec-term-other") == 0;
    atomic_store(&g_stop, 1);
    pthread_join(thread, NULL);
    int leaving[2];
    if (pipe(leaving) != 0) return 7;
    const pid_t child = fork();
    if (child < 0) return 7;
    if (child == 0) {
      snprintf(line, sizeof line, "child=%d\n", (int)getpid());
      say(line);
      /* exit-term, exec-term-other, term-exit: SIGTERM goes to the second thread, the one
       * thread that takes it; exec-term: to the one thread there is, the one that flushes. */
      if (other_thread || term_first) {
        set_term_blocked(1);
        pthread_t taking;
        if (other_thread) {
          if (pipe2(g_leaving, O_CLOEXEC) != 0) _exit(8);
          if (pthread_create(&taking, NULL, wait_for_term, &leaving[1]) != 0) _exit(8);
        } else {
          if (pthread_create(&taking, NULL, take_term, NULL) != 0) _exit(8);
          while (!atomic_load(&g_term_tid)) {
          }
        }
      }
      for (int i = 0; i < kExitChurn; ++i) {
        void* volatile p = malloc(24);
        free(p);
      }
      allocate(n, kAfterSize);
      const char now = 1;
      if (write(other_thread ? g_leaving[1] : leaving[1], &now, 1) != 1) _exit(8);
      if (term_first) {
        /* The signal's handler is in its flush once it waits on a futex word (its first
         * futex call comes after it has claimed the flush). */
        while (!in_futex(atomic_load(&g_term_tid))) {
        }
      }
      if (by_exec) {
        execl(argv[0], argv[0], "image", argv[2], (char*)NULL);
        _exit(6);
      }
      _exit(0);
    }
    /* The child (or its image) holds the write end: ended without a word, it is read as the
     * end of the pipe, not waited for. */
    close(leaving[1]);
    char heard = 0;
    if (read(leaving[0], &heard, 1) != 1) {
      static const char kLate[] = "the child ended before its second thread saw the flush begin\n";
      ssize_t ignored = write(2, kLate, sizeof kLate - 1);
      (void)ignored;
      return 10;
    }
    kill(child, SIGTERM);
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 7;
    const int exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const int termed = WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM;
    if (strcmp(mode, "exec-term-other") == 0) return termed ? 0 : 9;
    return exited || termed ? 0 : 9;
  }
  allocate(n, kFirstSize);
  if (strcmp(mode, "exec") == 0) {
    execl(argv[0], argv[0], "image", argv[2], (char*)NULL);
    return 6;
  }
  if (strcmp(mode, "exec-lp") == 0) {
    execlp(argv[0], argv[0], "image", argv[2], (char*)NULL);
    return 6;
  }
  if (strcmp(mode, "exec-le") == 0) {
    extern char** environ;
    execle(argv[0], argv[0], "image", argv[2], (char*)NULL, environ);
    return 6;
  }
  if (strcmp(mode, "dup-over") == 0) {
    char path[] = "/tmp/memtap-dup-over-XXXXXX";
    const int file = mkstemp(path);
    if (file < 0) return 7;
    unlink(path);
    static const char kOnePage[] = "1 1 0 0 0 0 0\n";
    if (write(file, kOnePage, sizeof kOnePage - 1) != (ssize_t)(sizeof kOnePage - 1)) return 7;
    /* Read whole before any is replaced: the listing's own descriptor is among them. */
    int open_fds[1024], count = 0;
    DIR* listing = opendir("/proc/self/fd");
    if (!listing) return 7;
    for (struct dirent* e; (e = readdir(listing)) && count < 1024;) {
      if (e->d_name[0] != '.') open_fds[count++] = atoi(e->d_name);
    }
    closedir(listing);
    int replaced = 0;
    for (int i = 0; i < count; ++i) {
      if (open_fds[i] < 3 || open_fds[i] == file) continue;
      if (dup2(file, open_fds[i]) != open_fds[i]) return 8;
      ++replaced;
    }
    snprintf(line, sizeof line, "replaced=%d\n", replaced);
    say(line);
    allocate(n, kAfterSize);
    return 0;
  }
  if (strcmp(mode, "exec-search") == 0) {
    atomic_store(&g_stop, 1);
    pthread_join(thread, NULL);
    extern char** environ;
    char* const image_argv[] = {argv[0], "image", argv[2], NULL};
    char path[64];
    for (int i = 0; i < kSearchMisses; ++i) {
      snprintf(path, sizeof path, "/nonexistent/memtap-test-dir-%d/program", i);
      execve(path, image_argv, environ);
    }
    execve(argv[0], image_argv, environ);
    return 6;
  }
  if (strcmp(mode, "fork-close-loop") == 0) {
    atomic_store(&g_stop, 1);
    pthread_join(thread, NULL);
    const pid_t child = fork();
    if (child < 0) return 7;
    if (child == 0) {
      snprintf(line, sizeof line, "child=%d\n", (int)getpid());
      say(line);
      allocate(n, kAfterSize);
      struct rlimit limit;
      const int top = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536
                          ? (int)limit.rlim_cur
                          : 65536;
      for (int fd = 3; fd < top; ++fd) close(fd);
      execv(argv[0], (char* const[]){argv[0], "image", argv[2], NULL});
      _exit(6);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 8;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 9;
  }
  if (strcmp(mode, "exec-fail") == 0) {
    const int ok = exec_missing();
    allocate(n, kAfterSize);
    atomic_store(&g_stop, 1);
    pthread_join(thread, NULL);
    return ok ? 0 : 3;
  }
  if (strcmp(mode, "kill") == 0) {
    exec_missing();
    raise(SIGKILL);
  }
  return 2;
}
