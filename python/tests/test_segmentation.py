"""Semantic segmentation through the Python DataLoader: label_maps= pairs PNG label maps
with the images, and the loader yields (images, masks), masks int64 [N, H, W] as
torchvision's segmentation references feed CrossEntropyLoss(ignore_index=255). The map
moves with the image through every geometric op by nearest neighbour (the op-by-op
comparison with torchvision's functionals is //stages/augment:label_parity_test)."""

import os
import subprocess

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import FLOWLOADER_BIN


@pytest.fixture(scope="module")
def seg_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("seg") / "data"
    subprocess.run([FLOWLOADER_BIN, "make-dataset", "--task=segmentation", f"--out={root}",
                    "--images=10", "--min_short_side=64", "--max_short_side=96"],
                   check=True, stdout=subprocess.DEVNULL)
    return str(root)


def colour(c):
    """Label c's colour in the coded images: distinct per label, never black."""
    return (c * 37 % 251 + 1, c * 91 % 241 + 3, c * 13 % 239 + 7)


@pytest.fixture(scope="module")
def coded_data(tmp_path_factory):
    """VOC-style pairs: palette label maps (their palette colours are not their indices)
    and lossless PNG images whose every pixel is its label's colour."""
    root = tmp_path_factory.mktemp("coded")
    os.makedirs(root / "JPEGImages")
    os.makedirs(root / "SegmentationClass")
    rng = np.random.default_rng(5)
    palette = list(rng.integers(0, 256, size=768, dtype=np.uint8))
    lines = []
    for i in range(8):
        h, w = 40 + 3 * i, 64 - 2 * i
        labels = rng.integers(0, 21, size=(h, w), dtype=np.uint8)
        labels[rng.random((h, w)) < 0.05] = 255
        table = np.array([colour(c) for c in range(256)], np.uint8)
        Image.fromarray(table[labels], "RGB").save(root / "JPEGImages" / f"{i}.png")
        mask = Image.fromarray(labels, "P")
        mask.putpalette(palette)
        mask.save(root / "SegmentationClass" / f"{i}.png")
        lines.append(f"JPEGImages/{i}.png SegmentationClass/{i}.png")
    (root / "train.txt").write_text("\n".join(lines) + "\n")
    return root


def test_yields_images_and_int64_masks(flowloader_module, seg_data):
    from flowloader import transforms as T
    compose = T.Compose([T.RandomResizedCrop(48, scale=(0.3, 1.0)), T.RandomHorizontalFlip(),
                         T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                         T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    loader = flowloader_module.DataLoader(os.path.join(seg_data, "images"),
                                          label_maps=os.path.join(seg_data, "label_maps"),
                                          batch_size=4, num_workers=2, shuffle=False,
                                          transform=compose)
    rows, values = 0, set()
    for images, masks in loader:
        assert images.dtype == torch.float32 and images.shape[1:] == (3, 48, 48)
        assert masks.dtype == torch.int64 and masks.shape == (images.shape[0], 48, 48)
        rows += images.shape[0]
        values |= set(int(v) for v in masks.unique())
    assert rows == 10
    assert values <= {0, 1, 2, 3, 4, 255} and 0 in values and len(values) >= 3


def test_the_mask_moves_with_the_image_through_every_op(flowloader_module, coded_data):
    from flowloader import transforms as T
    # Crops never twice the output: the decoder then keeps every pixel unblended (it may
    # average PNG blocks, or DCT-scale a JPEG, for a crop it shrinks 2× or more).
    compose = T.Compose([T.RandomResizedCrop(40, interpolation=T.InterpolationMode.NEAREST),
                         T.RandomHorizontalFlip(), T.RandomVerticalFlip(),
                         T.RandomCrop(36, padding=3)])
    loader = flowloader_module.DataLoader(label_maps=str(coded_data / "train.txt"),
                                          batch_size=4, num_workers=2, shuffle=True,
                                          transform=compose)
    lookup = {colour(c): c for c in range(256)}
    rows = padded = 0
    for _ in range(3):  # Epochs: other crops, flips and pads each time.
        for images, masks in loader:
            assert images.dtype == torch.uint8 and images.shape[1:] == (36, 36, 3)
            for image, mask in zip(images.numpy(), masks.numpy()):
                rows += 1
                for (y, x), m in np.ndenumerate(mask):
                    px = tuple(int(v) for v in image[y, x])
                    if px == (0, 0, 0):  # RandomCrop's padding: ignore_index in the mask.
                        assert m == 255, (y, x)
                        padded += 1
                    else:
                        assert lookup[px] == m, (y, x, px, m)
    assert rows == 24 and padded > 0


def test_a_mismatched_map_is_skipped_and_counted(flowloader_module, tmp_path):
    os.makedirs(tmp_path / "img")
    os.makedirs(tmp_path / "lab")
    for name, mask_size in (("a", (30, 20)), ("b", (31, 20))):
        Image.new("RGB", (30, 20), (9, 9, 9)).save(tmp_path / "img" / f"{name}.png")
        Image.new("L", mask_size, 1).save(tmp_path / "lab" / f"{name}.png")
    from flowloader import transforms as T
    loader = flowloader_module.DataLoader(str(tmp_path / "img"),
                                          label_maps=str(tmp_path / "lab"), batch_size=2,
                                          transform=T.Compose([T.RandomResizedCrop(16)]),
                                          shuffle=False)
    rows = sum(images.shape[0] for images, _ in loader)
    assert rows == 1
    errors = loader.stats()["errors"]  # Later epochs, read ahead, count theirs too.
    assert set(errors) == {"size_mismatch"} and errors["size_mismatch"] >= 1


def test_masks_are_int64_views_with_ignore_index_kept(flowloader_module, coded_data):
    """The batch's maps come out int64, each value its PNG's index (255, ignore_index, kept
    as 255 as torchvision's references give it), as zero-copy views of the batch buffer
    under the hold rule: held masks keep their batch, and stay intact while later batches
    are made; past the hold limit a batch's masks are copies."""
    from flowloader import transforms as T
    side = 36
    loader = flowloader_module.DataLoader(label_maps=str(coded_data / "train.txt"),
                                          batch_size=2, num_workers=2, shuffle=False,
                                          prefetch_batches=3, return_keys=True,
                                          transform=T.Compose([T.CenterCrop(side)]))
    limit = flowloader_module.hold_limit(3)

    def expected(key):
        labels = np.array(Image.open(coded_data / "SegmentationClass" /
                                     os.path.basename(key)), dtype=np.int64)
        h, w = labels.shape
        top, left = int(round((h - side) / 2.0)), int(round((w - side) / 2.0))
        return labels[top:top + side, left:left + side]

    def check(keys, masks):  # Returns its ignore_index pixels.
        ignored = 0
        for key, mask in zip(keys, masks):
            want = torch.from_numpy(expected(key))
            assert torch.equal(mask, want), key
            ignored += int((want == 255).sum())
        return ignored

    held = []
    for images, masks, keys in loader:
        del images
        assert masks.dtype == torch.int64 and masks.shape == (len(keys), side, side)
        check(keys, masks)
        held.append((keys, masks))
        # Only the masks are kept: they alone hold their batch, up to the hold limit.
        assert loader.held_batches == min(len(held), limit)
    assert len(held) == 4 and limit < 4
    # Unchanged by the batches made after them.
    assert sum(check(keys, masks) for keys, masks in held) > 0
    del held, masks
    assert loader.held_batches == 0
