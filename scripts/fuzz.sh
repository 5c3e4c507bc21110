#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz (the wire decoder, the engine's session and the
# recording readers): builds them with clang under ASan+UBSan into build-asan/, the build
# scripts/sanitize.sh runs the unit tests in (so after it only the targets are compiled),
# writes the seeds that follow the current formats, and runs each target.
#
#   scripts/fuzz.sh                      the test suite's short run: every target, a fixed
#                                        number of inputs from a fixed seed, a fresh corpus
#   scripts/fuzz.sh --time 3600 [TARGET...] [-- LIBFUZZER ARGS...]
#                                        a long run: each target (all by default) for that
#                                        many seconds, its corpus kept in build-asan/corpus/
#
# Targets: wire_message, memscope_db, memscope_csv, profiler_csv, attr, torch_snapshot. A
# finding stops the target and leaves the input in build-asan/artifacts/ (crash-*, leak-*,
# timeout-*, oom-*);
# `build-asan/fuzz/<target>_fuzzer FILE` runs it again. Seeds: tests/fuzz/seeds/<target>/
# (hand-made, and the reproducers of bugs found), make_fuzz_seeds' output, and the sample
# files of ../shared/data/msmemscope and the small ones of ../shared/data/torch_snapshots
# where the workspace has them.
#
# MEMTAP_FUZZ_BUILD_DIR overrides the build directory, MEMTAP_JOBS the build's parallelism.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${MEMTAP_FUZZ_BUILD_DIR:-$root/build-asan}
samples=$root/../shared/data/msmemscope
snapshots=$root/../shared/data/torch_snapshots
all_targets=(wire_message memscope_db memscope_csv profiler_csv attr torch_snapshot)

seconds=0
targets=()
extra=()
while (($# > 0)); do
  case $1 in
    --time)
      seconds=${2:?--time needs a number of seconds}
      shift 2
      ;;
    --)
      shift
      extra=("$@")
      break
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      [[ " ${all_targets[*]} " == *" $1 "* ]] || {
        echo "fuzz.sh: unknown target '$1' (targets: ${all_targets[*]})" >&2
        exit 2
      }
      targets+=("$1")
      shift
      ;;
  esac
done
((${#targets[@]} > 0)) || targets=("${all_targets[@]}")

# shellcheck source=scripts/clang-build.sh
source "$root/scripts/clang-build.sh"
# shellcheck source=scripts/parallel.sh
source "$root/scripts/parallel.sh"
clang_build_tools_present fuzz.sh || exit 1
# The ASan build of scripts/sanitize.sh, configured alike: after it, only the targets are left
# to compile.
configure_clang_build "$build_dir" address,undefined -DMEMTAP_FUZZ=ON
cmake --build "$build_dir" -j "${MEMTAP_JOBS:-$(nproc)}" --target fuzzers

seeds=$build_dir/seeds
rm -rf "$seeds"
"$build_dir/fuzz/make_fuzz_seeds" "$seeds"
# The sample files each reader is for (links: the fuzzer only reads its seed directories).
mkdir -p "$seeds/memscope_csv" "$seeds/profiler_csv" "$seeds/torch_snapshot"
if [[ -d $samples ]]; then
  for file in "$samples"/*; do
    case $(basename "$file") in
      *.db) ln -s "$file" "$seeds/memscope_db/" ;;
      *operator_memory*.csv | *memory_record*.csv) ln -s "$file" "$seeds/profiler_csv/" ;;
      *.csv) ln -s "$file" "$seeds/memscope_csv/" ;;
    esac
  done
fi

# The snapshots short enough to mutate whole (the others are megabytes).
if [[ -d $snapshots ]]; then
  for file in "$snapshots"/*.pickle "$snapshots"/*.pkl; do
    [[ -f $file ]] && (($(stat -c %s "$file") <= 16384)) && ln -s "$file" "$seeds/torch_snapshot/"
  done
fi

declare -A dict=([wire_message]=wire [memscope_db]=csv [memscope_csv]=csv [profiler_csv]=csv
                 [attr]=attr [torch_snapshot]=pickle)
# Short runs: inputs per target for 5-15 s each on a busy 2-core VM (the targets that write
# and read a file per input run slower). libFuzzer stops at whichever of -runs and
# -max_total_time comes first, so a slow machine shortens the run rather than the suite.
declare -A runs=([wire_message]=40000 [memscope_db]=6000 [memscope_csv]=6000
                 [profiler_csv]=8000 [attr]=50000 [torch_snapshot]=20000)
# Longest input made: the CSV samples are ~40 KiB, and mutating inputs that long is slow
# for little more (a record crossing the reader's first 4 KiB read is inside 8 KiB).
declare -A max_len=([wire_message]=4096 [memscope_db]=65536 [memscope_csv]=8192
                    [profiler_csv]=8192 [attr]=4096 [torch_snapshot]=16384)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
artifacts=$build_dir/artifacts
mkdir -p "$artifacts"
# One target's run; its summary (or, for a finding, its log's tail) in $build_dir/$target.result.
fuzz_target() {
  local target=$1 corpus limits dirs dir start inputs
  if ((seconds > 0)); then
    corpus=$build_dir/corpus/$target  # kept: a long run goes on from the last one's corpus
    limits=(-max_total_time="$seconds")
  else
    corpus=$build_dir/corpus-short/$target  # fresh: the same inputs every time
    rm -rf "$corpus"
    limits=(-seed=1 -runs="${runs[$target]}" -max_total_time=20)
  fi
  mkdir -p "$corpus"
  dirs=("$corpus")
  for dir in "$seeds/$target" "$root/tests/fuzz/seeds/$target"; do
    [[ -d $dir ]] && dirs+=("$dir")
  done
  start=$SECONDS
  # The first directory takes the new inputs; the seed directories are only read.
  if "$build_dir/fuzz/${target}_fuzzer" "${limits[@]}" -max_len="${max_len[$target]}" \
    -timeout=10 -rss_limit_mb=2048 \
    -dict="$root/tests/fuzz/dicts/${dict[$target]}.dict" -artifact_prefix="$artifacts/$target-" \
    -print_final_stats=1 "${extra[@]}" "${dirs[@]}" >"$build_dir/$target.log" 2>&1; then
    # -fork=N prints no final stats: then the last progress line's count. Either may be
    # missing, which must not end the script under pipefail before the other targets run.
    inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build_dir/$target.log" | tail -n 1)
    [[ -n $inputs ]] || inputs=$(sed -n 's/^#\([0-9]*\): cov.*/\1/p' "$build_dir/$target.log" | tail -n 1)
    echo "   ok: ${inputs:-?} inputs in $((SECONDS - start)) s" >"$build_dir/$target.result"
  else
    {
      tail -n 60 "$build_dir/$target.log"
      echo "fuzz.sh: $target found a problem; the input is in $artifacts/ (log: $build_dir/$target.log)"
    } >"$build_dir/$target.result"
    return 1
  fi
}

report_target() {
  echo "== fuzz: $1"
  if (($2 == 0)); then
    cat "$build_dir/$1.result"
  else
    cat "$build_dir/$1.result" >&2
    failed+=("$1")
  fi
}
# The short run goes as many targets at a time as there are cores (scripts/parallel.sh); a
# long run one after the other, as it says.
jobs=1
((seconds > 0)) || jobs=$(nproc)
failed=()
run_in_parallel "$jobs" fuzz_target report_target "${targets[@]}" || true
if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
