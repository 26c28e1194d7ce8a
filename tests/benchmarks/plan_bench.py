#!/usr/bin/python3
"""plan_bench.py: the memory plan (`flowloader plan`) against the peak RSS of the run it plans.

    /usr/bin/python3 tests/benchmarks/plan_bench.py [--reps=3] [--epochs=2] [--flowloader=PATH]

For the benchmark's 2000-JPEG set and two smaller sets from the same generator (300 and
50 images), each with the defaults and with fixed --num_workers=2 --prefetch_batches=3,
it prints the plan (`flowloader plan --json`: what Create checks), runs `flowloader run`
over the same data for `--epochs` epochs, and takes the child's peak RSS from wait4 (the
whole process: binary, libraries and threads included). Target: the plan within 15% of
the peak RSS (medians of --reps runs). Writes tests/benchmarks/results/plan.{md,csv,json}.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import shards_bench

RESULTS = shards_bench.RESULTS
SETS = [("2000", 20, 100), ("300", 10, 30), ("50", 5, 10)]
CONFIGS = {"defaults": [], "w2p3": ["--num_workers=2", "--prefetch_batches=3"]}


def log(msg):
    print(f"[plan_bench] {msg}", file=sys.stderr, flush=True)


def small_dataset(flowloader, classes, per_class):
    """A make-dataset set with the 2000 set's options, cached in .bench_data/."""
    data_dir = os.path.join(shards_bench.REPO, ".bench_data")
    root = os.path.join(data_dir, f"imagenet_like_{classes * per_class}_c{classes}_q90_n7.0_s0")
    if not os.path.isdir(root):
        os.makedirs(data_dir, exist_ok=True)
        tmp = root + f".tmp{os.getpid()}"
        subprocess.run([flowloader, "make-dataset", f"--out={tmp}", f"--classes={classes}",
                        f"--images_per_class={per_class}", "--min_short_side=256",
                        "--max_short_side=512", "--quality=90", "--noise=7", "--seed=0"],
                       check=True, stdout=subprocess.DEVNULL)
        os.rename(tmp, root)
    return root


def plan(flowloader, data, flags):
    out = subprocess.run([flowloader, "plan", f"--data={data}", "--json"] + flags,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def peak_rss(flowloader, data, flags, epochs):
    proc = subprocess.Popen([flowloader, "run", f"--data={data}", f"--epochs={epochs}",
                             "--metrics_address=", "--noprogress"] + flags,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, (data, flags)
    return usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--flowloader", default="")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="plan_bench.")
    flowloader = args.flowloader or shards_bench.build_flowloader(work)
    sets = {"2000": shards_bench.dataset(flowloader)}
    for name, classes, per_class in SETS[1:]:
        sets[name] = small_dataset(flowloader, classes, per_class)
    rows = []
    for set_name, data in sets.items():
        for config, flags in CONFIGS.items():
            p = plan(flowloader, data, flags)
            peaks = []
            for _ in range(args.reps):
                peaks.append(peak_rss(flowloader, data, flags, args.epochs))
            peak = statistics.median(peaks)
            rows.append({"images": set_name, "config": config, "plan_bytes": p["total_bytes"],
                         "peak_rss_bytes": peak, "ratio": p["total_bytes"] / peak,
                         "parts": {k: v["bytes"] for k, v in p["items"].items()},
                         "peaks": peaks, "loadavg_1m": os.getloadavg()[0]})
            log(f"{set_name} {config}: plan {p['total_bytes'] / 2**20:.1f} MiB, peak RSS "
                f"{peak / 2**20:.1f} MiB, ratio {p['total_bytes'] / peak:.3f}")
    ok = all(abs(r["ratio"] - 1) <= 0.15 for r in rows)
    os.makedirs(RESULTS, exist_ok=True)
    base = os.path.join(RESULTS, "plan")
    with open(base + ".json", "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "epochs": args.epochs,
                   "reps": args.reps, "rows": rows, "pass": ok}, f, indent=1)
    parts = sorted({k for r in rows for k in r["parts"]})
    with open(base + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["images", "config", "plan_mib", "peak_rss_mib", "plan_over_peak"] +
                   [f"{k}_mib" for k in parts])
        for r in rows:
            w.writerow([r["images"], r["config"], f"{r['plan_bytes'] / 2**20:.1f}",
                        f"{r['peak_rss_bytes'] / 2**20:.1f}", f"{r['ratio']:.3f}"] +
                       [f"{r['parts'].get(k, 0) / 2**20:.1f}" for k in parts])
    lines = [f"# Memory plan against peak RSS ({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"`/usr/bin/python3 tests/benchmarks/plan_bench.py --reps={args.reps} "
             f"--epochs={args.epochs}`: `flowloader plan --json` total against the peak RSS "
             f"(wait4) of `flowloader run` over the same data, {args.epochs} epochs, median of "
             f"{args.reps}; parts per run in [plan.csv](plan.csv). Target: within 15%: "
             f"**{'PASS' if ok else 'FAIL'}**.", "",
             "| images | config | plan (MiB) | peak RSS (MiB) | plan / peak |", "|---|---|---:|---:|---:|"]
    lines += [f"| {r['images']} | {r['config']} | {r['plan_bytes'] / 2**20:.1f} | "
              f"{r['peak_rss_bytes'] / 2**20:.1f} | {r['ratio']:.3f} |" for r in rows]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
