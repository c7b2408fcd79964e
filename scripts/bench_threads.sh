#!/usr/bin/env bash
# oneTBB against kiln's own pool (KILN_THREADS_IMPL=tbb|pool, runtime/parallel.h) on every
# `kiln bench` workload, lazy and eager, at 1 and at 2 threads. The two take turns in rounds (the
# order flipped every round), so that a busy minute on a shared machine slows both rather than one.
# Prints, per workload, mode and thread count, each side's median over the rounds in ms, the
# ratio of the medians (tbb / pool: below 1, TBB is faster) and the range of the rounds' own
# ratios, which shows the noise. At 1 thread both run every loop on the caller alone, so the 1-thread
# rows compare the same code with itself: a 2-thread ratio is news only beyond their spread.
#   scripts/bench_threads.sh [ROUNDS] [MIN_TIME] [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
min_time=${2:-0.3}
kiln=${3:-build}/cli/kiln
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# kiln bench prints "  kiln lazy 2t   GeluChain   0.123 ms" on stderr for every figure.
for round in $(seq "$rounds"); do
  impls="pool tbb"
  [ $((round % 2)) = 0 ] && impls="tbb pool"
  for threads in 1 2; do
    for impl in $impls; do
      echo "round $round of $rounds: $impl at $threads thread(s)" >&2
      KILN_THREADS_IMPL=$impl "$kiln" bench --no-libtorch --threads "$threads" --min-time "$min_time" 2>&1 >/dev/null |
        awk -v impl="$impl" -v round="$round" '$1 == "kiln" && $NF == "ms" && $4 !~ /^Triad/ {
          print impl, round, $2, $3, $4, $5 }' >> "$log" ||
        echo "  kiln bench exited with an error (sides disagreeing, or a kernel compiled while timed)" >&2
    done
  done
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# impl round mode threads workload ms -> the table.
python3 - "$log" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(dict)  # (workload, mode, threads) -> {(impl, round): ms}
order = []
for line in open(sys.argv[1]):
    impl, rnd, mode, threads, workload, ms = line.split()
    key = (workload, mode, threads)
    if key not in runs:
        order.append(key)
    runs[key][(impl, rnd)] = float(ms)
print("| workload | mode | threads | pool (ms) | tbb (ms) | tbb / pool | rounds' tbb / pool |")
print("| --- | --- | --- | --- | --- | --- | --- |")
first = {}
for workload, _, _ in order:
    first.setdefault(workload, len(first))
for key in sorted(order, key=lambda k: (first[k[0]], k[1], k[2])):
    r = runs[key]
    pool = [v for (i, _), v in r.items() if i == "pool"]
    tbb = [v for (i, _), v in r.items() if i == "tbb"]
    paired = [r[("tbb", n)] / r[("pool", n)] for (i, n) in r if i == "pool" and ("tbb", n) in r]
    if not pool or not tbb:
        continue
    p, t = statistics.median(pool), statistics.median(tbb)
    spread = f"{min(paired):.2f}-{max(paired):.2f}" if paired else "-"
    print(f"| {key[0]} | {key[1]} | {key[2]} | {p:.4g} | {t:.4g} | {t / p:.2f} | {spread} |")
EOF
