"""examples/python/train_resnet.py trains 200 steps with each loader (small images, for CI)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import make_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "python", "train_resnet.py")


@pytest.fixture(scope="module")
def train_data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train") / "data", classes=4,
                        images_per_class=40, min_side=48, max_side=64)


@pytest.mark.parametrize("loader", ["flowloader", "torch"])
def test_train_resnet_runs_and_reports(train_data, loader):
    run = subprocess.run([sys.executable, SCRIPT, f"--data={train_data}", f"--loader={loader}",
                          "--steps=200", "--batch_size=16", "--image_size=32"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["loader"] == loader and summary["steps"] == 200
    assert summary["epochs"] == 20  # 160 images, batches of 16 with drop_last: 10 per epoch.
    assert 0 <= summary["consumer_wait_share"] <= 1
    assert summary["final_loss"] == summary["final_loss"]  # Not NaN.
    epoch_lines = [l for l in lines if l.startswith(f"{loader} epoch ")]
    assert len(epoch_lines) == 20 and "waited for data" in epoch_lines[0]
