#!/usr/bin/env python3
"""Side-by-side table of perf/bench_workloads: libtorch (best of 1 and 2 threads), kiln eager
(KILN_LAZY=0), kiln lazy, and each workload's floor from the machine's limits measured in the same
run (triad bandwidth for `bytes`, sgemm rate for `flops`; the best figure any run reached).

    python3 perf/side_by_side.py [--build build] [--min-time 0.5] [--repetitions 1] [--json out.json]

Each workload reports a `check` value computed from the same seeded inputs; the script says
whether the four runs agree. Standard library only.
"""
import argparse, json, os, subprocess, sys

ROWS = ["TinyOps", "SoftmaxCrossEntropy", "AdamStep", "MlpStep", "Sgemm"]
UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def run(binary, env_extra, args):
    env = {k: v for k, v in os.environ.items() if k not in ("BENCH_THREADS", "KILN_LAZY")}
    env.update(env_extra)
    cmd = [binary, "--benchmark_format=json", f"--benchmark_min_time={args.min_time}"]
    if args.repetitions > 1:
        cmd += [f"--benchmark_repetitions={args.repetitions}", "--benchmark_report_aggregates_only=true"]
    if args.filter:
        cmd.append(f"--benchmark_filter={args.filter}")
    print("running:", " ".join(f"{k}={v}" for k, v in env_extra.items()), *cmd, file=sys.stderr)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    results = {}
    for b in json.loads(out)["benchmarks"]:
        if args.repetitions > 1 and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"]).split("/")[0].removeprefix("BM_")
        b["ms"] = b["real_time"] * UNIT_MS[b["time_unit"]]
        results[name] = b
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build", help="build folder holding perf/bench_workloads[_libtorch]")
    p.add_argument("--min-time", default="0.5", help="--benchmark_min_time, seconds")
    p.add_argument("--repetitions", type=int, default=1, help="repetitions; >1 reports medians")
    p.add_argument("--filter", default="", help="--benchmark_filter")
    p.add_argument("--json", help="write the combined results to this file")
    args = p.parse_args()

    kiln = os.path.join(args.build, "perf", "bench_workloads")
    runs = {
        "kiln lazy": run(kiln, {"KILN_LAZY": "1"}, args),
        "kiln eager": run(kiln, {"KILN_LAZY": "0"}, args),
        "libtorch 1t": run(kiln + "_libtorch", {"BENCH_THREADS": "1"}, args),
        "libtorch 2t": run(kiln + "_libtorch", {"BENCH_THREADS": "2"}, args),
    }

    def best(name, key):
        vals = [r[name][key] for r in runs.values() if name in r and key in r[name]]
        return max(vals) if vals else None

    bandwidth = max(filter(None, [best("Triad1", "bytes_per_second"), best("Triad2", "bytes_per_second")]),
                    default=None)
    gflops = best("Sgemm", "GFLOPS")
    print(f"\nMachine limits (best of all runs): triad {bandwidth / 1e9:.1f} GB/s, sgemm {gflops:.0f} GFLOP/s\n"
          if bandwidth and gflops else "\nMachine limits: not measured (filtered out)\n")

    fmt = lambda ms: "" if ms is None else f"{ms:.3g}"
    print("| workload | libtorch (ms, best threads) | kiln eager | kiln lazy | libtorch / kiln lazy "
          "| floor (ms) | share of floor (kiln lazy) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    table, problems = [], []
    for name in ROWS:
        sides = {side: r[name] for side, r in runs.items() if name in r}
        if not sides:
            continue
        lt = [s for s in ("libtorch 1t", "libtorch 2t") if s in sides]
        lt_best = min(lt, key=lambda s: sides[s]["ms"]) if lt else None
        lazy = sides.get("kiln lazy", {}).get("ms")
        eager = sides.get("kiln eager", {}).get("ms")
        lt_ms = sides[lt_best]["ms"] if lt_best else None
        any_side = next(iter(sides.values()))
        floor = None
        if "bytes" in any_side and bandwidth:
            floor = any_side["bytes"] / bandwidth * 1e3
        if "flops" in any_side and gflops:
            floor = max(floor or 0, any_side["flops"] / (gflops * 1e9) * 1e3)
        row = {"workload": name, "libtorch_ms": lt_ms, "libtorch_threads": lt_best, "kiln_eager_ms": eager,
               "kiln_lazy_ms": lazy, "ratio": lt_ms / lazy if lt_ms and lazy else None, "floor_ms": floor,
               "share_of_floor": floor / lazy if floor and lazy else None}
        table.append(row)
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        share = "-" if row["share_of_floor"] is None else f"{100 * row['share_of_floor']:.0f}%"
        threads = lt_best[-2:] if lt_best else "-"
        print(f"| {name} | {fmt(lt_ms)} ({threads}) | {fmt(eager)} | {fmt(lazy)} | {ratio} | "
              f"{fmt(floor) or '-'} | {share} |")
        checks = {side: b["check"] for side, b in sides.items() if "check" in b}
        ref = next(iter(checks.values()), None)
        if ref is not None and any(abs(c - ref) > 1e-3 * max(abs(ref), 1e-6) for c in checks.values()):
            problems.append(f"{name}: check values differ: {checks}")
        for side, b in sides.items():
            if b.get("compiled", 0) > 0:
                problems.append(f"{name} ({side}): {b['compiled']:.0f} kernels compiled inside the timed loop")

    print("\nchecks: " + ("all sides agree" if not problems else "PROBLEMS\n  " + "\n  ".join(problems)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"limits": {"triad_bytes_per_second": bandwidth, "sgemm_gflops": gflops}, "table": table,
                       "problems": problems, "runs": runs}, f, indent=1)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
