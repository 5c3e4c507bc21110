#!/usr/bin/env bash
# Benchmark: `memtap report`, `memtap import` and `memtap export --format torch-snapshot` (the
# file written back as a snapshot) of PyTorch memory snapshots, wall time, CPU time and peak
# memory
# (/usr/bin/time -v's elapsed time, user + system time and maximum resident set). The CPU
# time is the figure to compare on a shared machine: a busy neighbour stretches the wall
# time, not the work.
#
#   sample   the largest real snapshot in ../shared/data/torch_snapshots (19,342 trace
#            entries, 3.2 MB): target well under 1 s
#   1m       a synthetic snapshot of 1,000,000 trace entries (gen_torch_snapshot.py, ~115 MB;
#            written once to /tmp and kept): target under 10 s and under 1 GB
#
# Each is reported SNAPSHOT_REPS times (default 3); prints every run and the median, and
# RESULT lines for tests/bench/run:
#   RESULT snapshot_sample_report_s=X  snapshot_sample_cpu_s=C  snapshot_sample_rss_mb=Y
#   RESULT snapshot_1m_report_s=X  snapshot_1m_cpu_s=C  snapshot_1m_rss_mb=Y  snapshot_1m_file_mb=Z
#   and the same for import: snapshot_sample_import_s, snapshot_sample_import_cpu_s,
#   snapshot_sample_import_rss_mb, snapshot_1m_import_s, ... (into a database, then removed)
#   and for export: snapshot_1m_export_s, snapshot_1m_export_cpu_s, ... (then removed)
# Environment: MEMTAP_BUILD_DIR (default build/), SNAPSHOT_ENTRIES (default 1000000),
# SNAPSHOT_REPS.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${MEMTAP_BUILD_DIR:-$here/../../build}
memtap=$build/bin/memtap
entries=${SNAPSHOT_ENTRIES:-1000000}
reps=${SNAPSHOT_REPS:-3}
sample=$here/../../../shared/data/torch_snapshots/cs336-a2__memory_ctx128_fullstep.pickle
big=/tmp/memtap-bench-snapshot-$entries.pickle
[[ -x $memtap ]] || { echo "missing $memtap: run scripts/build.sh" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "run_snapshot.sh needs /usr/bin/time (GNU time)" >&2; exit 1; }
if [[ ! -s $big ]]; then
  echo "writing $big ($entries trace entries)..."
  /usr/bin/python3 "$here/gen_torch_snapshot.py" "$entries" "$big.tmp" && mv "$big.tmp" "$big"
fi
work=$(mktemp -d /tmp/memtap-snapshot-XXXXXX)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# measure NAME FILE [import|export]: reps runs of `memtap report FILE` (or `memtap import
# FILE`, `memtap export FILE --format torch-snapshot`); RESULT lines with the medians.
measure() {
  local name=$1 file=$2 command=${3:-report} times=() cpus=() rss=()
  local args=(report "$file") tag=$name cpu_key=${name}_cpu rss_key=${name}_rss
  if [[ $command == import ]]; then
    args=(import "$file" -o "$work/imported.db")
    tag="$name import" cpu_key=${name}_import_cpu rss_key=${name}_import_rss
  elif [[ $command == export ]]; then
    args=(export "$file" --format torch-snapshot -o "$work/exported.pickle")
    tag="$name export" cpu_key=${name}_export_cpu rss_key=${name}_export_rss
  fi
  for run in $(seq "$reps"); do
    rm -f "$work/imported.db" "$work/exported.pickle"
    /usr/bin/time -v "$memtap" "${args[@]}" >"$work/out" 2>"$work/time" ||
      { cat "$work/time" >&2; exit 1; }
    local s kb
    s=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); t = 0;
          for (i = 1; i <= n; ++i) t = t * 60 + p[i]; print t }' "$work/time")
    kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time")
    cpus+=("$(awk -F': ' '/User time|System time/ { t += $2 } END { printf "%.2f", t }' \
      "$work/time")")
    times+=("$s")
    rss+=("$(awk -v k="$kb" 'BEGIN { printf "%.0f", k / 1024 }')")
    local note
    note=$(head -n 1 "$work/out" | sed 's/^memtap report: //')
    printf "%-14s run %d: %6.2f s wall  %6.2f s cpu  %5d MB%s\n" "$tag" "$run" "$s" \
      "${cpus[-1]}" "${rss[-1]}" "${note:+  ($note)}"
  done
  echo "RESULT snapshot_${name}_${command}_s=$(printf '%s\n' "${times[@]}" | median)"
  echo "RESULT snapshot_${cpu_key}_s=$(printf '%s\n' "${cpus[@]}" | median)"
  echo "RESULT snapshot_${rss_key}_mb=$(printf '%s\n' "${rss[@]}" | median)"
}

if [[ -r $sample ]]; then
  measure sample "$sample"
  measure sample "$sample" import
else
  echo "sample: $sample is not here; skipped"
fi
measure 1m "$big"
measure 1m "$big" import
measure 1m "$big" export
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "RESULT snapshot_1m_file_mb=$(( $(stat -c %s "$big") / 1048576 ))"
