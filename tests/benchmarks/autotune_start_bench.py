#!/usr/bin/python3
"""autotune_start_bench.py: the defaults (num_workers: auto) against fixed settings on short runs.

    /usr/bin/python3 tests/benchmarks/autotune_start_bench.py [--reps=7] [--epochs=2]
        [--flowloader=PATH] [--sources=imagefolder,shards_http]

On the benchmark's 2000-JPEG set (tune_bench's generator, cached in .bench_data/), train
transform, batch 64, it runs `--epochs`-epoch runs of each configuration (fixed w1p3,
w2p2, w2p3, w2p4 and `auto`: no num_workers or prefetch_batches flag, the defaults) on
each source: the ImageFolder on disk, its tar shards on disk and over HTTP (`flowloader
pack`, 32 MB shards, served by Debian's nginx on 127.0.0.1, as shards_bench.py does).
Configurations and sources alternate within every round (the order rotates per round).

Per run: images/s over the whole run (samples / the last epoch's end, from before Create;
what a short job sees), time to the first batch (the summary's, from main()), CPU ms per
image (the child's rusage). Targets, per source, on medians: auto's images/s >= 95% of
the best fixed configuration's, and auto's first batch within 10% of that
configuration's; and a consumer one worker keeps up with (--consumer_ms=120: 533 img/s,
under a quarter of one worker on a quiet machine; 3 epochs from disk, 3 runs) ends every
run at 1 worker. Writes
tests/benchmarks/results/autotune_start.{md,csv,json}; the load
average is recorded with every run (other compiles on the same cores move every figure).
"""
import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import shards_bench

REPO = shards_bench.REPO
RESULTS = shards_bench.RESULTS
FIXED = [(1, 3), (2, 2), (2, 3), (2, 4)]


def log(msg):
    print(f"[autotune_start_bench] {msg}", file=sys.stderr, flush=True)


def configs():
    named = {f"w{w}p{b}": [f"--num_workers={w}", f"--prefetch_batches={b}"] for w, b in FIXED}
    named["auto"] = []  # The defaults: num_workers and prefetch_batches auto.
    return named


def one_run(flowloader, data, flags, epochs, work):
    summary = os.path.join(work, "summary.json")
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([flowloader, "run", f"--data={data}", f"--epochs={epochs}", "--batch_size=64",
                    "--seed=0", "--metrics_address=", "--noprogress",
                    f"--summary_json={summary}"] + flags,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    with open(summary) as f:
        s = json.load(f)
    auto = s.get("autotune", {})
    return {"images_per_second": s["samples"] / s["epoch_end_seconds"][-1],
            "final_workers": auto.get("num_workers", s["num_workers"]),
            "first_batch_seconds": s["first_batch_seconds"],
            "cpu_ms_per_image": 1000.0 * cpu / max(1, s["samples"]),
            "num_workers": s["num_workers"], "decisions": len(auto.get("decisions", [])),
            "loadavg_1m": os.getloadavg()[0]}


def median(runs, source, config, key):
    return statistics.median(r[key] for r in runs if r["source"] == source and r["config"] == config)


def summarize(runs, sources, names):
    table, checks = [], []
    for source in sources:
        fixed = [n for n in names if n != "auto"]
        best = max(fixed, key=lambda n: median(runs, source, n, "images_per_second"))
        best_ips = median(runs, source, best, "images_per_second")
        best_first = median(runs, source, best, "first_batch_seconds")
        for n in names:
            table.append({"source": source, "config": n,
                          **{k: median(runs, source, n, k) for k in
                             ("images_per_second", "first_batch_seconds", "cpu_ms_per_image")},
                          "of_best": median(runs, source, n, "images_per_second") / best_ips})
        auto_ips = median(runs, source, "auto", "images_per_second")
        auto_first = median(runs, source, "auto", "first_batch_seconds")
        checks.append({"target": f"{source}: auto images/s >= 95% of the best fixed ({best})",
                       "value": f"{auto_ips:.0f} vs {best_ips:.0f} = {auto_ips / best_ips:.3f}",
                       "pass": auto_ips >= 0.95 * best_ips})
        checks.append({"target": f"{source}: auto first batch within 10% of {best}'s",
                       "value": f"{auto_first:.3f} s vs {best_first:.3f} s = "
                                f"{auto_first / best_first:.3f}",
                       "pass": auto_first <= 1.10 * best_first})
    return table, checks


def write(args, runs, table, checks, loads):
    os.makedirs(RESULTS, exist_ok=True)
    base = os.path.join(RESULTS, "autotune_start")
    with open(base + ".json", "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "epochs": args.epochs,
                   "reps": args.reps, "table": table, "checks": checks, "runs": runs}, f, indent=1)
    with open(base + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "config", "images_per_second", "of_best", "first_batch_seconds",
                    "cpu_ms_per_image"])
        for t in table:
            w.writerow([t["source"], t["config"], f"{t['images_per_second']:.0f}",
                        f"{t['of_best']:.3f}", f"{t['first_batch_seconds']:.3f}",
                        f"{t['cpu_ms_per_image']:.3f}"])
    lines = [f"# Defaults (autotune) against fixed settings, {args.epochs}-epoch runs "
             f"({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"`/usr/bin/python3 tests/benchmarks/autotune_start_bench.py --reps={args.reps} "
             f"--epochs={args.epochs}`: 2000 JPEGs, train, batch 64, {os.cpu_count()} cores; "
             f"medians of {args.reps} alternating rounds; load average (1 min) over the runs "
             f"{min(loads):.2f}-{max(loads):.2f}. images/s: samples over the whole run "
             f"(from before Create); first batch: from main(). Every figure: "
             f"[autotune_start.csv](autotune_start.csv).", "",
             "| target | measured | result |", "|---|---|---|"]
    lines += [f"| {c['target']} | {c['value']} | {'PASS' if c['pass'] else 'FAIL'} |"
              for c in checks]
    lines += ["", "| source | config | images/s | of the best fixed | first batch (s) | CPU ms/image |",
              "|---|---|---:|---:|---:|---:|"]
    lines += [f"| {t['source']} | {t['config']} | {t['images_per_second']:.0f} | {t['of_best']:.3f} | "
              f"{t['first_batch_seconds']:.3f} | {t['cpu_ms_per_image']:.3f} |" for t in table]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--flowloader", default="")
    ap.add_argument("--sources", default="imagefolder,shards_disk,shards_http")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="autotune_start_bench.")
    flowloader = args.flowloader or shards_bench.build_flowloader(work)
    folder = shards_bench.dataset(flowloader)
    pattern = shards_bench.pack(flowloader, folder, os.path.join(work, "shards"), [])
    nginx, port = shards_bench.start_nginx(os.path.join(work, "shards"),
                                           os.path.join(work, "nginx"))
    data = {"imagefolder": folder, "shards_disk": pattern,
            "shards_http": f"http://127.0.0.1:{port}/" + os.path.basename(pattern)}
    sources = args.sources.split(",")
    named = configs()
    names = list(named)
    runs = []
    try:
        for source in sources:  # Warm-up: page cache, nginx's open files.
            one_run(flowloader, data[source], [], 1, work)
        for rep in range(args.reps):
            for source in sources:
                order = names[rep % len(names):] + names[:rep % len(names)]
                for n in order:
                    r = one_run(flowloader, data[source], named[n], args.epochs, work)
                    r.update(source=source, config=n, round=rep)
                    runs.append(r)
                    log(f"round {rep} {source} {n}: {r['images_per_second']:.0f} img/s, first "
                        f"batch {r['first_batch_seconds']:.3f} s, load {r['loadavg_1m']:.2f}")
    finally:
        nginx.terminate()
        nginx.wait()
    table, checks = summarize(runs, sources, names)
    slow = [one_run(flowloader, folder, ["--consumer_ms=120"], 3, work) for _ in range(3)]
    workers = [r["final_workers"] for r in slow]
    checks.append({"target": "--consumer_ms=120 (consumer-bound): auto ends at 1 worker",
                   "value": f"final num_workers {workers}",
                   "pass": all(w == 1 for w in workers)})
    runs += [dict(r, source="imagefolder", config="auto --consumer_ms=120", round=i)
             for i, r in enumerate(slow)]
    write(args, runs, table, checks, [r["loadavg_1m"] for r in runs])
    return 0 if all(c["pass"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
