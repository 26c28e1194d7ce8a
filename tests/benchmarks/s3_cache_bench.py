#!/usr/bin/python3
"""s3_cache_bench.py: epoch 2 of s3:// through the disk cache (cache_dir) against local disk.

    /usr/bin/python3 tests/benchmarks/s3_cache_bench.py --flowloader=PATH [--images=2000]
        [--reps=3] [--out=tests/benchmarks/results/s3_cache.md]

On the generated ImageNet-like JPEGs of s3_bench.py (its data, packing, gateway and upload
helpers), batch 64, 2 workers, every other flag at its default (train transform), it runs
2-epoch runs, alternating, --reps rounds of:
  * the ImageFolder on disk, and the prefix from the loopback RADOS Gateway with a fresh
    --cache_dir (epoch 1 fills it, epoch 2 reads it);
  * the tar shards on disk, and from the gateway with a fresh --cache_dir;
and reports the median images/s of epoch 2 (samples of epoch 2 over the time between the
ends of epochs 1 and 2, from the summary JSON's epoch_end_seconds), the cache's hits and
misses, and the ratio against the disk: issue 32's target is epoch 2 from cache_dir >=
0.95x local disk. The load average is recorded with every run.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3_bench  # noqa: E402  (data, pack, upload, the gateway script)

BATCH, WORKERS = s3_bench.BATCH, s3_bench.WORKERS


def epoch2_run(flowloader, data, work, name, env, flags):
    """One 2-epoch run; images/s of epoch 2 and the cache's counters."""
    summary = os.path.join(work, f"{name}.json")
    res = subprocess.run([flowloader, "run", f"--data={data}", "--epochs=2",
                          f"--num_workers={WORKERS}", f"--batch_size={BATCH}", "--seed=0",
                          "--metrics_address=", "--noprogress", f"--summary_json={summary}",
                          *flags], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{name}: flowloader exited {res.returncode}: {res.stderr[-2000:]}")
    with open(summary) as f:
        s = json.load(f)
    ends = s["epoch_end_seconds"]
    per_epoch = s["samples"] / 2
    cache = s.get("storage", {}).get("cache", {})
    return {"images_per_second": per_epoch / max(1e-9, ends[1] - ends[0]),
            "epoch1_images_per_second": per_epoch / max(1e-9, ends[0]),
            "samples": s["samples"], "skipped": s["skipped"],
            "requests": s.get("storage", {}).get("requests", 0),
            "hits": cache.get("hits", 0), "misses": cache.get("misses", 0),
            "data_checksum": s.get("data_checksum", "")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flowloader", required=True, help="the flowloader binary (-c opt build)")
    ap.add_argument("--images", type=int, default=2000, help="JPEGs in the set (10 classes)")
    ap.add_argument("--reps", type=int, default=3, help="alternating rounds; medians reported")
    ap.add_argument("--out", default=os.path.join(s3_bench.REPO, "tests", "benchmarks",
                                                  "results", "s3_cache.md"))
    ap.add_argument("--note", default="", help="a line added to the results")
    args = ap.parse_args()
    import boto3

    flowloader = os.path.abspath(args.flowloader)
    work = tempfile.mkdtemp(prefix="s3_cache_bench.")
    folder = s3_bench.dataset(flowloader, args.images)
    shard_dir = os.path.join(work, "shards")
    pattern = s3_bench.pack(flowloader, folder, shard_dir)
    rgw = os.path.join(work, "rgw")
    s3_bench.run([s3_bench.RADOSGW, "start", rgw], stdout=subprocess.DEVNULL)
    runs = []
    try:
        with open(os.path.join(rgw, "env")) as f:
            gw = dict(line.strip().split("=", 1) for line in f if "=" in line)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=gw["RGW_ACCESS_KEY"],
                   AWS_SECRET_ACCESS_KEY=gw["RGW_SECRET_KEY"], AWS_DEFAULT_REGION="us-east-1",
                   AWS_ENDPOINT_URL=gw["RGW_ENDPOINT"], HOME=work)
        for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
            env.pop(k, None)
        client = boto3.client("s3", endpoint_url=gw["RGW_ENDPOINT"], region_name="us-east-1",
                              aws_access_key_id=gw["RGW_ACCESS_KEY"],
                              aws_secret_access_key=gw["RGW_SECRET_KEY"])
        client.create_bucket(Bucket=s3_bench.BUCKET)
        s3_bench.upload(client, folder, "train")
        s3_bench.upload(client, shard_dir, "shards")
        local_shards = os.path.join(shard_dir, pattern)
        s3_prefix = f"s3://{s3_bench.BUCKET}/train/"
        s3_shards = f"s3://{s3_bench.BUCKET}/shards/{pattern}"

        def cached(data):
            def fn(name):
                cache = tempfile.mkdtemp(prefix="cache.", dir=work)  # Cold for epoch 1.
                try:
                    return epoch2_run(flowloader, data, work, name, env,
                                      [f"--cache_dir={cache}"])
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
            return fn

        def disk(data):
            return lambda name: epoch2_run(flowloader, data, work, name, env, [])

        variants = [("folder_disk", disk(folder)), ("folder_s3_cache", cached(s3_prefix)),
                    ("shards_disk", disk(local_shards)), ("shards_s3_cache", cached(s3_shards))]
        for name, fn in variants:  # Warm-up: page cache, the gateway's caches.
            fn(name)
        for rep in range(args.reps):
            for name, fn in variants:
                r = dict(fn(name), variant=name, round=rep, loadavg_1m=os.getloadavg()[0])
                runs.append(r)
                s3_bench.log(f"{name} round {rep}: epoch 2 {r['images_per_second']:.1f} img/s "
                             f"(epoch 1 {r['epoch1_images_per_second']:.1f}), hits {r['hits']}, "
                             f"misses {r['misses']}, load {r['loadavg_1m']:.2f}")
    finally:
        subprocess.run([s3_bench.RADOSGW, "stop", rgw], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def med(name, key="images_per_second"):
        vals = [r[key] for r in runs if r["variant"] == name]
        return statistics.median(vals), min(vals), max(vals)

    same = all(len({r["data_checksum"] for r in runs if r["variant"].startswith(p)}) == 1
               for p in ("folder", "shards"))
    loads = [r["loadavg_1m"] for r in runs]
    lines = [
        f"# Epoch 2 of s3:// from the disk cache ({time.strftime('%Y-%m-%d %H:%M')})", "",
        f"`/usr/bin/python3 tests/benchmarks/s3_cache_bench.py --flowloader=PATH "
        f"--images={args.images} --reps={args.reps}`: {runs[0]['samples'] // 2} ImageNet-like "
        f"JPEGs (s3_bench.py's), batch {BATCH}, {WORKERS} workers, default flags, 2 epochs a "
        f"run, the s3:// runs with a fresh `--cache_dir` each (epoch 1 fills it from a loopback "
        f"RADOS Gateway, epoch 2 reads it); medians (min-max) of {args.reps} alternating rounds "
        f"of epoch 2's images/s. Checksums equal to the disk's: {'yes' if same else 'NO'}.", "",
        f"Load average (1 min) over the runs: {min(loads):.2f}-{max(loads):.2f} "
        f"({os.cpu_count()} cores)." + (f" {args.note}" if args.note else ""), "",
        "| data | epoch 2 images/s | epoch 1 images/s | cache hits | misses |",
        "|---|---|---|---|---|"]
    for name, _ in variants:
        m, lo, hi = med(name)
        lines.append(f"| {name} | {m:.1f} ({lo:.1f}-{hi:.1f}) | "
                     f"{med(name, 'epoch1_images_per_second')[0]:.1f} | "
                     f"{med(name, 'hits')[0]:.0f} | {med(name, 'misses')[0]:.0f} |")
    lines += ["", "| target | ratio | needed | result |", "|---|---|---|---|"]
    passed = same
    for text, num, den in [("ImageFolder epoch 2 from cache_dir / disk", "folder_s3_cache",
                            "folder_disk"),
                           ("tar shards epoch 2 from cache_dir / disk", "shards_s3_cache",
                            "shards_disk")]:
        ratio = med(num)[0] / max(1e-9, med(den)[0])
        passed &= ratio >= 0.95
        lines.append(f"| {text} | {ratio:.2f}x | >= 0.95x | {'PASS' if ratio >= 0.95 else 'FAIL'} |")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
