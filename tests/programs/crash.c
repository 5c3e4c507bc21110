/* memtap_test_crash: allocates, then dies by a signal at once, well within one drain
 * interval, so that only a flush on the signal gets its last events to the recording.
 *
 * Usage: memtap_test_crash MODE [N]
 *   Allocates N blocks (default 1000), block i of kCrashFirstSize + 2*i bytes, kept, then:
 *   abort     abort()
 *   segv      writes through a null pointer
 *   term      sends itself SIGTERM
 *   int       raises SIGINT; where that is ignored, writes "carried on after SIGINT" to
 *             stderr and exits with 0
 *   overflow  recurses on the main thread until its stack overflows
 *   thread-overflow
 *             allocates on a second thread instead, which then recurses until its stack
 *             overflows (the main thread waits in pthread_join)
 *   thread-overflow-own-stack
 *             as thread-overflow, but that thread first sets an alternate signal stack of
 *             its own, and after allocating checks with sigaltstack() that it is still the
 *             one in place: writes "alternate stack: the program's own" to stderr if so,
 *             else "alternate stack: replaced" and exits with 6
 *   handler   first installs its own SIGSEGV handler (sigaction, after start-up), which
 *             writes "program handler: SIGSEGV" to stderr and calls abort(); then segfaults
 *             as `segv` does
 *   reraise   first installs its own SIGSEGV handler (signal(), after start-up), which
 *             writes "program handler: SIGSEGV" to stderr, sets SIG_DFL and raises SIGSEGV
 *             again; then segfaults as `segv` does
 * `handler` and `reraise` check that sigaction() and signal() answer with the dispositions
 * they set (SIG_DFL before), and exit with 5 after writing what they got otherwise.
 *
 * Output, before dying: "allocated N" on stdout and "crashing: MODE" on stderr, each with
 * one write(2), so that nothing waits in stdio's buffers.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define kCrashFirstSize 20011

static void say(int fd, const char* text) {
  ssize_t ignored = write(fd, text, strlen(text));
  (void)ignored;
}

static void program_handler(int sig) {
  (void)sig;
  say(2, "program handler: SIGSEGV\n");
  abort();
}

static void reraising_handler(int sig) {
  say(2, "program handler: SIGSEGV\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

static void fail(const char* what) {
  say(2, what);
  exit(5);
}

static volatile int g_stop_recursion = 0; /* never set: the compiler cannot know */

static int recurse(volatile char* previous) {
  volatile char frame[65536]; /* large: the stack is used up in a few dozen calls */
  frame[0] = (char)(previous ? previous[0] + 1 : 0);
  frame[1] = 0;
  if (g_stop_recursion) return frame[0];
  return recurse(frame) + frame[1];
}

static void allocate(const char* mode, int n) {
  void** blocks = malloc(sizeof(void*) * (size_t)n);
  for (int i = 0; i < n; i++) blocks[i] = malloc((size_t)(kCrashFirstSize + 2 * i));
  char line[64];
  snprintf(line, sizeof line, "allocated %d\n", n);
  say(1, line);
  snprintf(line, sizeof line, "crashing: %s\n", mode);
  say(2, line);
}

static char g_own_alt_stack[65536];

struct ThreadArgs {
  const char* mode;
  int n;
};

static void* overflow_thread(void* p) {
  const struct ThreadArgs* args = p;
  const int own = strcmp(args->mode, "thread-overflow-own-stack") == 0;
  if (own) {
    /* Before the thread's first allocation: the first the agent sees of it. */
    stack_t st;
    memset(&st, 0, sizeof st);
    st.ss_sp = g_own_alt_stack;
    st.ss_size = sizeof g_own_alt_stack;
    if (sigaltstack(&st, NULL) != 0) fail("sigaltstack: cannot set\n");
  }
  allocate(args->mode, args->n);
  if (own) {
    stack_t now;
    if (sigaltstack(NULL, &now) != 0) fail("sigaltstack: cannot query\n");
    if ((now.ss_flags & SS_DISABLE) || now.ss_sp != g_own_alt_stack) {
      say(2, "alternate stack: replaced\n");
      exit(6);
    }
    say(2, "alternate stack: the program's own\n");
  }
  recurse(NULL);
  return NULL;
}

/* A 64 KiB frame can step over glibc's one-page guard below a thread's stack, into whatever
 * lies below it: the guard is made larger than a frame, so the overflow faults there. */
static int overflow_on_a_thread(const char* mode, int n) {
  struct ThreadArgs args = {mode, n};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)1 << 20);
  pthread_attr_setguardsize(&attr, (size_t)256 << 10);
  pthread_t thread;
  if (pthread_create(&thread, &attr, overflow_thread, &args) != 0) fail("pthread_create\n");
  pthread_join(thread, NULL);
  say(2, "still alive\n");
  return 3;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    say(2,
        "usage: memtap_test_crash abort|segv|term|int|overflow|thread-overflow|"
        "thread-overflow-own-stack|handler|reraise [N]\n");
    return 2;
  }
  const char* mode = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 1000;
  if (strncmp(mode, "thread-overflow", 15) == 0) return overflow_on_a_thread(mode, n);
  if (strcmp(mode, "handler") == 0) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = program_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    if (old.sa_handler != SIG_DFL) fail("sigaction: SIGSEGV was not SIG_DFL\n");
    sigaction(SIGSEGV, NULL, &old);
    if (old.sa_handler != program_handler) fail("sigaction: SIGSEGV is not our handler\n");
  }
  if (strcmp(mode, "reraise") == 0) {
    if (signal(SIGSEGV, reraising_handler) != SIG_DFL) fail("signal: SIGSEGV was not SIG_DFL\n");
    struct sigaction now;
    sigaction(SIGSEGV, NULL, &now);
    if (now.sa_handler != reraising_handler) fail("sigaction: SIGSEGV is not our handler\n");
  }
  allocate(mode, n);
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "segv") == 0 || strcmp(mode, "handler") == 0 || strcmp(mode, "reraise") == 0) {
    volatile int* nowhere = NULL;
    *nowhere = 1;
  }
  if (strcmp(mode, "term") == 0) kill(getpid(), SIGTERM);
  if (strcmp(mode, "int") == 0) {
    raise(SIGINT);
    say(2, "carried on after SIGINT\n");
    return 0;
  }
  if (strcmp(mode, "overflow") == 0) return recurse(NULL);
  say(2, "still alive\n");
  return 3;
}
