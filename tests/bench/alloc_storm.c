/* memtap_bench_alloc_storm: the malloc/free loop that memtap's overhead is measured on.
 *
 * 2,000,000 malloc/free pairs, sizes 16 B to 4 KiB drawn from a fixed-seed LCG, 1024 live
 * slots: each step picks a slot, frees the block in it (if any) and puts a new block there;
 * at the end the remaining blocks are freed, so there are exactly as many frees as mallocs.
 * Every block is written once, as a real program would touch its memory.
 *
 * Usage: memtap_bench_alloc_storm [threads]   threads = 1 (default) or 2; with 2 each thread
 * does half the pairs in its own slots with its own seed.
 *
 * Prints "app_ms=<n>": wall time of the loop (threads started and joined included), measured
 * inside the program so that a tool's start-up and shutdown are not counted.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kPairs = 2000000, kSlots = 1024, kMinBytes = 16, kMaxBytes = 4096 };

struct storm {
  uint64_t seed;
  long pairs;
  long mallocs;
  long frees;
};

static uint64_t lcg_next(uint64_t* state) {
  /* Knuth's MMIX constants; the high bits are the good ones. */
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

static void* run_storm(void* arg) {
  struct storm* s = arg;
  void* slots[kSlots] = {0};
  uint64_t state = s->seed;
  for (long i = 0; i < s->pairs; i++) {
    uint64_t r = lcg_next(&state);
    size_t slot = r % kSlots;
    size_t size = kMinBytes + (r / kSlots) % (kMaxBytes - kMinBytes + 1);
    if (slots[slot]) {
      free(slots[slot]);
      s->frees++;
    }
    unsigned char* p = malloc(size);
    if (!p) {
      fprintf(stderr, "alloc_storm: malloc(%zu) failed\n", size);
      abort();
    }
    p[0] = (unsigned char)i;
    slots[slot] = p;
    s->mallocs++;
  }
  for (size_t slot = 0; slot < kSlots; slot++) {
    if (slots[slot]) {
      free(slots[slot]);
      s->frees++;
    }
  }
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads != 1 && threads != 2) {
    fprintf(stderr, "usage: %s [threads: 1 or 2]\n", argv[0]);
    return 2;
  }

  struct storm work[2] = {
      {.seed = 0x5eed0001, .pairs = kPairs / threads},
      {.seed = 0x5eed0002, .pairs = kPairs - kPairs / threads},
  };

  double start = now_ms();
  if (threads == 1) {
    run_storm(&work[0]);
  } else {
    pthread_t second;
    if (pthread_create(&second, NULL, run_storm, &work[1]) != 0) {
      fprintf(stderr, "alloc_storm: pthread_create failed\n");
      return 1;
    }
    run_storm(&work[0]);
    pthread_join(second, NULL);
  }
  double elapsed = now_ms() - start;

  long mallocs = work[0].mallocs + work[1].mallocs;
  long frees = work[0].frees + work[1].frees;
  printf("threads=%d mallocs=%ld frees=%ld\n", threads, mallocs, frees);
  printf("app_ms=%.0f\n", elapsed);
  return mallocs == kPairs && frees == kPairs ? 0 : 1;
}
