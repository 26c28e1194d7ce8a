"""examples/python/dino.py and torchvision_v2.py: each runs, and its loader (upstream's
recipe through flowloader.transforms) gives the same batch bytes as the recipe's spec in
runtime/specs/."""

import importlib.util
import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _example(name):
    path = os.path.join(ROOT, "examples", "python", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


@pytest.mark.parametrize("name", ["dino", "torchvision_v2"])
def test_example_runs(small_data, name):
    path, _ = _example(name)
    run = subprocess.run([sys.executable, path, f"--data={small_data}", "--batches=3",
                          "--batch_size=8"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "24 images in" in run.stdout


def _batches(loader, n=2):
    out = []
    with loader:
        for images, labels in loader:
            out.append(({k: v.clone() for k, v in images.items()}
                        if isinstance(images, dict) else images.clone(), labels.clone()))
            if len(out) == n:
                break
    return out


@pytest.mark.parametrize("name", ["dino", "torchvision_v2"])
def test_example_equals_its_spec(small_data, name):
    import flowloader
    _, module = _example(name)
    ours = _batches(module.make_loader(small_data, batch_size=8, seed=3))
    spec = os.path.join(ROOT, "runtime", "specs", f"{name}.yaml")
    theirs = _batches(flowloader.DataLoader(small_data, spec=spec, batch_size=8, seed=3,
                                            num_workers=2, drop_last=name == "dino"))
    assert len(ours) == len(theirs) == 2
    for (a, la), (b, lb) in zip(ours, theirs):
        assert torch.equal(la, lb)
        if isinstance(a, dict):
            assert list(a) == list(b) == ["global1", "global2"] + [f"local{i}" for i in
                                                                   range(1, 9)]
            for k in a:
                assert torch.equal(a[k], b[k]), k
        else:
            assert a.shape == (8, 3, 176, 176) and torch.equal(a, b)
