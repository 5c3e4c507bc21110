/* memtap_bench_stacked_alloc{,_nofp}: the cost of a stacked allocation (MEMTAP_STACKS=c).
 *
 * A 2 MiB malloc+free pair (above the default 1 MiB stack threshold: each malloc takes a C
 * stack) at the end of a call chain DEPTH frames deep, timed in process: the pair through
 * the hooks against the same pair to glibc (__libc_malloc/__libc_free) at the same depth.
 * Built twice: with frame pointers, and -fomit-frame-pointer (tests/bench/run_c_stacks.sh).
 *
 * Usage: memtap_bench_stacked_alloc [DEPTH [PAIRS]]   (20 frames, 200,000 pairs)
 * Prints "hooked_ns=<n> glibc_ns=<n>": ns per pair, the best of 5 rounds each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* p);

enum { kBytes = 2 << 20 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pairs_hooked(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    void* p = malloc(kBytes);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
}

static void pairs_glibc(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    void* p = __libc_malloc(kBytes);
    __asm__ volatile("" : : "r"(p) : "memory");
    __libc_free(p);
  }
}

/* The chain: one frame a level, kept (no inlining, no tail call). */
__attribute__((noinline)) static double chain(int depth, int hooked, long pairs) {
  if (depth > 0) {
    double t = chain(depth - 1, hooked, pairs);
    __asm__ volatile("" ::: "memory");
    return t;
  }
  double start = now_ns();
  if (hooked)
    pairs_hooked(pairs);
  else
    pairs_glibc(pairs);
  return (now_ns() - start) / pairs;
}

int main(int argc, char** argv) {
  int depth = argc > 1 ? atoi(argv[1]) : 20;
  long pairs = argc > 2 ? atol(argv[2]) : 200000;
  double best[2] = {1e18, 1e18};
  chain(depth, 1, 1000); /* the first stack: learnt, interned */
  for (int round = 0; round < 5; ++round) {
    for (int hooked = 0; hooked < 2; ++hooked) {
      double t = chain(depth, hooked, pairs);
      if (t < best[hooked]) best[hooked] = t;
    }
  }
  printf("hooked_ns=%.1f glibc_ns=%.1f\n", best[1], best[0]);
  return 0;
}
