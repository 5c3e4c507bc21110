/* memtap_test_thread_faults: thread life cycles a profiler must survive.
 *
 *   exit-thread N   the main thread waits while a second thread allocates N blocks (block i
 *                   has 30011 + 2 * i bytes, kept) and calls exit(3): the process ends from a
 *                   thread other than the main one. Prints "allocated N" first.
 *   churn R T N     R rounds of T threads created and joined; each thread allocates and
 *                   frees N blocks of 40009 bytes. Prints "freed R*T*N" and exits 0.
 *   signal-alloc N  allocates and frees N blocks of 64 bytes while a SIGALRM handler, every
 *                   50 us, allocates and frees a block of 777 bytes: the handler lands inside
 *                   malloc and free (and inside memtap's hooks). Prints "freed N" and exits
 *                   0; "handler ran K times" on stderr.
 *   alt-stacks T    T threads one after the other; each allocates and frees a block of 50021
 *                   bytes, then reads its alternate signal stack (sigaltstack), and every
 *                   second one then sets one of its own in its place, as a program that sets
 *                   one unconditionally does. Once each has been joined, the main thread
 *                   checks whether the stack that thread found is still mapped and still
 *                   holds the mark that thread wrote at its base (a mapping made since in
 *                   the freed range, by any thread, is not the stack left behind).
 *                   Prints "threads T, with an alternate stack W, left mapped K", exits 0.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

static int g_blocks;

static void* allocate_then_exit(void* arg) {
  (void)arg;
  for (int i = 0; i < g_blocks; ++i) {
    char* p = malloc(30011 + 2 * (size_t)i);
    if (p == NULL) abort();
    p[0] = 1; /* kept: the process ends with it live */
  }
  printf("allocated %d\n", g_blocks);
  fflush(stdout);
  exit(3);
}

static void* allocate_and_free(void* arg) {
  (void)arg;
  for (int i = 0; i < g_blocks; ++i) {
    char* p = malloc(40009);
    if (p == NULL) abort();
    p[0] = 1;
    free(p);
  }
  return NULL;
}

static volatile sig_atomic_t g_handler_runs;

/* malloc is not async-signal-safe: a handler that calls it while glibc holds the arena's lock
 * would deadlock. Both sizes are served from glibc's per-thread cache once primed (a block
 * freed there is the next one handed out), which takes no lock, so neither the handler nor
 * the loop it interrupts ever does. */
static void allocate_in_handler(int sig) {
  (void)sig;
  char* p = malloc(777);
  if (p != NULL) {
    p[0] = 1;
    free(p);
  }
  g_handler_runs = g_handler_runs + 1;
}

static int signal_alloc(int blocks) {
  free(malloc(777));
  free(malloc(64));
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = allocate_in_handler;
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGALRM, &sa, NULL) != 0) return 1;
  struct itimerval every = {{0, 50}, {0, 50}};
  if (setitimer(ITIMER_REAL, &every, NULL) != 0) return 1;
  for (int i = 0; i < blocks; ++i) {
    char* p = malloc(64);
    if (p == NULL) abort();
    p[0] = 1;
    free(p);
  }
  struct itimerval off;
  memset(&off, 0, sizeof off);
  setitimer(ITIMER_REAL, &off, NULL);
  printf("freed %d\n", blocks);
  fprintf(stderr, "handler ran %d times\n", (int)g_handler_runs);
  return 0;
}

static stack_t g_found;
static char g_own_alt_stack[65536];
static int g_replace;
static uint64_t g_mark;

static void* find_alt_stack(void* arg) {
  (void)arg;
  char* p = malloc(50021);
  if (p == NULL) abort();
  p[0] = 1;
  free(p);
  if (sigaltstack(NULL, &g_found) != 0) abort();
  /* The base is the last byte a handler would reach; nothing runs on it now. */
  if (!(g_found.ss_flags & SS_DISABLE)) memcpy(g_found.ss_sp, &g_mark, sizeof g_mark);
  if (g_replace) {
    stack_t own;
    memset(&own, 0, sizeof own);
    own.ss_sp = g_own_alt_stack;
    own.ss_size = sizeof g_own_alt_stack;
    if (sigaltstack(&own, NULL) != 0) abort();
  }
  return NULL;
}

static int alt_stacks(int threads) {
  int with = 0, mapped = 0;
  for (int i = 0; i < threads; ++i) {
    g_replace = i % 2;
    g_mark = 0x6d656d7461700000u + (uint64_t)i;
    pthread_t t;
    if (pthread_create(&t, NULL, find_alt_stack, NULL) != 0) return 1;
    pthread_join(t, NULL);
    if (g_found.ss_flags & SS_DISABLE) continue;
    ++with;
    /* Read through the kernel: the range may since hold another mapping, even PROT_NONE. */
    uint64_t seen = 0;
    struct iovec local = {&seen, sizeof seen};
    struct iovec remote = {g_found.ss_sp, sizeof seen};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof seen &&
        seen == g_mark)
      ++mapped;
  }
  printf("threads %d, with an alternate stack %d, left mapped %d\n", threads, with, mapped);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "exit-thread") == 0) {
    g_blocks = atoi(argv[2]);
    pthread_t t;
    if (pthread_create(&t, NULL, allocate_then_exit, NULL) != 0) return 1;
    for (;;) pause(); /* exit() on the other thread ends the process */
  }
  if (argc == 5 && strcmp(argv[1], "churn") == 0) {
    const int rounds = atoi(argv[2]), threads = atoi(argv[3]);
    g_blocks = atoi(argv[4]);
    pthread_t* ids = calloc((size_t)threads, sizeof *ids);
    if (ids == NULL) return 1;
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < threads; ++i) {
        if (pthread_create(&ids[i], NULL, allocate_and_free, NULL) != 0) return 1;
      }
      for (int i = 0; i < threads; ++i) pthread_join(ids[i], NULL);
    }
    free(ids);
    printf("freed %d\n", rounds * threads * g_blocks);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "signal-alloc") == 0) return signal_alloc(atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "alt-stacks") == 0) return alt_stacks(atoi(argv[2]));
  fprintf(stderr,
          "usage: %s exit-thread N | churn ROUNDS THREADS N | signal-alloc N | alt-stacks T\n",
          argv[0]);
  return 2;
}
