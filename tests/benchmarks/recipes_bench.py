#!/usr/bin/python3
"""recipes_bench.py: today's training recipes, flowloader against PyTorch's DataLoader.

    /usr/bin/python3 tests/benchmarks/recipes_bench.py --bin=bazel-bin/runtime/flowloader \
        [--base_bin=OLD/bazel-bin/runtime/flowloader] [--reps=3] [--recipes=dino,simclr]

For each recipe in runtime/specs/ (torchvision_v2, timm_randaugment, dino, simclr):
flowloader runs the spec (`flowloader run --spec=... --num_workers=2 --batch_size=64`,
everything else at its default) and torch runs recipes_torch.py, the same recipe in
torchvision 0.14 (DataLoader(num_workers=2, batch_size=64)), over the same ImageFolder on
the same cores. Both report images/s after the first batch of one epoch. The runs
alternate (torch, flowloader, torch, ...) within each rep and the medians are compared,
because this shared VM moves run to run by about 10%.

With --base_bin (a build from before the op library), the default graph (no spec, train)
is also run by both builds, alternating: images/s within 3% and `--checksum` identical.

Data: an ImageNet-like set of 2000 JPEGs made once by `flowloader make-dataset` under
<repo>/.bench_data/ (the same generator and flags as bench.py). Writes
results/recipes.md and results/recipes.csv. A program, not a unit test.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import runners  # noqa: E402  (the benchmarks' shared spawner: timeout, CPU of the tree)

REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"
RECIPES = ["torchvision_v2", "timm_randaugment", "dino", "simclr"]
TARGETS = {"torchvision_v2": 10.0, "timm_randaugment": 10.0, "dino": 12.0, "simclr": 12.0}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def dataset(bin_path):
    root = os.path.join(REPO, ".bench_data", "recipes_20x100")
    if os.path.isdir(root):
        return root
    os.makedirs(os.path.dirname(root), exist_ok=True)
    tmp = root + f".tmp{os.getpid()}"
    subprocess.run([bin_path, "make-dataset", f"--out={tmp}", "--classes=20",
                    "--images_per_class=100", "--min_short_side=256", "--max_short_side=512",
                    "--quality=90", "--noise=7", "--seed=1"], check=True,
                   stdout=subprocess.DEVNULL)
    os.rename(tmp, root)
    return root


def run_measured(cmd, timeout=1200):
    """Runs cmd through runners.py's spawner (its own process group, killed at `timeout`);
    returns (stdout, stderr, CPU seconds of it and its reaped children)."""
    result, stdout, stderr = runners._spawn_and_wait(cmd, timeout, pss=False)
    if result["rc"] != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {stderr[-2000:]}")
    return stdout, stderr, result["cpu_seconds"]


def run_flowloader(bin_path, data, spec=None, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "s.json")
        cmd = [bin_path, "run", f"--data={data}", "--num_workers=2", "--batch_size=64",
               "--epochs=1", "--progress=false", f"--summary_json={summary}", *extra]
        if spec:
            cmd.append(f"--spec={spec}")
        stdout, stderr, cpu = run_measured(cmd)
        with open(summary) as f:
            s = json.load(f)
    first_rows = min(64, s["samples"])
    window = s["seconds"] - s["first_batch_seconds"]
    checksum = next((l.split()[2] for l in stdout.splitlines() + stderr.splitlines()
                     if l.startswith("data checksum")), None)
    return {"ips": (s["samples"] - first_rows) / window, "checksum": checksum,
            "cpu_ms": 1e3 * cpu / s["samples"]}


def run_torch(recipe, data):
    cmd = [PYTHON, os.path.join(HERE, "recipes_torch.py"), f"--recipe={recipe}",
           f"--data={data}", "--num_workers=2", "--batch_size=64"]
    stdout, _, cpu = run_measured(cmd)
    report = json.loads(stdout.strip().splitlines()[-1])
    return {"ips": report["images_per_second_after_first_batch"],
            "cpu_ms": 1e3 * cpu / report["samples"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(REPO, "bazel-bin/runtime/flowloader"))
    p.add_argument("--base_bin", default="")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--recipes", default=",".join(RECIPES))
    p.add_argument("--data", default="")
    p.add_argument("--out", default=os.path.join(HERE, "results", "recipes"))
    a = p.parse_args()
    data = a.data or dataset(a.bin)
    recipes = [r for r in a.recipes.split(",") if r]
    runs = {r: {"torch": [], "flowloader": [], "torch_cpu": [], "flowloader_cpu": []}
            for r in recipes}
    default = {"base": [], "new": [], "checksums": set()}
    for rep in range(a.reps):
        for r in recipes:
            spec = os.path.join(REPO, "runtime", "specs", f"{r}.yaml")
            t = run_torch(r, data)
            f = run_flowloader(a.bin, data, spec)
            runs[r]["torch"].append(t["ips"])
            runs[r]["torch_cpu"].append(t["cpu_ms"])
            runs[r]["flowloader"].append(f["ips"])
            runs[r]["flowloader_cpu"].append(f["cpu_ms"])
            log(f"rep {rep} {r}: torch {runs[r]['torch'][-1]:.0f} img/s, "
                f"flowloader {runs[r]['flowloader'][-1]:.0f} img/s")
        if a.base_bin:
            for key, b in (("base", a.base_bin), ("new", a.bin)):
                res = run_flowloader(b, data, extra=("--checksum",))
                default[key].append(res["ips"])
                default["checksums"].add((key, res["checksum"]))
            log(f"rep {rep} default graph: base {default['base'][-1]:.0f}, "
                f"new {default['new'][-1]:.0f} img/s")

    rows = []
    for r in recipes:
        t = statistics.median(runs[r]["torch"])
        f = statistics.median(runs[r]["flowloader"])
        tc = statistics.median(runs[r]["torch_cpu"])
        fc = statistics.median(runs[r]["flowloader_cpu"])
        rows.append({"recipe": r, "torch_ips": round(t, 1), "flowloader_ips": round(f, 1),
                     "ratio": round(f / t, 2), "torch_cpu_ms": round(tc, 2),
                     "flowloader_cpu_ms": round(fc, 2), "cpu_ratio": round(tc / fc, 2),
                     "target": TARGETS.get(r), "pass": f / t >= TARGETS.get(r, 0)})
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["# Recipes: flowloader vs PyTorch DataLoader (2 workers, batch 64)", "",
             f"Command: `/usr/bin/python3 tests/benchmarks/recipes_bench.py --reps={a.reps}`"
             f" on {os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f} at the end);"
             f" medians of {a.reps} alternating runs, images/s after the first batch of one"
             " epoch over 2000 JPEGs, and CPU ms per image (user+sys of the whole process"
             " tree, workers included).", "",
             "| recipe | torch img/s | flowloader img/s | ratio | target | torch CPU ms/img |"
             " flowloader CPU ms/img | CPU ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['recipe']} | {row['torch_ips']} | {row['flowloader_ips']} | "
                     f"{row['ratio']}x | {row['target']}x {'PASS' if row['pass'] else 'FAIL'} | "
                     f"{row['torch_cpu_ms']} | {row['flowloader_cpu_ms']} | "
                     f"{row['cpu_ratio']}x |")
    if a.base_bin:
        b, n = statistics.median(default["base"]), statistics.median(default["new"])
        sums = {c for _, c in default["checksums"]}
        lines += ["", f"Default graph (train, no spec): base {b:.0f} img/s, this build "
                      f"{n:.0f} img/s ({100 * (n / b - 1):+.1f}%); checksums "
                      f"{'identical' if len(sums) == 1 else 'DIFFER: ' + str(sums)}."]
    with open(a.out + ".json", "w") as fh:
        json.dump({"rows": rows, "runs": runs,
                   "default": {k: v for k, v in default.items() if k != "checksums"}},
                  fh, indent=1)
    with open(a.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
