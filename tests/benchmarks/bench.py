#!/usr/bin/python3
# bench.py: the side-by-side benchmark driver (run it through run_benchmark.sh, which
# builds the binaries and passes --bins).
#
# One run does, in order:
#   1. dataset: generates (once) and caches an ImageNet-like ImageFolder under
#      <repo>/.bench_data/ with `flowloader make-dataset`, prints its size distribution;
#   2. warm-up: page cache, torch import, exec-time probe;
#   3. timing: --reps rounds, each round running every variant once in a fixed order
#      (A B C ... A B C ...): flowloader train/eval at num_workers 2 and 1, PyTorch
#      DataLoader train/eval, the libjpeg-turbo roofline at 2 and 1 threads, and
#      longer flowloader runs with metrics off, on, on, off while a real Prometheus
#      scrapes; QuietGate waits for quiet moments and re-runs runs that other processes
#      disturbed (the machine is shared), within a time budget;
#   4. memory: one more run per main variant with PSS sampling (untimed: see procmem.py);
#   5. quality: flowloader eval uint8 output vs torchvision's, PSNR per image;
#   6. curve (--curve): images/s over num_workers 1..nproc x batch_size 32..256;
#   7. report: report.py renders the markdown; writes results/latest.{md,json}.
# Medians over the quiet runs are reported; every raw run (discarded ones too) is kept in
# the JSON.
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import prom  # noqa: E402
import quality  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------- machine

def machine_facts():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    def git(*args):
        try:
            return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    versions = subprocess.run(
        [runners.PYTHON, "-c", "import torch, torchvision, numpy, PIL; print(torch.__version__,"
         " torchvision.__version__, numpy.__version__, PIL.__version__)"],
        capture_output=True, text=True).stdout.split()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "mem_total_gib": round(mem_kb / 2**20, 1),
        "kernel": platform.release(),
        "loadavg_start": os.getloadavg(),
        "git_commit": git("rev-parse", "--short", "HEAD"),
        "git_dirty_files": len([l for l in git("status", "--porcelain").splitlines() if l]),
        "python": sys.version.split()[0],
        "torch": versions[0] if versions else "?",
        "torchvision": versions[1] if len(versions) > 1 else "?",
        "numpy": versions[2] if len(versions) > 2 else "?",
        "pillow": versions[3] if len(versions) > 3 else "?",
    }


def cpu_busy_seconds():
    """Busy CPU seconds of the whole machine so far (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    return busy / CLK_TCK


# ---------------------------------------------------------------------------- dataset

def jpeg_size(path):
    """(width, height) from a JPEG's SOF marker, stdlib only."""
    with open(path, "rb") as f:
        data = f.read()
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h
        i += 2 + length
    return 0, 0


def percentile(values, q):
    values = sorted(values)
    if not values:
        return 0
    k = (len(values) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def dataset_stats(root):
    sizes, dims = [], []
    for cls in sorted(os.listdir(root)):
        d = os.path.join(root, cls)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            sizes.append(os.path.getsize(p))
            dims.append(jpeg_size(p))
    kb = [s / 1000 for s in sizes]
    short = [min(w, h) for w, h in dims]
    hist = {}
    for v in kb:
        b = min(int(v // 10) * 10, 150)
        hist[b] = hist.get(b, 0) + 1
    return {
        "images": len(sizes),
        "classes": len([c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c))]),
        "total_mb": round(sum(sizes) / 1e6, 1),
        "kb": {q: round(percentile(kb, p), 1) for q, p in
               [("min", 0), ("p10", .1), ("p25", .25), ("median", .5), ("p75", .75),
                ("p90", .9), ("max", 1)]},
        "kb_mean": round(statistics.mean(kb), 1) if kb else 0,
        "share_40_80kb": round(sum(1 for v in kb if 40 <= v <= 80) / max(1, len(kb)), 3),
        "short_side": {"min": min(short, default=0), "median": percentile(short, .5),
                       "max": max(short, default=0)},
        "median_megapixels": round(percentile([w * h for w, h in dims], .5) / 1e6, 3),
        "histogram_kb": {f"{b}-{b + 10}" if b < 150 else "150+": n
                         for b, n in sorted(hist.items())},
    }


def ensure_dataset(bins, args):
    classes = args.classes
    per_class = max(1, args.images // classes)
    name = (f"imagenet_like_{classes * per_class}_c{classes}_q{args.quality}"
            f"_noise{args.noise:g}_s{args.dataset_seed}")
    root = os.path.join(args.data_dir, name)
    marker = root + ".stats.json"
    if os.path.isdir(root) and os.path.exists(marker):
        log(f"dataset cached: {root}")
        with open(marker) as f:
            return root, json.load(f)
    os.makedirs(args.data_dir, exist_ok=True)
    tmp = os.path.join(args.data_dir, f".tmp-{name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    log(f"generating {classes} x {per_class} JPEGs into {root} (cached for next runs) ...")
    t0 = time.time()
    subprocess.run([os.path.join(bins, "flowloader"), "make-dataset", f"--out={tmp}",
                    f"--classes={classes}", f"--images_per_class={per_class}",
                    "--min_short_side=256", "--max_short_side=512",
                    f"--quality={args.quality}", f"--noise={args.noise}",
                    f"--seed={args.dataset_seed}"], check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(root, ignore_errors=True)
    os.rename(tmp, root)
    stats = dataset_stats(root)
    stats["generation_seconds"] = round(time.time() - t0, 1)
    stats["make_dataset_flags"] = {"quality": args.quality, "noise": args.noise,
                                   "seed": args.dataset_seed, "min_short_side": 256,
                                   "max_short_side": 512}
    with open(marker, "w") as f:
        json.dump(stats, f, indent=1)
    return root, stats


def warm_page_cache(root):
    n = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                n += len(f.read())
    return n


# ---------------------------------------------------------------------------- timing

NOISY = report.NOISY  # A run is noisy when other processes used more than this share.


class QuietGate:
    """Keeps other users' compiles out of the measurements, within a time budget.

    wait(): before a run, waits (at most per_run seconds) until the rest of the machine
    uses less than NOISY of the cores over a 0.5 s window. retry(): after a noisy run,
    says whether to discard it and run it again (at most `retries` times per run). Both
    stop once `budget` seconds (waiting plus discarded runs) are spent in the phase, so a
    busy machine makes the benchmark noisier, never endless; reset() starts a phase."""

    def __init__(self, budget=0.0, per_run=15.0, retries=2):
        self.budget, self.per_run, self.retries = budget, per_run, retries
        self.spent = 0.0        # In the current phase.
        self.spent_total = 0.0  # Over the whole benchmark.
        self.discarded = []

    def reset(self):
        self.spent = 0.0

    def _charge(self, seconds):
        self.spent += seconds
        self.spent_total += seconds

    def wait(self):
        if self.spent >= self.budget:
            return 0.0, None
        start = time.time()
        while True:
            b0, s0 = cpu_busy_seconds(), sum(os.times()[:2])
            time.sleep(0.5)
            share = (cpu_busy_seconds() - b0 - (sum(os.times()[:2]) - s0)) / (0.5 * os.cpu_count())
            waited = time.time() - start
            if share < NOISY or waited >= self.per_run or self.spent + waited >= self.budget:
                self._charge(waited)
                return waited, share

    def retry(self, run, attempt):
        if run["foreign_cpu_share"] <= NOISY or attempt >= self.retries:
            return False
        if self.spent + run["wall_seconds"] > self.budget:
            return False
        self._charge(run["wall_seconds"])
        run["discarded_as_noisy"] = True
        self.discarded.append(run)
        return True


GATE = QuietGate()


def measure_once(fn, label, **kwargs):
    """Runs fn(**kwargs) after the quiet gate; adds label, load and foreign CPU."""
    waited, share_before = GATE.wait()
    load = os.getloadavg()[0]
    busy0, self0 = cpu_busy_seconds(), sum(os.times()[:2])
    r = fn(**kwargs)
    busy = cpu_busy_seconds() - busy0
    own = sum(os.times()[:2]) - self0
    r["label"] = label
    r["loadavg_1m_before"] = load
    # CPU the rest of the machine used meanwhile (other users' compiles, Prometheus...),
    # as a share of all cores over the run: the noise indicator for this run.
    foreign = max(0.0, busy - r["cpu_seconds"] - own)
    r["foreign_cpu_share"] = foreign / (r["wall_seconds"] * os.cpu_count())
    r["harness_cpu_seconds"] = own
    r["quiet_wait_seconds"] = waited
    r["foreign_cpu_share_before"] = share_before
    brief = (f"{r['ips_after_first']:8.1f} img/s after 1st batch, "
             f"{r['ips_with_startup']:8.1f} with startup")
    if r.get("ttfb_seconds") is not None:
        brief += f", ttfb {r['ttfb_seconds']:.3f}s"
    log(f"  {label:<28} {brief}  (load {load:.2f}, foreign cpu {r['foreign_cpu_share']:.0%})")
    return r


def measure(fn, label, results, **kwargs):
    """measure_once, run again while it was noisy and the gate allows; appends the kept run."""
    attempt = 0
    while True:
        r = measure_once(fn, label, **kwargs)
        if not GATE.retry(r, attempt):
            break
        attempt += 1
        log(f"  {label}: noisy ({r['foreign_cpu_share']:.0%} foreign CPU), discarded; again")
    r["attempt"] = attempt
    results.append(r)
    return r


def main_variants(bins, data, metrics_address, metrics_epochs):
    """The variants of one timing round, in run order: (label, fn, kwargs)."""
    fl, tc, rl = runners.run_flowloader, runners.run_torch, runners.run_roofline
    return [
        ("flowloader train w2", fl, dict(bins=bins, data=data, transform="train")),
        ("pytorch train w2", tc, dict(data=data, transform="train")),
        ("flowloader eval w2", fl, dict(bins=bins, data=data, transform="eval")),
        ("pytorch eval w2", tc, dict(data=data, transform="eval")),
        ("roofline t2", rl, dict(bins=bins, data=data, threads=2)),
        ("flowloader train w2 x3ep", fl, dict(bins=bins, data=data, transform="train",
                                              epochs=3)),
        ("flowloader eval w2 x3ep", fl, dict(bins=bins, data=data, transform="eval", epochs=3)),
        ("flowloader train w1", fl, dict(bins=bins, data=data, transform="train", num_workers=1)),
        ("flowloader eval w1", fl, dict(bins=bins, data=data, transform="eval", num_workers=1)),
        ("roofline t1", rl, dict(bins=bins, data=data, threads=1)),
    ] + metrics_pair(bins, data, metrics_address, metrics_epochs)


def metrics_pair(bins, data, metrics_address, epochs):
    """off, on, on, off (ABBA cancels a linear drift in machine load within a round)."""
    off = (f"flowloader train w2 x{epochs}ep metrics off", runners.run_flowloader,
           dict(bins=bins, data=data, transform="train", epochs=epochs))
    on = (f"flowloader train w2 x{epochs}ep metrics on", runners.run_flowloader,
          dict(bins=bins, data=data, transform="train", epochs=epochs,
               metrics_address=metrics_address))
    return [off, on, on, off]


def prometheus_facts(p, window_seconds):
    w = f"[{int(window_seconds) + 5}s]"
    q = lambda e: p.scalar(e, default=float("nan"))  # noqa: E731
    return {
        "scrapes_attempted": q(f'count_over_time(up{{job="flowloader"}}{w})'),
        "scrapes_ok": q(f'sum_over_time(up{{job="flowloader"}}{w})'),
        "flowloader_samples_total_max": q(f"max(max_over_time(flowloader_samples_total{w}))"),
        "flowloader_series_points": q(f"sum(count_over_time(flowloader_samples_total{w}))"),
        "scrape_duration_max_seconds": q(
            f'max_over_time(scrape_duration_seconds{{job="flowloader"}}{w})'),
        "scrape_samples_max": q(f'max_over_time(scrape_samples_scraped{{job="flowloader"}}{w})'),
    }


def run_quality(bins, data, count, workdir):
    list_dir = os.path.join(workdir, "quality")
    os.makedirs(list_dir, exist_ok=True)
    list_path = os.path.join(list_dir, "subset.txt")
    quality.write_subset_list(data, count, list_path)
    prefix = os.path.join(list_dir, "flowloader_eval")
    subprocess.run([os.path.join(bins, "dump_batches"), f"--data={list_path}",
                    f"--out={prefix}", "--transform=eval", "--image_size=224"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return quality.compare(prefix + ".npy", prefix + ".keys.txt", list_dir)


def run_curve(bins, data, reps, torch_reps, results):
    nproc = os.cpu_count()
    for bs in (32, 64, 128, 256):
        for w in range(1, nproc + 1):
            for rep in range(max(reps, torch_reps)):
                if rep < reps:
                    measure(runners.run_flowloader, f"curve flowloader train w{w} b{bs}",
                            results, bins=bins, data=data, transform="train",
                            num_workers=w, batch_size=bs)
                    measure(runners.run_flowloader, f"curve flowloader eval w{w} b{bs}",
                            results, bins=bins, data=data, transform="eval",
                            num_workers=w, batch_size=bs)
                if rep < torch_reps:
                    measure(runners.run_torch, f"curve pytorch train w{w} b{bs}", results,
                            data=data, transform="train", num_workers=w, batch_size=bs)


# ---------------------------------------------------------------------------- main

def curve_file_markdown(doc):
    """results/curve.md: a header with the machine facts, then the curve table."""
    f, ds, a = doc["facts"], doc["dataset"], doc["args"]
    return (f"# flowloader benchmark curve\n\n{f['date']} · {f['nproc']} cores "
            f"({f['cpu_model']}) · load average at start "
            f"{', '.join(f'{x:.2f}' for x in f['loadavg_start'])} · commit "
            f"{f['git_commit']} · dataset {ds['images']} JPEGs, median {ds['kb']['median']} KB "
            f"· flowloader {a['curve_reps']} runs per point (median), PyTorch "
            f"{a['curve_torch_reps']}\n\n" + report.curve_markdown(doc))


def rerender(json_path, out_prefix):
    """Rebuilds the markdown (and JSON) from a previous run's raw runs."""
    with open(json_path) as f:
        old = json.load(f)
    curve_runs = []
    curve_path = os.path.join(os.path.dirname(json_path), "curve.json")
    if old.get("curve") and os.path.exists(curve_path):
        with open(curve_path) as f:
            curve_runs = json.load(f)["curve_runs"]
    doc = report.build(facts=old["facts"], dataset=old["dataset"], data_root=old["data_root"],
                       runs=old["runs"], discarded_runs=old.get("discarded_noisy_runs", []),
                       memory_runs=old["memory_runs"], quality=old["quality"],
                       prometheus=old["prometheus"], curve_runs=curve_runs, args=old["args"])
    md = report.markdown(doc)
    with open(out_prefix + ".md", "w") as f:
        f.write(md)
    with open(out_prefix + ".json", "w") as f:
        json.dump(doc, f, indent=1, default=str)
    if curve_runs:
        with open(os.path.join(os.path.dirname(out_prefix), "curve.md"), "w") as f:
            f.write(curve_file_markdown(doc))
    print(md)
    return 0


def main():
    p = argparse.ArgumentParser(description="flowloader side-by-side benchmark")
    p.add_argument("--bins", help="dir with flowloader, jpeg_roofline, dump_batches (required "
                   "unless --rerender)")
    p.add_argument("--rerender", metavar="JSON",
                   help="only rebuild the report from a previous run's JSON (to --out)")
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--classes", type=int, default=20)
    p.add_argument("--quality", type=int, default=90, help="make-dataset JPEG quality")
    p.add_argument("--noise", type=float, default=7.0, help="make-dataset noise (file size)")
    p.add_argument("--dataset_seed", type=int, default=1)
    p.add_argument("--data_dir", default=os.path.join(REPO, ".bench_data"))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quiet_budget", type=float, default=180,
                   help="seconds per phase (timing rounds; curve) to spend waiting for a quiet "
                        "machine and re-running noisy runs (0 = never)")
    p.add_argument("--noisy_retries", type=int, default=3,
                   help="times a run disturbed by other processes is discarded and re-run")
    p.add_argument("--metrics_epochs", type=int, default=4,
                   help="epochs of the metrics off/on pair (longer runs, several scrapes)")
    p.add_argument("--quality_images", type=int, default=200)
    p.add_argument("--curve", action="store_true", help="also run the workers x batch curve")
    p.add_argument("--curve_reps", type=int, default=3)
    p.add_argument("--curve_torch_reps", type=int, default=1)
    p.add_argument("--no_prometheus", action="store_true")
    p.add_argument("--out", default=os.path.join(HERE, "results", "latest"),
                   help="output prefix: PREFIX.md and PREFIX.json")
    p.add_argument("--build_info", default="", help="how the binaries were built (recorded)")
    args = p.parse_args()
    if args.rerender:
        return rerender(args.rerender, args.out)
    if not args.bins:
        p.error("--bins is required (run_benchmark.sh passes it)")

    t_start = time.time()
    GATE.budget, GATE.retries = args.quiet_budget, args.noisy_retries
    facts = machine_facts()
    facts["build"] = args.build_info
    log(f"machine: {facts['nproc']} cores ({facts['cpu_model']}), load {facts['loadavg_start']}")
    data, ds = ensure_dataset(args.bins, args)
    log(f"dataset: {ds['images']} images in {ds['classes']} classes, {ds['total_mb']} MB; "
        f"KB {ds['kb']}; {ds['share_40_80kb']:.0%} within 40-80 KB; short side "
        f"{ds['short_side']}")
    for bucket, n in ds["histogram_kb"].items():
        log(f"    {bucket:>8} KB {n:5d} {'#' * max(1, round(60 * n / ds['images'])) if n else ''}")
    if not 40 <= ds["kb"]["median"] <= 80:
        log(f"WARNING: median file size {ds['kb']['median']} KB is outside 40-80 KB; "
            "adjust --noise / --quality")

    log("warm-up: page cache, torch import, exec probe")
    warm_page_cache(data)
    subprocess.run([runners.PYTHON, "-c", "import torch, torchvision"], check=True)
    runners.FLOWLOADER_EXEC_SECONDS = runners.run_exec_probe(args.bins)
    log(f"  flowloader exec+exit probe: {runners.FLOWLOADER_EXEC_SECONDS * 1e3:.1f} ms")
    runners.run_flowloader(args.bins, data, transform="train")
    runners.run_roofline(args.bins, data)

    runs = []
    metrics_port = prom.free_port()
    metrics_address = f"127.0.0.1:{metrics_port}"
    prom_server, prom_info = None, {"enabled": not args.no_prometheus}
    if not args.no_prometheus:
        prom_server = prom.Prometheus(target=metrics_address)
        prom_server.start()
        log(f"prometheus ready on 127.0.0.1:{prom_server.port}, scraping {metrics_address} "
            "every 1s")
    loop_start = time.time()
    prom_cpu0 = prom_server.cpu_seconds() if prom_server else 0.0
    try:
        for rep in range(args.reps):
            log(f"round {rep + 1}/{args.reps}")
            for label, fn, kw in main_variants(args.bins, data, metrics_address,
                                               args.metrics_epochs):
                r = measure(fn, label, runs, **kw)
                r["rep"] = rep
        if prom_server:
            time.sleep(1.5)  # Let the last scrape land.
            prom_info.update(prometheus_facts(prom_server, time.time() - loop_start))
            prom_info["prometheus_cpu_seconds"] = prom_server.cpu_seconds() - prom_cpu0
            prom_info["loop_seconds"] = time.time() - loop_start
            on_seconds = sum(r["wall_seconds"] for r in runs if r.get("metrics"))
            prom_info["metrics_on_wall_seconds"] = on_seconds
            log(f"  prometheus: {prom_info['scrapes_ok']:.0f} successful scrapes of "
                f"{prom_info['scrapes_attempted']:.0f} attempted (metrics-on runs lasted "
                f"{on_seconds:.1f} s), flowloader_samples_total max "
                f"{prom_info['flowloader_samples_total_max']}")
    finally:
        if prom_server:
            prom_server.stop()

    scrape = runners.run_scrape_cost(args.bins, data, ds["images"], prom.free_port())
    # At 1 scrape/s, the share of the 2 workers' cores one scrape per second costs.
    scrape["share_of_workers_at_1hz"] = scrape["cpu_ms_per_scrape"] / 1e3 / 2
    prom_info["scrape_cost"] = scrape
    log(f"  direct scrape cost: {scrape['cpu_ms_per_scrape']:.2f} ms CPU per scrape of "
        f"{scrape['bytes_per_scrape']} bytes ({scrape['share_of_workers_at_1hz']:.3%} of 2 "
        "cores at 1 scrape/s)")

    log("memory: one PSS-sampled run per main variant (untimed)")
    memory_runs = []
    variants = main_variants(args.bins, data, "", 1)
    # fl/pt train/eval w2, and a 3-epoch train run: its seek indexes grow in epoch 1.
    for label, fn, kw in variants[:4] + [v for v in variants if v[0] == "flowloader train w2 x3ep"]:
        measure(fn, label + " [pss]", memory_runs, pss=True, **kw)

    log(f"quality: flowloader eval uint8 vs torchvision Resize+CenterCrop on "
        f"{args.quality_images} images")
    workdir = os.path.join(args.data_dir, "work")
    shutil.rmtree(workdir, ignore_errors=True)
    qual = run_quality(args.bins, data, args.quality_images, workdir)
    log(f"  PSNR mean {qual['psnr_mean_db']:.2f} dB, min {qual['psnr_min_db']:.2f} dB, "
        f"max |diff| {qual['max_abs_pixel_diff']}")

    curve_runs = []
    if args.curve:
        log("curve: num_workers 1..nproc x batch_size 32..256")
        GATE.reset()
        run_curve(args.bins, data, args.curve_reps, args.curve_torch_reps, curve_runs)

    facts["loadavg_end"] = os.getloadavg()
    facts["quiet_seconds_spent"] = round(GATE.spent_total, 1)
    facts["noisy_runs_discarded"] = len(GATE.discarded)
    facts["benchmark_seconds"] = round(time.time() - t_start, 1)
    doc = report.build(facts=facts, dataset=ds, data_root=data, runs=runs,
                       discarded_runs=GATE.discarded,
                       memory_runs=memory_runs, quality=qual, prometheus=prom_info,
                       curve_runs=curve_runs, args=vars(args))
    md = report.markdown(doc)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".md", "w") as f:
        f.write(md)
    with open(args.out + ".json", "w") as f:
        json.dump(doc, f, indent=1, default=str)
    if curve_runs:
        curve_prefix = os.path.join(os.path.dirname(args.out), "curve")
        with open(curve_prefix + ".md", "w") as f:
            f.write(curve_file_markdown(doc))
        with open(curve_prefix + ".json", "w") as f:
            json.dump({"facts": facts, "curve": doc["curve"], "curve_runs": curve_runs}, f,
                      indent=1, default=str)
    print()
    print(md)
    log(f"wrote {args.out}.md and {args.out}.json ({facts['benchmark_seconds']} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
