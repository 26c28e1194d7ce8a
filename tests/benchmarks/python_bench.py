#!/usr/bin/python3
"""python_bench.py: the Python loop over flowloader.DataLoader, side by side with the CLI
and with PyTorch's DataLoader, on the same JPEGs and the same cores (issue 15's targets).

    tests/benchmarks/python_bench.py [--images=2000] [--rounds=3] [--epochs=3]

Builds (-c opt) the module and the CLI, makes an ImageNet-like dataset once
(`flowloader make-dataset`, cached under /tmp/flowloader_python_bench), then alternates
rounds of three runs with batch 64, num_workers 2, transform train at 224:
  python  this process: for images, labels in DataLoader(...) over --epochs epochs,
          touching each batch (images.sum()); images/s over the whole loop;
          time to first batch = DataLoader(...) to the first batch in hand;
  cli     `flowloader run` over the same epochs: its summary's images_per_second;
  torch   torch_loader.py (ImageFolder + RandomResizedCrop/flip/ToTensor/Normalize,
          DataLoader(num_workers=2)), one epoch from its spawn: images/s after import.
Medians over the rounds. Targets: python >= 95% of cli, python >= 5x torch, first batch
<= 0.2 s. Writes results/python.json (every run) and results/python.md (the table).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = "/tmp/flowloader_python_bench"


def bazel_opt_bin():
    subprocess.run(["bazel", "build", "-c", "opt", "//python:flowloader", "//runtime:flowloader"],
                   cwd=ROOT, check=True)
    # bazel-bin follows the last build's config, which another build may have changed.
    return os.path.join(ROOT, "bazel-out", "k8-opt", "bin")


def dataset(cli, images):
    out = os.path.join(CACHE, f"data_{images}")
    if not os.path.isdir(out):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run([cli, "make-dataset", f"--out={out}", "--classes=10",
                        f"--images_per_class={images // 10}"], check=True)
    return out


def run_python(flowloader, data, epochs):
    start = time.monotonic()
    loader = flowloader.DataLoader(data, batch_size=64, num_workers=2, image_size=224)
    first = None
    samples = 0
    for _ in range(epochs):
        for images, labels in loader:
            if first is None:
                first = time.monotonic() - start
            images.sum()  # Touch the batch, as a training step would read it.
            samples += images.shape[0]
    wall = time.monotonic() - start
    stats = loader.stats()
    loader.close()
    return {"images_per_second": samples / wall, "first_batch_seconds": first,
            "samples": samples, "seconds": wall,
            "consumer_wait_share": stats["consumer_wait_seconds"] / stats["seconds"]
            if "consumer_wait_seconds" in stats and stats["seconds"] > 0 else None}


def run_cli(cli, data, epochs, tmp):
    summary = os.path.join(tmp, "cli_summary.json")
    subprocess.run([cli, "run", f"--data={data}", "--batch_size=64", "--num_workers=2",
                    f"--epochs={epochs}", "--metrics_address=", "--progress=false",
                    f"--summary_json={summary}"], check=True, capture_output=True)
    with open(summary) as f:
        s = json.load(f)
    return {"images_per_second": s["images_per_second"], "samples": s["samples"],
            "seconds": s["seconds"], "first_batch_seconds": s["first_batch_seconds"]}


def run_torch(data):
    env = dict(os.environ, BENCH_SPAWN_TIME=repr(time.time()))
    out = subprocess.run([sys.executable, os.path.join(HERE, "torch_loader.py"),
                          f"--data={data}", "--transform=train", "--num_workers=2",
                          "--batch_size=64"], check=True, capture_output=True, text=True,
                         env=env).stdout
    r = json.loads(out.strip().splitlines()[-1])
    seconds = r["t_end"] - r["t_imported"]
    return {"images_per_second": r["samples"] / seconds, "samples": r["samples"],
            "seconds": seconds, "first_batch_seconds": r["t_first"] - r["t_imported"]}


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def report(results):
    p, c, t = (results["medians"][k] for k in ("python", "cli", "torch"))
    first = results["medians"]["python_first_batch_seconds"]
    rows = [
        ("Python loop vs the CLI", f"{p:.0f} vs {c:.0f} img/s = {p / c:.1%}", ">= 95%",
         p >= 0.95 * c),
        ("Python loop vs torch DataLoader(num_workers=2)", f"{p:.0f} vs {t:.0f} img/s = "
         f"{p / t:.1f}x", ">= 5x", p >= 5 * t),
        ("time to the first batch (DataLoader() to batch)", f"{first:.3f} s", "<= 0.2 s",
         first <= 0.2),
    ]
    lines = [
        "# Python module benchmark",
        "",
        f"`{results['command']}` on {results['date']}: {results['images']} JPEGs "
        f"(make-dataset, 256-512 px), batch 64, num_workers 2, transform train 224, "
        f"{results['cpus']} CPUs; medians of {results['rounds']} alternating rounds "
        f"(python and cli over {results['epochs']} epochs, torch over 1).",
        "",
        "| target | measured | wanted | |",
        "|---|---|---|---|",
    ]
    for name, measured, wanted, ok in rows:
        lines.append(f"| {name} | {measured} | {wanted} | {'PASS' if ok else 'FAIL'} |")
    share = results["medians"].get("python_consumer_wait_share")
    if share is not None:
        lines += ["", f"The Python loop waited for batches {share:.0%} of its time "
                      "(it does no training step: the loader is the bottleneck by design)."]
    return "\n".join(lines) + "\n", all(ok for *_, ok in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    bin_dir = bazel_opt_bin()
    cli = os.path.join(bin_dir, "runtime", "flowloader")
    sys.path.insert(0, os.path.join(bin_dir, "python"))
    import flowloader
    data = dataset(cli, args.images)
    runs = {"python": [], "cli": [], "torch": []}
    run_python(flowloader, data, 1)  # Warm the page cache and the module.
    for r in range(args.rounds):
        runs["python"].append(run_python(flowloader, data, args.epochs))
        runs["cli"].append(run_cli(cli, data, args.epochs, CACHE))
        runs["torch"].append(run_torch(data))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]['images_per_second']:.0f} img/s"
                                           for k, v in runs.items()), flush=True)
    waits = [r["consumer_wait_share"] for r in runs["python"] if r["consumer_wait_share"]]
    results = {
        "command": " ".join(["tests/benchmarks/python_bench.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "images": args.images, "rounds": args.rounds, "epochs": args.epochs,
        "cpus": len(os.sched_getaffinity(0)),
        "medians": {
            "python": median(runs["python"], "images_per_second"),
            "cli": median(runs["cli"], "images_per_second"),
            "torch": median(runs["torch"], "images_per_second"),
            "python_first_batch_seconds": median(runs["python"], "first_batch_seconds"),
            "python_consumer_wait_share": statistics.median(waits) if waits else None,
        },
        "runs": runs,
    }
    text, ok = report(results)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "python.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "python.md"), "w") as f:
        f.write(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
