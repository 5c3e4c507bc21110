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

int main(int argc, char** argv) {
  if (argc < 2) {
    say(2, "usage: memtap_test_crash abort|segv|term|int|overflow|handler|reraise [N]\n");
    return 2;
  }
  const char* mode = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 1000;
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
  void** blocks = malloc(sizeof(void*) * (size_t)n);
  for (int i = 0; i < n; i++) blocks[i] = malloc((size_t)(kCrashFirstSize + 2 * i));
  char line[64];
  snprintf(line, sizeof line, "allocated %d\n", n);
  say(1, line);
  snprintf(line, sizeof line, "crashing: %s\n", mode);
  say(2, line);
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
  return blocks[0] != NULL ? 3 : 4;
}
