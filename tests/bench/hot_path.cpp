// The agent's hot path, in process (Google Benchmark): one malloc+free pair through the
// hooks against the same pair straight to glibc (__libc_malloc / __libc_free, which the
// hooks call too), in one process, so that the difference is what the agent adds per event
// pair. Run it under the agent, e.g. through tests/bench/run_hot_path.sh:
//   memtap run -o x.db -- memtap_bench_hot_path
// Without the agent both sides are glibc and the difference is ~0.
#include <benchmark/benchmark.h>

#include <cstdlib>

extern "C" void* __libc_malloc(size_t size);
extern "C" void __libc_free(void* p);

namespace {

void BM_GlibcPair(benchmark::State& state) {
  const size_t size = size_t(state.range(0));
  for (auto _ : state) {
    void* p = __libc_malloc(size);
    benchmark::DoNotOptimize(p);
    __libc_free(p);
  }
}

void BM_HookedPair(benchmark::State& state) {
  const size_t size = size_t(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(size);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}

// 64 B: a typical small block; 2 MiB: above the default stack threshold (1 MiB), so
// MEMTAP_STACKS=c takes a (cached) stack on every pair.
BENCHMARK(BM_GlibcPair)->Arg(64)->Arg(2 << 20);
BENCHMARK(BM_HookedPair)->Arg(64)->Arg(2 << 20);

}  // namespace

BENCHMARK_MAIN();
