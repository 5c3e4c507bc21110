/* memtap_bench_pipeline_gen: malloc/free events at a chosen rate, for measuring how many
 * events per second memtap's whole pipeline (agent, ZeroMQ, monitor, engine, SQLite)
 * sustains without loss (tests/bench/run_pipeline.sh).
 *
 * Usage: memtap_bench_pipeline_gen RATE SECONDS [THREADS]
 *   RATE     events per second in all (a malloc is one event, a free another), e.g. 2e6;
 *            "max" (or 0): unpaced, as fast as the threads go
 *   SECONDS  how long to generate, e.g. 3
 *   THREADS  generating threads, each doing RATE/THREADS (default 1)
 *
 * Pacing: each thread makes a burst of kBurstPairs malloc/free pairs, then sleeps until the
 * clock says the next burst is due (absolute deadlines, so the error does not accumulate and
 * the rate is sustained over the whole run, not reached in one burst). A thread that falls
 * behind does not sleep until it has caught up; the achieved rate below says whether it did.
 *
 * The allocations are real: each pair frees the block in one of kSlots live slots and puts a
 * new block (16-256 B, fixed-seed LCG) there, writing one byte into it, so the compiler can
 * neither pair a malloc with its free nor drop either. At the end every slot is freed:
 * mallocs == frees.
 *
 * Prints one line (the generator's threads are named "gen/N" so that a thread listing tells
 * them from the agent's sender thread):
 *   events=N mallocs=N frees=N seconds=S achieved_rate=R target_rate=T threads=K
 *   start_realtime_ns=A end_realtime_ns=B start_monotonic_ns=C end_monotonic_ns=D
 * (both clocks, so that a script can tell how long after the end the monitor finished, and
 * place perf's CLOCK_MONOTONIC timestamps against the generator's run).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBurstPairs = 64, kSlots = 256, kMinBytes = 16, kMaxBytes = 256, kMaxThreads = 64 };

struct gen {
  int index;
  double pair_rate; /* pairs per second for this thread; 0: unpaced */
  int64_t start_ns; /* CLOCK_MONOTONIC, the same for every thread */
  int64_t end_ns;
  long mallocs;
  long frees;
};

static int64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t monotonic_ns) {
  struct timespec ts = {.tv_sec = monotonic_ns / 1000000000, .tv_nsec = monotonic_ns % 1000000000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

static uint64_t lcg_next(uint64_t* state) {
  /* Knuth's MMIX constants; the high bits are the good ones. */
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

static void* run_gen(void* arg) {
  struct gen* g = arg;
  char name[16];
  snprintf(name, sizeof name, "gen/%d", g->index);
  pthread_setname_np(pthread_self(), name);

  void* slots[kSlots] = {0};
  uint64_t state = 0x5eed0000u + (uint64_t)g->index;
  long bursts = 0;
  for (;;) {
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now >= g->end_ns) break;
    if (g->pair_rate > 0) {
      /* When burst number `bursts` is due: bursts * kBurstPairs pairs at pair_rate. */
      int64_t due = g->start_ns + (int64_t)((double)bursts * kBurstPairs / g->pair_rate * 1e9);
      if (due > now) {
        if (due >= g->end_ns) break;
        sleep_until(due);
      }
    }
    for (int i = 0; i < kBurstPairs; i++) {
      uint64_t r = lcg_next(&state);
      size_t slot = r % kSlots;
      size_t size = kMinBytes + (r / kSlots) % (kMaxBytes - kMinBytes + 1);
      if (slots[slot]) {
        free(slots[slot]);
        g->frees++;
      }
      unsigned char* p = malloc(size);
      if (!p) {
        fprintf(stderr, "pipeline_gen: malloc(%zu) failed\n", size);
        abort();
      }
      p[0] = (unsigned char)i;
      slots[slot] = p;
      g->mallocs++;
    }
    bursts++;
  }
  for (size_t slot = 0; slot < kSlots; slot++) {
    if (slots[slot]) {
      free(slots[slot]);
      g->frees++;
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s RATE|max SECONDS [THREADS]\n", argv[0]);
    return 2;
  }
  double rate = strcmp(argv[1], "max") == 0 ? 0 : strtod(argv[1], NULL);
  double seconds = strtod(argv[2], NULL);
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  if (!(rate >= 0) || !(seconds > 0) || threads < 1 || threads > kMaxThreads) {
    fprintf(stderr, "usage: %s RATE|max SECONDS [THREADS]  (threads: 1-%d)\n", argv[0],
            kMaxThreads);
    return 2;
  }

  static struct gen work[kMaxThreads];
  pthread_t ids[kMaxThreads];
  int64_t start_realtime = clock_ns(CLOCK_REALTIME);
  int64_t start = clock_ns(CLOCK_MONOTONIC);
  for (int t = 0; t < threads; t++) {
    work[t] = (struct gen){.index = t,
                           .pair_rate = rate / 2 / threads,
                           .start_ns = start,
                           .end_ns = start + (int64_t)(seconds * 1e9)};
  }
  /* Thread 0 is the main thread; the others are started. */
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&ids[t], NULL, run_gen, &work[t]) != 0) {
      fprintf(stderr, "pipeline_gen: pthread_create failed\n");
      return 1;
    }
  }
  run_gen(&work[0]);
  for (int t = 1; t < threads; t++) pthread_join(ids[t], NULL);
  int64_t end = clock_ns(CLOCK_MONOTONIC);
  int64_t end_realtime = clock_ns(CLOCK_REALTIME);

  long mallocs = 0, frees = 0;
  for (int t = 0; t < threads; t++) {
    mallocs += work[t].mallocs;
    frees += work[t].frees;
  }
  double elapsed = (double)(end - start) / 1e9;
  long events = mallocs + frees;
  printf(
      "events=%ld mallocs=%ld frees=%ld seconds=%.3f achieved_rate=%.0f target_rate=%.0f "
      "threads=%d start_realtime_ns=%lld end_realtime_ns=%lld start_monotonic_ns=%lld "
      "end_monotonic_ns=%lld\n",
      events, mallocs, frees, elapsed, (double)events / elapsed, rate, threads,
      (long long)start_realtime, (long long)end_realtime, (long long)start, (long long)end);
  return mallocs == frees ? 0 : 1;
}
