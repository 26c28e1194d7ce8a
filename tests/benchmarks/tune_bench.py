#!/usr/bin/python3
"""tune_bench.py: `flowloader tune` against `flowloader tune --grid`, and tune's other targets.

    /usr/bin/python3 tests/benchmarks/tune_bench.py [--trial_seconds=2] [--reps=3]

On the benchmark's 2000-JPEG set (the same generator and options as bench.py, cached in
.bench_data/), train transform, it measures:
  1. the hill climb and the grid with the same trial length; the wall time of each;
  2. both choices re-measured side by side (best.yaml runs, alternating, `--reps` each,
     median images/s): tune's best must be within 5% of the grid's, in 20% of its time;
  3. --consumer_ms=60 (batch 64): tune picks 1 worker and the consumer waits < 5%;
  4. a --ram_budget below what the default configuration plans: best.yaml's measured
     peak RSS (wait4 of the child) stays under it;
  5. under `taskset -c 0`, budgets.cpu is 1.
Writes tests/benchmarks/results/tune.md and tune.json. Needs a quiet machine: other
compiles on the same cores move every figure.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(msg):
    print(f"[tune_bench] {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    log(" ".join(cmd))
    return subprocess.run(cmd, check=True, **kw)


def dataset(flowloader, data_dir):
    root = os.path.join(data_dir, "imagenet_like_2000_c20_q90_n7.0_s0")
    if not os.path.isdir(root):
        os.makedirs(data_dir, exist_ok=True)
        tmp = root + f".tmp{os.getpid()}"
        run([flowloader, "make-dataset", f"--out={tmp}", "--classes=20", "--images_per_class=100",
             "--min_short_side=256", "--max_short_side=512", "--quality=90", "--noise=7",
             "--seed=0"], stdout=subprocess.DEVNULL)
        os.rename(tmp, root)
    return root


def tune(flowloader, data, out, *extra, prefix=()):
    t0 = time.time()
    run([*prefix, flowloader, "tune", f"--data={data}", f"--out={out}",
         *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - t0
    with open(os.path.join(out, "tune.json")) as f:
        result = json.load(f)
    result["wall_seconds"] = wall
    return result


def run_spec(flowloader, spec, epochs=3):
    """Images/s of one best.yaml run (after its first batch) and the child's peak RSS."""
    with tempfile.NamedTemporaryFile(suffix=".json") as summary:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        proc = subprocess.Popen([flowloader, "run", f"--spec={spec}", f"--epochs={epochs}",
                                 "--metrics_address=", "--progress=false",
                                 f"--summary_json={summary.name}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, spec
        with open(summary.name) as f:
            s = json.load(f)
    steady = s["seconds"] - s["first_batch_seconds"]
    return {"images_per_second": s["samples"] / s["seconds"],
            "steady_images_per_second": s["samples"] / max(steady, 1e-9),
            "peak_rss_bytes": usage.ru_maxrss * 1024}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--flowloader", default=os.path.join(REPO, "bazel-bin/runtime/flowloader"))
    p.add_argument("--data_dir", default=os.path.join(REPO, ".bench_data"))
    p.add_argument("--trial_seconds", type=float, default=2.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=os.path.join(REPO, "tests/benchmarks/results"))
    args = p.parse_args()
    data = dataset(args.flowloader, args.data_dir)
    work = tempfile.mkdtemp(prefix="tune_bench_")
    trial = f"--trial_seconds={args.trial_seconds}"
    results = {"trial_seconds": args.trial_seconds, "data": data}

    climb = tune(args.flowloader, data, f"{work}/climb", trial, "--time_budget=600")
    grid = tune(args.flowloader, data, f"{work}/grid", trial, "--grid", "--time_budget=3600")
    rounds = {"climb": [], "grid": []}
    for _ in range(args.reps):  # Alternating, so drift hits both alike.
        for name in ("climb", "grid"):
            rounds[name].append(run_spec(args.flowloader, f"{work}/{name}/best.yaml"))
    med = {n: statistics.median(r["steady_images_per_second"] for r in rounds[n]) for n in rounds}
    results["search"] = {
        "climb": {"best": climb["best"], "trials": len(climb["trials"]),
                  "wall_seconds": climb["wall_seconds"]},
        "grid": {"best": grid["best"], "trials": len(grid["trials"]),
                 "wall_seconds": grid["wall_seconds"]},
        "remeasured_images_per_second": med,
        "best_ratio": med["climb"] / med["grid"],
        "time_ratio": climb["wall_seconds"] / grid["wall_seconds"]}

    consumer = tune(args.flowloader, data, f"{work}/consumer", trial, "--consumer_ms=60",
                    "--batch_size=64", "--time_budget=600")
    results["consumer"] = consumer["best"]

    # A RAM budget under what the default configuration (batch 64, prefetch 3) plans: its
    # plan less a quarter of its batch pool (the seek index is planned at its whole budget, so a
    # cut of the total alone could leave no pool that fits).
    plan = json.loads(subprocess.run([args.flowloader, "plan", f"--data={data}", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    ram_budget = plan["total_bytes"] - plan["items"]["batch_pool"]["bytes"] // 4
    ram = tune(args.flowloader, data, f"{work}/ram", trial, f"--ram_budget={ram_budget}",
               "--time_budget=600")
    measured = run_spec(args.flowloader, f"{work}/ram/best.yaml", epochs=2)
    results["ram"] = {"default_plan_bytes": plan["total_bytes"], "ram_budget_bytes": ram_budget,
                      "best": ram["best"], "best_yaml_peak_rss_bytes": measured["peak_rss_bytes"],
                      "not_tried": len(ram["not_tried"])}

    one_cpu = tune(args.flowloader, data, f"{work}/taskset", trial, "--time_budget=15",
                   prefix=("taskset", "-c", "0"))
    results["taskset_cpu_budget"] = one_cpu["budgets"]["cpu"]

    s = results["search"]
    checks = [
        ("tune's best within 5% of the grid's (re-measured, alternating)", s["best_ratio"] >= 0.95,
         f"{s['best_ratio']:.3f} ({med['climb']:.0f} vs {med['grid']:.0f} img/s)"),
        ("tune's wall time <= 20% of the grid's", s["time_ratio"] <= 0.20,
         f"{s['time_ratio']:.3f} ({s['climb']['wall_seconds']:.0f} s, {s['climb']['trials']} "
         f"trials vs {s['grid']['wall_seconds']:.0f} s, {s['grid']['trials']} trials)"),
        ("--consumer_ms=60: 1 worker, consumer waits < 5%",
         results["consumer"]["num_workers"] == 1 and
         results["consumer"]["consumer_wait_fraction"] < 0.05,
         f"{results['consumer']['num_workers']} workers, waited "
         f"{100 * results['consumer']['consumer_wait_fraction']:.1f}%"),
        ("--ram_budget under the default plan: best.yaml's peak RSS under it",
         results["ram"]["best_yaml_peak_rss_bytes"] < ram_budget,
         f"{results['ram']['best_yaml_peak_rss_bytes'] / 2**20:.0f} MiB vs budget "
         f"{ram_budget / 2**20:.0f} MiB (default plan {plan['total_bytes'] / 2**20:.0f} MiB)"),
        ("taskset -c 0: budgets.cpu is 1", results["taskset_cpu_budget"] == 1,
         str(results["taskset_cpu_budget"])),
    ]
    results["checks"] = [{"target": t, "pass": ok, "value": v} for t, ok, v in checks]
    lines = [f"# flowloader tune: targets ({time.strftime('%Y-%m-%d %H:%M')}, "
             f"{os.cpu_count()} cores, trial {args.trial_seconds} s)", "",
             "| target | result | value |", "|---|---|---|"]
    lines += [f"| {t} | {'PASS' if ok else 'FAIL'} | {v} |" for t, ok, v in checks]
    b, g = s["climb"]["best"], s["grid"]["best"]
    lines += ["", f"Hill climb chose num_workers {b['num_workers']}, batch_size {b['batch_size']}, "
              f"prefetch_batches {b['prefetch_batches']}; the grid chose num_workers "
              f"{g['num_workers']}, batch_size {g['batch_size']}, prefetch_batches "
              f"{g['prefetch_batches']}.", "",
              "Command: `/usr/bin/python3 tests/benchmarks/tune_bench.py "
              f"--trial_seconds={args.trial_seconds} --reps={args.reps}`"]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "tune.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "tune.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\n".join(lines))
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
