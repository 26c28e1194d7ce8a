#!/usr/bin/python3
"""autotune_bench.py: the online autotuner's targets (num_workers: auto, prefetch_batches: auto).

    /usr/bin/python3 tests/benchmarks/autotune_bench.py [--epochs=40] [--reps=3]

On the benchmark's 2000-JPEG set (the same generator and options as bench.py and
tune_bench.py, cached in .bench_data/), train transform, batch 64, it measures:
  1. auto against fixed configurations (num_workers 1-2 x prefetch_batches 2-4), all run
     alternating `--reps` times: the best fixed one's median steady images/s, and for
     auto the median of (a) when it reached 95% of that and stayed (the first epoch end
     from which the next 4 epochs and the rest of the run are at >= 95%) and (b) its
     images/s after 10 s over the best fixed one's. Target: (a) <= 10 s, (b) >= 0.95;
  2. --consumer_ms=60 (one worker keeps up): auto ends on 1 worker, the child used
     <= 1.2 cores (rusage CPU / wall) and the consumer waited < 5% (whole run);
  3. a --ram_budget below what the default configuration plans (its plan less a quarter
     of its batch pool, as tune_bench.py): the child's peak RSS (wait4) stays under it,
     and the autotuner never held more buffers than the budget allows;
  4. --checksum: data_checksum is the same for auto, 1 worker and 2 workers.
Writes tests/benchmarks/results/autotune.md and autotune.json. Needs a quiet machine;
the load average before and after is recorded, since other compiles move every figure.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WINDOW_EPOCHS = 4  # "Reaches": this many epochs in a row at the goal.


def log(msg):
    print(f"[autotune_bench] {msg}", file=sys.stderr, flush=True)


def dataset(flowloader, data_dir):
    root = os.path.join(data_dir, "imagenet_like_2000_c20_q90_n7.0_s0")
    if not os.path.isdir(root):
        os.makedirs(data_dir, exist_ok=True)
        tmp = root + f".tmp{os.getpid()}"
        subprocess.run([flowloader, "make-dataset", f"--out={tmp}", "--classes=20",
                        "--images_per_class=100", "--min_short_side=256", "--max_short_side=512",
                        "--quality=90", "--noise=7", "--seed=0"], check=True,
                       stdout=subprocess.DEVNULL)
        os.rename(tmp, root)
    return root


def run(flowloader, data, *flags, epochs):
    """One `flowloader run`: its summary JSON, wall, CPU cores used and peak RSS (wait4)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as summary:
        cmd = [flowloader, "run", f"--data={data}", "--batch_size=64", f"--epochs={epochs}",
               "--metrics_address=", "--progress=false", f"--summary_json={summary.name}", *flags]
        log(" ".join(cmd[2:]))
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.time() - t0
        assert os.waitstatus_to_exitcode(status) == 0, cmd
        with open(summary.name) as f:
            s = json.load(f)
    s["child_cores"] = (usage.ru_utime + usage.ru_stime) / wall
    s["peak_rss_bytes"] = usage.ru_maxrss * 1024
    return s


def epoch_rates(s):
    """(end time, images/s) of each epoch: 2000 images between consecutive epoch ends."""
    ends = s["epoch_end_seconds"]
    per_epoch = s["samples"] / len(ends)
    starts = [0.0] + ends[:-1]
    return [(e, per_epoch / (e - b)) for b, e in zip(starts, ends)]


def time_to_stay(s, goal):
    """When the run reached `goal` images/s and stayed there: the first epoch end from which
    the next WINDOW_EPOCHS epochs, and everything after it to the end of the run, run at
    >= goal; None if there is none."""
    ends = [0.0] + s["epoch_end_seconds"]
    per_epoch = s["samples"] / (len(ends) - 1)
    for i in range(len(ends) - WINDOW_EPOCHS):
        window = WINDOW_EPOCHS * per_epoch / (ends[i + WINDOW_EPOCHS] - ends[i])
        rest = (len(ends) - 1 - i) * per_epoch / (ends[-1] - ends[i])
        if window >= goal and rest >= goal:
            return ends[i]
    return None


def rate_after(s, seconds):
    """Images/s from the first epoch end at or after `seconds` to the end of the run."""
    ends = s["epoch_end_seconds"]
    per_epoch = s["samples"] / len(ends)
    later = [i for i, e in enumerate(ends) if e >= seconds]
    if len(later) < 2:
        return 0.0
    return (len(later) - 1) * per_epoch / (ends[later[-1]] - ends[later[0]])


def steady_rate(s):
    """Images/s after the first epoch (start-up and cold seek indexes excluded)."""
    ends = s["epoch_end_seconds"]
    per_epoch = s["samples"] / len(ends)
    return (len(ends) - 1) * per_epoch / (ends[-1] - ends[0])


def load_average():
    return round(os.getloadavg()[0], 2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--flowloader", default=os.path.join(REPO, "bazel-bin/runtime/flowloader"))
    p.add_argument("--data_dir", default=os.path.join(REPO, ".bench_data"))
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=os.path.join(REPO, "tests/benchmarks/results"))
    args = p.parse_args()
    fl = args.flowloader
    data = dataset(fl, args.data_dir)
    results = {"data": data, "epochs": args.epochs, "reps": args.reps,
               "load_average_before": load_average()}

    # 1. Auto against the fixed configurations, alternating.
    fixed = [(1, 3), (2, 2), (2, 3), (2, 4)]
    configs = {f"w{w}p{b}": [f"--num_workers={w}", f"--prefetch_batches={b}"] for w, b in fixed}
    configs["auto"] = ["--num_workers=auto", "--prefetch_batches=auto"]
    runs = {name: [] for name in configs}
    for _ in range(args.reps):
        for name, flags in configs.items():
            runs[name].append(run(fl, data, *flags, epochs=args.epochs))
    steady = {n: statistics.median(steady_rate(s) for s in r) for n, r in runs.items()}
    best_name = max((n for n in steady if n != "auto"), key=steady.get)
    best = steady[best_name]
    reached = [time_to_stay(s, 0.95 * best) for s in runs["auto"]]
    # A run that never got there counts as never: the median is None if most did not.
    never = float("inf")
    reached_median = statistics.median(never if t is None else t for t in reached)
    reached_median = None if reached_median == never else reached_median
    after10 = statistics.median(rate_after(s, 10.0) for s in runs["auto"])
    results["throughput"] = {
        "steady_images_per_second": steady, "best_fixed": best_name,
        "auto_seconds_to_95pct_for_good": reached, "auto_images_per_second_after_10s": after10,
        "auto_final": [s["autotune"] for s in runs["auto"]],
        "auto_epoch_rates": [epoch_rates(s) for s in runs["auto"]]}

    # 2. A consumer one worker keeps up with.
    slow = [run(fl, data, "--num_workers=auto", "--prefetch_batches=auto", "--consumer_ms=60",
                epochs=4) for _ in range(args.reps)]
    results["consumer"] = [{"num_workers": s["autotune"]["num_workers"],
                            "prefetch_batches": s["autotune"]["prefetch_batches"],
                            "decisions": s["autotune"]["decisions"],
                            "cores": s["child_cores"],
                            "wait_fraction": s["consumer_wait_seconds"] / s["seconds"]}
                           for s in slow]
    consumer_workers = [c["num_workers"] for c in results["consumer"]]
    consumer_cores = statistics.median(c["cores"] for c in results["consumer"])
    consumer_wait = statistics.median(c["wait_fraction"] for c in results["consumer"])

    # 3. A RAM budget under the default plan.
    plan = json.loads(subprocess.run([fl, "plan", f"--data={data}", "--num_workers=2",
                                      "--prefetch_batches=3", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    ram_budget = plan["total_bytes"] - plan["items"]["batch_pool"]["bytes"] // 4
    tight = run(fl, data, "--num_workers=auto", "--prefetch_batches=auto",
                f"--ram_budget={ram_budget}", epochs=args.epochs // 2)
    most_buffers = max([2] + [d["to"] for d in tight["autotune"]["decisions"]
                              if d["knob"] == "prefetch_batches"])
    per_buffer = plan["items"]["batch_pool"]["bytes"] // 3
    results["ram"] = {"default_plan_bytes": plan["total_bytes"], "ram_budget_bytes": ram_budget,
                      "peak_rss_bytes": tight["peak_rss_bytes"], "most_buffers": most_buffers,
                      "planned_bytes_at_most_buffers":
                          plan["total_bytes"] + (most_buffers - 3) * per_buffer,
                      "autotune": tight["autotune"]}

    # 4. The same data whatever the workers.
    sums = {name: run(fl, data, *flags, "--checksum", "--seed=7", epochs=2)["data_checksum"]
            for name, flags in [("auto", ["--num_workers=auto", "--prefetch_batches=auto"]),
                                ("1 worker", ["--num_workers=1"]),
                                ("2 workers", ["--num_workers=2"])]}
    results["checksums"] = sums
    results["load_average_after"] = load_average()

    r = results["ram"]
    checks = [
        ("auto reaches >= 95% of the best fixed images/s within 10 s and stays there",
         reached_median is not None and reached_median <= 10.0 and after10 >= 0.95 * best,
         f"for good after {reached_median if reached_median is None else round(reached_median, 1)}"
         f" s (runs: {', '.join('never' if t is None else f'{t:.1f}' for t in reached)}); after"
         f" 10 s {after10:.0f} img/s = {after10 / best:.3f} of {best_name}'s {best:.0f}"),
        ("--consumer_ms=60: 1 worker, <= 1.2 cores, consumer waits < 5%",
         all(w == 1 for w in consumer_workers) and consumer_cores <= 1.2 and consumer_wait < 0.05,
         f"workers {consumer_workers}, {consumer_cores:.2f} cores, waited "
         f"{100 * consumer_wait:.1f}%"),
        ("--ram_budget under the default plan: peak RSS under it, plan never over it",
         r["peak_rss_bytes"] < ram_budget and r["planned_bytes_at_most_buffers"] <= ram_budget,
         f"peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB, at most {most_buffers} buffers "
         f"(plan {r['planned_bytes_at_most_buffers'] / 2**20:.0f} MiB) vs budget "
         f"{ram_budget / 2**20:.0f} MiB (default plan {plan['total_bytes'] / 2**20:.0f} MiB)"),
        ("data_checksum: auto = 1 worker = 2 workers", len(set(sums.values())) == 1,
         ", ".join(f"{k} {v}" for k, v in sums.items())),
    ]
    results["checks"] = [{"target": t, "pass": ok, "value": v} for t, ok, v in checks]
    lines = [f"# flowloader autotune: targets ({time.strftime('%Y-%m-%d %H:%M')}, "
             f"{os.cpu_count()} cores, {args.epochs} epochs x {args.reps} alternating reps)", "",
             "| target | result | value |", "|---|---|---|"]
    lines += [f"| {t} | {'PASS' if ok else 'FAIL'} | {v} |" for t, ok, v in checks]
    lines += ["", "Steady images/s (median of the reps, after the first epoch): " +
              ", ".join(f"{n} {v:.0f}" for n, v in steady.items()) + ".",
              "Auto ended on: " + "; ".join(
                  f"num_workers {a['num_workers']}, prefetch_batches {a['prefetch_batches']} "
                  f"({len(a['decisions'])} changes)" for a in results["throughput"]["auto_final"])
              + ".",
              f"Load average before {results['load_average_before']}, after "
              f"{results['load_average_after']} (other engineers' compiles share the 2 cores).",
              "", "Command: `/usr/bin/python3 tests/benchmarks/autotune_bench.py "
              f"--epochs={args.epochs} --reps={args.reps}`"]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "autotune.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "autotune.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\n".join(lines))
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
