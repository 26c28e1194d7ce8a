"""Mosaic and SimpleCopyPaste (batch ops) through the Python DataLoader: the same
(images, targets) for 1 and 2 workers and after load_state_dict mid-epoch, targets
dicts that stay consistent, and the one-line TypeErrors of misuse."""

import os
import subprocess

import pytest
import torch

import flowloader
from flowloader import transforms as T
from conftest import FLOWLOADER_BIN


@pytest.fixture(scope="module")
def detection_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("multi") / "data"
    subprocess.run([FLOWLOADER_BIN, "make-dataset", "--task=detection", f"--out={root}",
                    "--images=14", "--min_short_side=64", "--max_short_side=96",
                    "--max_instances=5"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def loader(data, batch_ops, **kwargs):
    compose = T.Compose([T.Resize((48, 48)), T.RandomHorizontalFlip(), T.ToTensor()])
    options = dict(batch_size=4, num_workers=2, seed=3, transform=compose)
    options.update(kwargs)
    return flowloader.DataLoader(os.path.join(data, "images"),
                                 annotations=os.path.join(data, "annotations",
                                                          "instances.json"),
                                 batch_ops=batch_ops, **options)


def flat(batch):
    images, targets = batch
    out = [torch.stack(images).clone()]
    for t in targets:
        out += [t[k].clone() for k in ("boxes", "labels", "masks", "iscrowd", "area")]
    return out


def same(a, b):
    return len(a) == len(b) and all(len(x) == len(y) and all(torch.equal(u, v)
                                                               for u, v in zip(x, y))
                                    for x, y in zip(a, b))


@pytest.mark.parametrize("op", [T.Mosaic(p=0.7), T.SimpleCopyPaste()], ids=repr)
def test_same_for_any_workers_and_after_resume(detection_data, op):
    with loader(detection_data, [op], num_workers=1) as one:
        expected = [flat(b) for b in one]
    with loader(detection_data, [op], num_workers=2) as two:
        assert same([flat(b) for b in two], expected)
    with loader(detection_data, [op]) as first:
        it = iter(first)
        got = [flat(next(it)) for _ in range(2)]
        state = first.state_dict()
    with loader(detection_data, [op]) as second:
        second.load_state_dict(state)
        got += [flat(b) for b in second]
    assert same(got, expected)
    with loader(detection_data, None) as plain:
        assert not same([flat(b) for b in plain], expected)  # The op did something.


def test_targets_stay_consistent(detection_data):
    with loader(detection_data, [T.Mosaic(), T.SimpleCopyPaste(blending=False)]) as dl:
        for images, targets in dl:
            for image, t in zip(images, targets):
                k = t["boxes"].shape[0]
                assert image.shape == (3, 48, 48)
                assert t["masks"].shape == (k, 48, 48) and t["labels"].shape == (k,)
                b = t["boxes"]
                assert bool((b[:, 2] > b[:, 0]).all()) and bool((b[:, 3] > b[:, 1]).all())
                assert bool((b >= 0).all()) and bool((b <= 48).all())


def test_misuse_is_a_one_line_error(detection_data):
    with pytest.raises(TypeError, match="runs on the loader's batches"):
        T.Mosaic()(torch.zeros(3, 8, 8))
    with pytest.raises(TypeError, match="nothing is resized"):
        T.SimpleCopyPaste(resize_interpolation=T.InterpolationMode.NEAREST)
    with pytest.raises(ValueError, match="option 'p' must be in \\[0, 1\\], got 2"):
        loader(detection_data, [T.Mosaic(p=2)])
