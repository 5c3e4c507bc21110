/* A program that calls the agent's context C ABI (agent/memtap.h) the way the Python
 * package does: found at run time with dlsym, so that it runs (and says so) without the
 * agent too. The end-to-end test context_wire_test.cpp runs it under LD_PRELOAD and reads
 * the agent's messages off the wire.
 *
 * Usage: memtap_test_context_calls MODE
 *   basic    every context call once (steps 1..3, mark, range, owner around a malloc,
 *            operator, tracer slice), then two threads interning the same kThreadTexts
 *            texts at once and marking each
 *   fork     kBulkTexts texts of 200 bytes ("bulk-...") and a mark in the parent, fork();
 *            the child marks with the parent's id and one of its own; the parent waits
 *   full     interns distinct texts until the string log (MEMTAP_STRING_MB) is full
 *   pool     the framework pool's calls (memtap_pool_*) with known values: a 2 MiB and a
 *            4 KiB block, their frees requested and completed, pool states and peaks, extreme
 * values on device 65535, and calls the agent must ignore (devices -1 and 65536); run it with
 * MEMTAP_STACKS=c and MEMTAP_STACK_MIN_SIZE=1048576
 *   optional the calls of agent/memtap_optional.h, compiled as C: two steps, a mark, a range,
 *            an owner around malloc(4343); with or without the agent (exit 0 either way)
 * It prints "name=value" lines: the ids it got, and what it checked itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/memtap_optional.h"

enum { kThreadTexts = 2000, kBulkTexts = 30000 };

static uint32_t (*intern_fn)(const char*, size_t);
static void (*step_fn)(void);
static void (*mark_fn)(uint32_t);
static void (*range_start_fn)(uint32_t);
static void (*range_end_fn)(uint32_t);
static void (*owner_push_fn)(uint32_t);
static void (*owner_pop_fn)(void);
static void (*op_start_fn)(uint32_t);
static void (*op_end_fn)(uint32_t);
static void (*trace_slice_fn)(uint32_t, uint64_t, uint64_t);
static void (*pool_alloc_fn)(int, uint64_t, uint64_t, uint64_t);
static void (*pool_free_requested_fn)(int, uint64_t, uint64_t);
static void (*pool_free_completed_fn)(int, uint64_t, uint64_t);
static void (*pool_state_fn)(int, uint64_t, uint64_t);
static void (*pool_peaks_fn)(int, uint64_t, uint64_t);

static int resolve(void) {
#define FIND(var, name) \
  if (!(*(void**)& var = dlsym(RTLD_DEFAULT, name))) return 0;
  FIND(intern_fn, "memtap_intern");
  FIND(step_fn, "memtap_step");
  FIND(mark_fn, "memtap_mark");
  FIND(range_start_fn, "memtap_range_start");
  FIND(range_end_fn, "memtap_range_end");
  FIND(owner_push_fn, "memtap_owner_push");
  FIND(owner_pop_fn, "memtap_owner_pop");
  FIND(op_start_fn, "memtap_op_start");
  FIND(op_end_fn, "memtap_op_end");
  FIND(trace_slice_fn, "memtap_trace_slice");
  FIND(pool_alloc_fn, "memtap_pool_alloc");
  FIND(pool_free_requested_fn, "memtap_pool_free_requested");
  FIND(pool_free_completed_fn, "memtap_pool_free_completed");
  FIND(pool_state_fn, "memtap_pool_state");
  FIND(pool_peaks_fn, "memtap_pool_peaks");
#undef FIND
  return 1;
}

static uint32_t intern(const char* text) {
  return intern_fn(text, strlen(text));
}

static pthread_barrier_t start_together;
static uint32_t thread_ids[2][kThreadTexts];

static void* intern_all(void* arg) {
  uint32_t* ids = thread_ids[(intptr_t)arg];
  char text[64];
  pthread_barrier_wait(&start_together);
  for (int i = 0; i < kThreadTexts; ++i) {
    snprintf(text, sizeof text, "shared-%d", i);
    ids[i] = intern(text);
    mark_fn(ids[i]);
  }
  return NULL;
}

static int run_basic(void) {
  uint32_t alpha = intern("alpha");
  printf("alpha=%u\nalpha_again=%u\nempty=%u\n", alpha, intern("alpha"), intern_fn("", 0));
  step_fn();
  step_fn();
  step_fn();
  mark_fn(alpha);
  uint32_t range = intern("range-r");
  range_start_fn(range);
  range_end_fn(range);
  uint32_t owner = intern("model");
  owner_push_fn(owner);
  void* volatile block = malloc(4242);
  owner_pop_fn();
  free(block);
  uint32_t op = intern("aten::add");
  op_start_fn(op);
  op_end_fn(op);
  uint32_t func = intern("train.py(10): forward");
  trace_slice_fn(func, 123456789ull, 987654321ull);
  printf("range=%u\nowner=%u\nop=%u\nfunc=%u\n", range, owner, op, func);

  pthread_t threads[2];
  pthread_barrier_init(&start_together, NULL, 2);
  for (intptr_t t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, intern_all, (void*)t);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
  int agree = 1;
  for (int i = 0; i < kThreadTexts; ++i) {
    if (thread_ids[0][i] != thread_ids[1][i] || thread_ids[0][i] == 0) agree = 0;
  }
  printf("threads_agree=%d\nshared_0=%u\n", agree, thread_ids[0][0]);
  return 0;
}

static int run_fork(void) {
  char text[256];
  for (int i = 0; i < kBulkTexts; ++i) {
    snprintf(text, sizeof text, "bulk-%0195d", i);
    if (!intern(text)) return 4;
  }
  uint32_t parent_text = intern("parent-text");
  mark_fn(parent_text);
  printf("parent_text=%u\n", parent_text);
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    uint32_t child_text = intern("child-text");
    mark_fn(parent_text);
    mark_fn(child_text);
    printf("child_pid=%d\nchild_text=%u\nchild_parent_text=%u\n", getpid(), child_text,
           intern("parent-text"));
    exit(0);  // exit, not _exit: the agent flushes at exit
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child_status=%d\n", status);
  return 0;
}

static int run_full(void) {
  char text[256];
  unsigned interned = 0, lost = 0;
  uint32_t first = intern("first"), last = 0;
  for (unsigned i = 0; lost < 100 && i < 10000000; ++i) {
    snprintf(text, sizeof text, "%0200u", i);  // 200 bytes, all distinct
    uint32_t id = intern(text);
    if (id == 0) {
      ++lost;
    } else {
      ++interned;
      last = id;
    }
  }
  mark_fn(last);
  /* A full log still finds what it holds. */
  printf("interned=%u\nlost=%u\nlast=%u\nrefound=%d\n", interned, lost, last,
         first != 0 && intern("first") == first);
  return 0;
}

/* Between two marks ("pool-begin", "pool-end"), so that the test finds the calls' records
 * among the thread's others. */
static int run_pool(void) {
  uint32_t begin = intern("pool-begin"), end = intern("pool-end");
  mark_fn(begin);
  pool_state_fn(0, 0, 2u << 20);
  pool_alloc_fn(0, 0x7f0000200000ull, 2u << 20, 0); /* past the stack threshold */
  pool_alloc_fn(3, 0x7f0000400000ull, 4096, 0xabc0);
  pool_free_requested_fn(3, 0x7f0000400000ull, 0xabc0);
  pool_free_completed_fn(3, 0x7f0000400000ull, 0xabc0);
  pool_alloc_fn(-1, 0x1000, 4096, 0); /* no device: nothing */
  pool_free_requested_fn(-1, 0x1000, 0);
  pool_free_completed_fn(-1, 0x1000, 0);
  pool_state_fn(-1, 1, 2);
  pool_peaks_fn(-1, 1, 2);
  pool_alloc_fn(65536, 0x1000, 4096, 0); /* not a device ordinal: nothing */
  pool_state_fn(65536, 1, 2);
  pool_peaks_fn(65536, 1, 2);
  pool_alloc_fn(65535, UINT64_MAX, UINT64_MAX, UINT64_MAX);
  pool_peaks_fn(65535, UINT64_MAX - 2, UINT64_MAX - 3);
  pool_state_fn(65535, UINT64_MAX, UINT64_MAX - 1);
  pool_free_requested_fn(0, 0x7f0000200000ull, 0);
  pool_free_completed_fn(0, 0x7f0000200000ull, 0);
  pool_state_fn(0, 0, 0);
  mark_fn(end);
  printf("pool_begin=%u\npool_end=%u\n", begin, end);
  return 0;
}

/* What a native training program does with memtap_optional.h: the same calls whether or not
 * memtap runs it. */
static int run_optional(void) {
  const uint32_t weights = memtap_optional_intern("weights");
  const uint32_t forward = memtap_optional_intern("forward");
  const uint32_t saved = memtap_optional_intern("saved");
  memtap_optional_step();
  memtap_optional_step();
  memtap_optional_mark(saved);
  memtap_optional_range_start(forward);
  memtap_optional_range_end(forward);
  memtap_optional_owner_push(weights);
  void* volatile block = malloc(4343);
  memtap_optional_owner_pop();
  free(block);
  printf("weights=%u\nforward=%u\nsaved=%u\n", weights, forward, saved);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s basic|fork|full|pool|optional\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "optional") == 0) return run_optional();
  if (!resolve()) {
    printf("agent=absent\n");
    return 3;
  }
  if (strcmp(argv[1], "basic") == 0) return run_basic();
  if (strcmp(argv[1], "fork") == 0) return run_fork();
  if (strcmp(argv[1], "full") == 0) return run_full();
  if (strcmp(argv[1], "pool") == 0) return run_pool();
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
