#!/usr/bin/python3
"""dataset_bench.py: DataLoader(dataset=obj) against the native ImageFolder path on the
same JPEGs and the same cores (issue 25's target: >= 85% of the native images/s at 2
workers).

    tests/benchmarks/dataset_bench.py [--images=2000] [--rounds=5] [--epochs=2]

Builds //python:flowloader and the CLI (the default configuration, as
python/run_tests.sh does: both variants run the same build), makes an ImageNet-like
dataset once (`flowloader make-dataset`, cached under /tmp/flowloader_python_bench, the
one python_bench.py uses), reads every file into a list of (bytes, label) in
ImageFolder's order, then alternates rounds of two runs in this process, batch 64,
num_workers 2, transform train at 224, --epochs epochs each:
  native   DataLoader(ROOT): the reader reads the files (from the page cache);
  dataset  DataLoader(dataset=ListDataset(items)): __getitem__ returns the bytes from
           the list, on flowloader's worker threads with the GIL.
images/s = samples / wall time from DataLoader(...) to the last batch, each batch
touched (images.sum()). Medians over the rounds; the ratio is dataset / native. Writes
results/dataset.json (every run) and prints the table.
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


def build():
    subprocess.run(["bazel", "build", "//python:flowloader", "//runtime:flowloader"], cwd=ROOT,
                   check=True)
    return os.path.join(ROOT, "bazel-out", "k8-fastbuild", "bin")


def dataset(cli, images):
    out = os.path.join(CACHE, f"data_{images}")
    if not os.path.isdir(out):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run([cli, "make-dataset", f"--out={out}", "--classes=10",
                        f"--images_per_class={images // 10}"], check=True)
    return out


class ListDataset:
    """The map-style dataset under test: (JPEG bytes, label) from a list in memory."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def load_items(root):
    classes = sorted(c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c)))
    items = []
    for label, cls in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(root, cls))):
            with open(os.path.join(root, cls, name), "rb") as f:
                items.append((f.read(), label))
    return items


def run(flowloader, epochs, **source):
    start = time.monotonic()
    loader = flowloader.DataLoader(batch_size=64, num_workers=2, image_size=224, **source)
    samples = 0
    for _ in range(epochs):
        for images, labels in loader:
            images.sum()  # Touch the batch, as a training step would read it.
            samples += images.shape[0]
    wall = time.monotonic() - start
    skipped = loader.stats()["skipped"]
    loader.close()
    return {"images_per_second": samples / wall, "samples": samples, "seconds": wall,
            "skipped": skipped}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--out", default=os.path.join(HERE, "results", "dataset.json"))
    args = p.parse_args()
    bins = build()
    sys.path.insert(0, os.path.join(bins, "python"))
    import flowloader
    root = dataset(os.path.join(bins, "runtime", "flowloader"), args.images)
    items = load_items(root)
    data = ListDataset(items)
    mb = sum(len(b) for b, _ in items) / 2**20
    print(f"{len(items)} JPEGs, {mb:.1f} MiB in memory; load average {os.getloadavg()}")
    run(flowloader, 1, data=root)  # Warm-up: page cache, the pool's first touch.
    runs = {"native": [], "dataset": []}
    for r in range(args.rounds):
        for name, source in (("native", {"data": root}), ("dataset", {"dataset": data})):
            result = run(flowloader, args.epochs, **source)
            assert result["skipped"] == 0 and result["samples"] == args.epochs * len(items)
            runs[name].append(result)
            print(f"round {r} {name:8s} {result['images_per_second']:7.1f} images/s", flush=True)
    median = {n: statistics.median(x["images_per_second"] for x in v) for n, v in runs.items()}
    ratio = median["dataset"] / median["native"]
    print(f"| source | images/s (median of {args.rounds}) | % of native |")
    print("| --- | ---: | ---: |")
    for name in ("native", "dataset"):
        print(f"| {name} | {median[name]:.0f} | {100 * median[name] / median['native']:.1f}% |")
    print(f"dataset= / native = {100 * ratio:.1f}% (target >= 85%: "
          f"{'PASS' if ratio >= 0.85 else 'FAIL'}); load average {os.getloadavg()}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"images": len(items), "epochs": args.epochs, "rounds": args.rounds,
                   "median_images_per_second": median, "ratio": ratio, "runs": runs,
                   "nproc": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M")}, f,
                  indent=1)


if __name__ == "__main__":
    main()
