#!/usr/bin/python3
"""shards_bench.py: tar shards on disk and over loopback HTTP (cache on, off) against the ImageFolder.

    /usr/bin/python3 tests/benchmarks/shards_bench.py [--reps=3] [--epochs=2]
        [--flowloader=PATH] [--max_side=256]

On the benchmark's 2000-JPEG set (the same generator and options as tune_bench.py,
cached in .bench_data/), train transform, batch 64, 2 workers, it
  1. packs the ImageFolder with `flowloader pack` (32 MB shards), and again with
     --max_side (images re-encoded to that shorter side);
  2. serves the shards with Debian's nginx on 127.0.0.1 (keep-alive, ranges);
  3. runs, alternating, --reps rounds of: the ImageFolder, the shards on disk, the same
     shards over HTTP with the block cache (http_cache_mb default: every shard admitted)
     and without it (--http_cache_mb=0: one request per member), the --max_side shards
     on disk; each run `--epochs` epochs;
  4. reports median images/s (after the first batch, from the summary JSON), time to the
     first batch, decode busy time per image, HTTP requests (nginx's access log) and CPU
     (flowloader's rusage + nginx's /proc times) per image, the CPU one request costs
     (cache off against disk), and checks the targets:
       HTTP (cache on) >= 90% of disk; shards on disk >= 100% of the ImageFolder.
Writes tests/benchmarks/results/shards.md and shards.json (every raw run). Needs a quiet
machine: other compiles on the same cores move every figure (the load average is
recorded with each run).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import resource
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(REPO, "tests", "benchmarks", "results")


def log(msg):
    print(f"[shards_bench] {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    log(" ".join(cmd))
    return subprocess.run(cmd, check=True, **kw)


def build_flowloader(work):
    run(["bazel", "build", "//runtime:flowloader"], cwd=REPO)
    # Bazel 4.2.3 has no `cquery --output=files`; bazel-bin follows the last build's
    # config, so take the default configuration's output directory itself.
    binary = os.path.join(work, "flowloader")
    shutil.copy(os.path.join(REPO, "bazel-out", "k8-fastbuild", "bin", "runtime", "flowloader"),
                binary)
    return binary


def dataset(flowloader):
    data_dir = os.path.join(REPO, ".bench_data")
    root = os.path.join(data_dir, "imagenet_like_2000_c20_q90_n7.0_s0")
    if not os.path.isdir(root):
        os.makedirs(data_dir, exist_ok=True)
        tmp = root + f".tmp{os.getpid()}"
        run([flowloader, "make-dataset", f"--out={tmp}", "--classes=20", "--images_per_class=100",
             "--min_short_side=256", "--max_short_side=512", "--quality=90", "--noise=7",
             "--seed=0"], stdout=subprocess.DEVNULL)
        os.rename(tmp, root)
    return root


def pack(flowloader, folder, out, extra):
    res = run([flowloader, "pack", f"--data={folder}", f"--out={out}", "--shard_size=32MB"] + extra,
              capture_output=True, text=True)
    log(res.stdout.strip())
    return res.stdout.strip().splitlines()[-1].split("--data=")[1].strip("'")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(root, work):
    port = free_port()
    os.makedirs(os.path.join(work, "tmp"), exist_ok=True)
    conf = os.path.join(work, "nginx.conf")
    user = "user root root;\n" if os.getuid() == 0 else ""
    with open(conf, "w") as f:
        f.write(f"""{user}daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 512; }}
http {{
  log_format request '$request_uri $http_range';
  access_log {work}/access.log request buffer=64k flush=1s;
  sendfile on;
  keepalive_requests 100000;
  client_body_temp_path {work}/tmp; proxy_temp_path {work}/tmp; fastcgi_temp_path {work}/tmp;
  uwsgi_temp_path {work}/tmp; scgi_temp_path {work}/tmp;
  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }}
}}
""")
    proc = subprocess.Popen(["/usr/sbin/nginx", "-c", conf, "-p", work])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("nginx did not start")


def proc_cpu_seconds(pid):
    """user + system CPU seconds of process `pid` and its live children (nginx's worker)."""
    total = 0.0
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def one_run(flowloader, data, epochs, work, name, extra=(), nginx=None):
    """One run's figures; `nginx` = (pid, access log) to count its requests and CPU."""
    summary = os.path.join(work, f"{name}.json")
    nginx_cpu0 = proc_cpu_seconds(nginx[0]) if nginx else 0.0
    requests0 = count_lines(nginx[1]) if nginx else 0
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    subprocess.run([flowloader, "run", f"--data={data}", f"--epochs={epochs}", "--num_workers=2",
                    "--batch_size=64", "--seed=0", "--metrics_address=", "--noprogress",
                    f"--summary_json={summary}"] + list(extra),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - t0
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    requests = 0
    nginx_cpu = 0.0
    if nginx:
        time.sleep(1.2)  # The access log flushes every second.
        requests = count_lines(nginx[1]) - requests0
        nginx_cpu = proc_cpu_seconds(nginx[0]) - nginx_cpu0
    with open(summary) as f:
        s = json.load(f)
    decode = s["stages"]["decode"]
    return {
        "variant": name,
        "images_per_second": s["images_per_second"],
        "samples": s["samples"],
        "skipped": s["skipped"],
        "seconds": s["seconds"],
        "first_batch_seconds": s["first_batch_seconds"],
        "wall_seconds": wall,
        "decode_ms_per_image": 1000.0 * decode["busy_seconds"] / max(1, decode["items"]),
        "read_ms_per_image": 1000.0 * s["stages"]["read"]["busy_seconds"] / max(1, s["stages"]["read"]["items"]),
        "loadavg_1m": os.getloadavg()[0],
        "client_cpu_seconds": client_cpu,
        "nginx_cpu_seconds": nginx_cpu,
        "requests": requests,
        "cpu_ms_per_image": 1000.0 * (client_cpu + nginx_cpu) / max(1, s["samples"]),
        "requests_per_image": requests / max(1, s["samples"]),
    }


def du(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--max_side", type=int, default=256)
    ap.add_argument("--flowloader", default="")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shards_bench.")
    flowloader = args.flowloader or build_flowloader(work)
    folder = dataset(flowloader)
    shard_dir = os.path.join(work, "shards")
    small_dir = os.path.join(work, "shards_small")
    pattern = pack(flowloader, folder, shard_dir, [])
    small = pack(flowloader, folder, small_dir, [f"--max_side={args.max_side}", "--quality=90"])
    nginx_work = os.path.join(work, "nginx")
    nginx, port = start_nginx(shard_dir, nginx_work)
    nginx_info = (nginx.pid, os.path.join(nginx_work, "access.log"))
    url = f"http://127.0.0.1:{port}/" + os.path.basename(pattern)
    # (name, data, extra flags, nginx to watch)
    variants = [("imagefolder", folder, [], None), ("shards_disk", pattern, [], None),
                ("shards_http_cache", url, [], nginx_info),
                ("shards_http_nocache", url, ["--http_cache_mb=0"], nginx_info),
                (f"shards_max_side_{args.max_side}", small, [], None)]
    runs = []
    try:
        for name, data, extra, watch in variants:  # Warm-up: page cache, nginx's open files.
            one_run(flowloader, data, 1, work, name, extra)
        for rep in range(args.reps):
            for name, data, extra, watch in variants:
                r = one_run(flowloader, data, args.epochs, work, name, extra, watch)
                r["round"] = rep
                runs.append(r)
                log(f"{name} round {rep}: {r['images_per_second']:.0f} img/s, decode "
                    f"{r['decode_ms_per_image']:.2f} ms/img, cpu {r['cpu_ms_per_image']:.3f} ms/img, "
                    f"{r['requests']} requests, load {r['loadavg_1m']:.2f}")
    finally:
        nginx.terminate()
        nginx.wait()

    def med(name, key):
        vals = [r[key] for r in runs if r["variant"] == name]
        return statistics.median(vals), min(vals), max(vals)

    names = [v[0] for v in variants]
    ips = {n: med(n, "images_per_second")[0] for n in names}
    targets = [
        ("HTTP with the block cache (nginx, loopback) >= 90% of the same shards on disk",
         ips["shards_http_cache"] / ips["shards_disk"], 0.90),
        ("shards on disk >= 100% of the ImageFolder", ips["shards_disk"] / ips["imagefolder"], 1.0),
    ]
    # What one request costs in CPU (flowloader + nginx): cache off against disk.
    extra_cpu_ms = med("shards_http_nocache", "cpu_ms_per_image")[0] - med("shards_disk", "cpu_ms_per_image")[0]
    per_request_ms = extra_cpu_ms / max(1e-9, med("shards_http_nocache", "requests_per_image")[0])
    small_name = names[4]
    saved = 1 - med(small_name, "decode_ms_per_image")[0] / med("shards_disk", "decode_ms_per_image")[0]
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "dataset": folder,
        "images": runs[0]["samples"] // args.epochs,
        "epochs": args.epochs,
        "reps": args.reps,
        "shards": {"count": len(os.listdir(shard_dir)) - 1, "bytes": du(shard_dir),
                   "max_side_bytes": du(small_dir)},
        "medians": {n: {k: med(n, k)[0] for k in ("images_per_second", "first_batch_seconds",
                                                  "decode_ms_per_image", "read_ms_per_image",
                                                  "cpu_ms_per_image", "requests_per_image",
                                                  "loadavg_1m")}
                    for n in names},
        "percent_of_disk": {n: 100 * ips[n] / ips["shards_disk"] for n in names},
        "cpu_ms_per_request": per_request_ms,
        "targets": [{"target": t, "ratio": r, "threshold": th, "pass": r >= th} for t, r, th in targets],
        "max_side_decode_saving": saved,
        "runs": runs,
    }
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "shards.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = [
        f"# Tar shards: disk, loopback HTTP, ImageFolder, --max_side ({result['date']})",
        "",
        f"`/usr/bin/python3 tests/benchmarks/shards_bench.py --reps={args.reps} --epochs={args.epochs}"
        f" --max_side={args.max_side}`: {result['images']} ImageNet-like JPEGs (tune_bench's set), "
        f"train transform, batch 64, 2 workers, 2 cores; {result['shards']['count']} shards of "
        f"32 MB ({result['shards']['bytes'] / 2**20:.1f} MiB; with --max_side="
        f"{args.max_side}: {result['shards']['max_side_bytes'] / 2**20:.1f} MiB). Medians (min-max) "
        f"of {args.reps} alternating rounds of {args.epochs} epochs.",
        "",
        f"Load average (1 min) over the runs: {min(r['loadavg_1m'] for r in runs):.2f}-"
        f"{max(r['loadavg_1m'] for r in runs):.2f}.",
        "",
        "| data | images/s | % of disk | first batch (s) | decode ms/image | read ms/image | CPU ms/image | requests/image |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in names:
        m, lo, hi = med(n, "images_per_second")
        lines.append(f"| {n} | {m:.0f} ({lo:.0f}-{hi:.0f}) | {100 * m / ips['shards_disk']:.1f}% | "
                     f"{med(n, 'first_batch_seconds')[0]:.3f} | "
                     f"{med(n, 'decode_ms_per_image')[0]:.2f} | {med(n, 'read_ms_per_image')[0]:.3f} | "
                     f"{med(n, 'cpu_ms_per_image')[0]:.3f} | {med(n, 'requests_per_image')[0]:.4f} |")
    lines += ["", "| target | measured | result |", "|---|---|---|"]
    for t in result["targets"]:
        lines.append(f"| {t['target']} | {100 * t['ratio']:.1f}% | {'PASS' if t['pass'] else 'FAIL'} |")
    lines += ["", f"CPU ms/image is flowloader's (rusage) plus, over HTTP, nginx's (/proc); one "
              f"HTTP request costs about {per_request_ms:.3f} ms of CPU (cache off against disk: "
              f"{extra_cpu_ms:.3f} ms/image more over "
              f"{med('shards_http_nocache', 'requests_per_image')[0]:.2f} requests/image)."]
    lines += ["", f"--max_side={args.max_side} re-encoding saves {100 * saved:.0f}% of decode time per "
              f"image ({med('shards_disk', 'decode_ms_per_image')[0]:.2f} -> "
              f"{med(small_name, 'decode_ms_per_image')[0]:.2f} ms) and runs at "
              f"{100 * ips[small_name] / ips['shards_disk']:.0f}% of the original shards' images/s."]
    with open(os.path.join(RESULTS, "shards.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(t["pass"] for t in result["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
