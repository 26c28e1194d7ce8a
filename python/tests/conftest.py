"""Fixtures for the flowloader Python tests: the module, the CLI binary, small datasets.

python/run_tests.sh sets FLOWLOADER_BIN (the `flowloader` binary it built) and PYTHONPATH;
datasets are made by `flowloader make-dataset`, so every test reads real JPEG files.
"""

import os
import subprocess
import sys
import threading
import time

import pytest

FLOWLOADER_BIN = os.environ.get("FLOWLOADER_BIN", "bazel-bin/runtime/flowloader")
DUMP_BATCHES = os.environ.get("FLOWLOADER_DUMP_BATCHES", "bazel-bin/tests/benchmarks/dump_batches")


def make_dataset(out, classes=3, images_per_class=12, min_side=48, max_side=64, seed=0):
    subprocess.run([FLOWLOADER_BIN, "make-dataset", f"--out={out}", f"--classes={classes}",
                    f"--images_per_class={images_per_class}", f"--min_short_side={min_side}",
                    f"--max_short_side={max_side}", f"--seed={seed}"],
                   check=True, stdout=subprocess.DEVNULL)
    return str(out)


def files_of(root):
    """Every file under an ImageFolder root, relative, in ImageFolder's (sorted) order."""
    out = []
    for cls in sorted(c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c))):
        for name in sorted(os.listdir(os.path.join(root, cls))):
            out.append(f"{cls}/{name}")
    return out


@pytest.fixture(scope="session")
def small_data(tmp_path_factory):
    """36 small JPEGs in 3 classes."""
    return make_dataset(tmp_path_factory.mktemp("small") / "data")


@pytest.fixture(scope="session")
def odd_data(tmp_path_factory):
    """37 JPEGs: no world_size of 2..6 divides it, so shards need padding or trimming."""
    root = tmp_path_factory.mktemp("odd") / "data"
    make_dataset(root, classes=1, images_per_class=37)
    return str(root)


@pytest.fixture(scope="session")
def flowloader_module():
    import flowloader
    return flowloader


def run_python(code, env=None, timeout=120, **kwargs):
    """Runs `code` in a fresh /usr/bin/python3 with this process's PYTHONPATH."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=full_env, timeout=timeout,
                          capture_output=True, text=True, **kwargs)


def spins_during(call):
    """How far a Python thread spinning in a loop gets on its own and while call() runs on
    this thread: (free_rate, during_rate, during_loops), rates in loops a second. A call
    holding the GIL leaves the spinning thread only the switch intervals of its Python
    parts; one that releases it shares the cores with it."""
    counts = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counts[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        time.sleep(0.05)
        start_count, start = counts[0], time.perf_counter()
        time.sleep(0.2)
        free_rate = (counts[0] - start_count) / (time.perf_counter() - start)
        start_count, start = counts[0], time.perf_counter()
        call()
        during = counts[0] - start_count
        during_rate = during / (time.perf_counter() - start)
    finally:
        stop.set()
        thread.join()
    return free_rate, during_rate, during
