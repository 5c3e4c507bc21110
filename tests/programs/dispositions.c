/* memtap_test_dispositions: sets, reads back and receives signal dispositions through every
 * libc entry point, and prints what it sees, one line per step, so that a run under memtap
 * can be compared with a run alone line for line.
 *
 * Usage: memtap_test_dispositions
 *   For SIGTERM, SIGINT, SIGSEGV, SIGABRT (signals memtap's agent handles) and SIGUSR1 (one it
 *   does not): sigaction with SA_SIGINFO, SA_ONSTACK, SA_RESTART, an unknown flag and a mask;
 *   signal, bsd_signal, ssignal, sysv_signal (reset on delivery), siginterrupt, sigset with
 *   SIG_HOLD, sigignore; raise() under several of them, the handler printing which one ran,
 *   its siginfo's code and which signals were blocked while it ran. After each step:
 *   "SIGX step: returned R; now handler=H flags=0xF mask=0xM restorer=set|null".
 *   Ends with "done" and exit status 0.
 *
 * Usage: memtap_test_dispositions race
 *   Two threads set SIGTERM's handler (hA, hB in turn) 20,000 times each while a third sends
 *   them SIGTERM, and the handler itself reads SIGTERM's disposition and sets it again; every
 *   answer must be hA or hB. Prints "race: every answer was hA or hB" (or how many were
 *   not) and exits with 0; a deadlock hangs it. On stderr: how often the handler ran.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern __sighandler_t bsd_signal(int, __sighandler_t);

/* sigset and siginterrupt are obsolescent, and exactly what is tested here. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static volatile sig_atomic_t g_ran;

static void report_in_handler(const char* name, int sig, int code) {
  sigset_t blocked;
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  char line[160];
  int n = snprintf(line, sizeof line, "  %s ran for %s, si_code %d, blocked: self %d SIGUSR2 %d\n",
                   name, sigabbrev_np(sig), code, sigismember(&blocked, sig),
                   sigismember(&blocked, SIGUSR2));
  ssize_t ignored = write(1, line, (size_t)n);
  (void)ignored;
  g_ran++;
}

static void h1(int sig) {
  report_in_handler("h1", sig, 0);
}
static void h2(int sig) {
  report_in_handler("h2", sig, 0);
}
static void h3(int sig, siginfo_t* info, void* context) {
  (void)context;
  report_in_handler("h3", sig, info->si_code);
}

static const char* name_of(void* handler) {
  if (handler == (void*)SIG_DFL) return "SIG_DFL";
  if (handler == (void*)SIG_IGN) return "SIG_IGN";
  if (handler == (void*)SIG_ERR) return "SIG_ERR";
  if (handler == (void*)SIG_HOLD) return "SIG_HOLD";
  if (handler == (void*)h1) return "h1";
  if (handler == (void*)h2) return "h2";
  if (handler == (void*)h3) return "h3";
  return "someone else's";
}

static void show(int sig, const char* step, const char* returned) {
  struct sigaction now;
  memset(&now, 0, sizeof now);
  if (sigaction(sig, NULL, &now) != 0) {
    printf("SIG%s %s: returned %s; sigaction failed\n", sigabbrev_np(sig), step, returned);
    return;
  }
  uint64_t mask;
  memcpy(&mask, &now.sa_mask, sizeof mask);
  printf("SIG%s %s: returned %s; now handler=%s flags=0x%x mask=0x%llx restorer=%s\n",
         sigabbrev_np(sig), step, returned, name_of((void*)now.sa_handler), (unsigned)now.sa_flags,
         (unsigned long long)mask, now.sa_restorer ? "set" : "null");
  fflush(stdout);
}

static void show_handler(int sig, const char* step, __sighandler_t returned) {
  show(sig, step, name_of((void*)returned));
}

static void show_rc(int sig, const char* step, int rc) {
  show(sig, step, rc == 0 ? "0" : "-1");
}

static void fire(int sig, const char* step) {
  g_ran = 0;
  raise(sig);
  char what[64];
  snprintf(what, sizeof what, "raised, %d handler call(s)", (int)g_ran);
  show(sig, step, what);
}

static void exercise(int sig) {
  show(sig, "at start", "-");

  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  memset(&old, 0, sizeof old);
  act.sa_sigaction = h3;
  act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | 0x20000000;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, SIGUSR2);
  sigaddset(&act.sa_mask, SIGKILL);
  int rc = sigaction(sig, &act, &old);
  show_rc(sig, "sigaction h3 SA_SIGINFO", rc);
  printf("  its oact: handler=%s flags=0x%x\n", name_of((void*)old.sa_handler),
         (unsigned)old.sa_flags);
  fire(sig, "h3 raised");

  show_handler(sig, "signal h1", signal(sig, h1));
  fire(sig, "h1 raised");
  show_handler(sig, "bsd_signal h2", bsd_signal(sig, h2));
  show_handler(sig, "ssignal h1", ssignal(sig, h1));
  show_handler(sig, "sysv_signal h2", sysv_signal(sig, h2));
  fire(sig, "h2 raised once");
  show_handler(sig, "__sysv_signal h1", __sysv_signal(sig, h1));

  show_rc(sig, "siginterrupt 1", siginterrupt(sig, 1));
  show_handler(sig, "signal h2 after siginterrupt", signal(sig, h2));
  show_rc(sig, "siginterrupt 0", siginterrupt(sig, 0));

  show_handler(sig, "sigset SIG_HOLD", sigset(sig, SIG_HOLD));
  show_handler(sig, "sigset SIG_HOLD again", sigset(sig, SIG_HOLD));
  show_handler(sig, "sigset h1 while held", sigset(sig, h1));
  fire(sig, "h1 raised after sigset");

  show_rc(sig, "sigignore", sigignore(sig));
  fire(sig, "raised while ignored");
  show_handler(sig, "signal SIG_DFL", signal(sig, SIG_DFL));

  /* A "save, replace, restore" round trip of what sigaction answered. */
  struct sigaction saved;
  sigaction(sig, NULL, &saved);
  memset(&act, 0, sizeof act);
  act.sa_handler = h1;
  act.sa_flags = SA_NODEFER;
  sigaction(sig, &act, NULL);
  fire(sig, "h1 SA_NODEFER raised");
  show_rc(sig, "restored", sigaction(sig, &saved, NULL));
}

enum { kRaceRounds = 20000 };
static atomic_int g_bad_answers;
static atomic_int g_setters_running;
static atomic_int g_handler_calls;

static void hA(int sig);
static void hB(int sig);

static void check_answer(const struct sigaction* a) {
  if (a->sa_handler != hA && a->sa_handler != hB) atomic_fetch_add(&g_bad_answers, 1);
}

static void race_handler(int sig) {
  atomic_fetch_add(&g_handler_calls, 1);
  struct sigaction now;
  if (sigaction(sig, NULL, &now) != 0) {
    atomic_fetch_add(&g_bad_answers, 1);
    return;
  }
  check_answer(&now);
  sigaction(sig, &now, NULL);
}
static void hA(int sig) {
  race_handler(sig);
}
static void hB(int sig) {
  race_handler(sig);
}

static void* setter(void* arg) {
  (void)arg;
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  for (int i = 0; i < kRaceRounds; i++) {
    act.sa_handler = (i & 1) ? hB : hA;
    if (sigaction(SIGTERM, &act, &old) != 0) atomic_fetch_add(&g_bad_answers, 1);
    check_answer(&old);
  }
  atomic_fetch_sub(&g_setters_running, 1);
  return NULL;
}

static int race(void) {
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_handler = hA;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  sigaction(SIGTERM, &act, NULL);
  pthread_t setters[2];
  atomic_store(&g_setters_running, 2);
  for (int i = 0; i < 2; i++) pthread_create(&setters[i], NULL, setter, NULL);
  /* Signals while the setters run; each setter is joined only after the last one is sent. */
  while (atomic_load(&g_setters_running) > 0) {
    for (int i = 0; i < 2; i++) pthread_kill(setters[i], SIGTERM);
  }
  for (int i = 0; i < 2; i++) pthread_join(setters[i], NULL);
  fprintf(stderr, "race: the handler ran %d times\n", atomic_load(&g_handler_calls));
  int bad = atomic_load(&g_bad_answers);
  if (bad == 0) {
    printf("race: every answer was hA or hB\n");
  } else {
    printf("race: %d answers were neither hA nor hB\n", bad);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "race") == 0) return race();
  int signals[] = {SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGUSR1};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) exercise(signals[i]);
  printf("done\n");
  return 0;
}
