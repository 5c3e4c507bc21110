/* memtap_bench_sustained_load: a program whose own threads keep every core busy for a while,
 * allocating all along: what memtap must not fall arbitrarily behind (common/cpu_share.h).
 *
 * Usage: memtap_bench_sustained_load THREADS SECONDS PAIRS_PER_S
 * Each thread computes for SECONDS and, on schedule, makes PAIRS_PER_S malloc/free pairs a
 * second (16 B to 1 KiB, 256 live slots). Prints "work=<n>": units of computation done by all
 * threads together, the program's throughput (a tool that takes the program's CPU lowers
 * it; the pairs are made on time either way), and "pairs=<n>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kSlots = 256, kMaxThreads = 64, kUnitSteps = 2000 };

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct worker {
  double seconds;
  long pairs_per_s;
  unsigned seed;
  long work;
  long pairs;
};

static void* work(void* arg) {
  struct worker* w = arg;
  void* slots[kSlots] = {0};
  volatile double sink = 0;
  const double start = seconds_now();
  for (double now = start; now - start < w->seconds; now = seconds_now()) {
    const double due = (now - start) * (double)w->pairs_per_s;
    while ((double)w->pairs < due) {
      w->seed = w->seed * 1103515245u + 12345u;
      const unsigned slot = (w->seed >> 16) % kSlots;
      free(slots[slot]);
      slots[slot] = malloc(16 + ((w->seed >> 8) & 1007));
      ++w->pairs;
    }
    for (int k = 0; k < kUnitSteps; ++k) sink += k * 0.5;
    ++w->work;
  }
  for (int i = 0; i < kSlots; ++i) free(slots[i]);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s THREADS SECONDS PAIRS_PER_S\n", argv[0]);
    return 2;
  }
  const int threads = atoi(argv[1]);
  if (threads < 1 || threads > kMaxThreads) {
    fprintf(stderr, "THREADS: 1 to %d\n", kMaxThreads);
    return 2;
  }
  struct worker workers[kMaxThreads];
  pthread_t ids[kMaxThreads];
  for (int i = 0; i < threads; ++i) {
    workers[i] = (struct worker){atof(argv[2]), atol(argv[3]), 1u + (unsigned)i, 0, 0};
    pthread_create(&ids[i], NULL, work, &workers[i]);
  }
  long total_work = 0, total_pairs = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(ids[i], NULL);
    total_work += workers[i].work;
    total_pairs += workers[i].pairs;
  }
  printf("work=%ld pairs=%ld\n", total_work, total_pairs);
  return 0;
}
