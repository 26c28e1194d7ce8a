"""Detection through the Python DataLoader: annotations= gives (images, targets) as
torchvision's detection models take them, with zero-copy target views, and the boxes
agree with the COCO file (examples/python/train_detection.py trains a torchvision
detector on them; a training step is too slow for this suite)."""

import json
import os
import subprocess

import pytest
import torch

from conftest import FLOWLOADER_BIN


@pytest.fixture(scope="module")
def detection_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("det") / "data"
    subprocess.run([FLOWLOADER_BIN, "make-dataset", "--task=detection", f"--out={root}",
                    "--images=16", "--min_short_side=64", "--max_short_side=96",
                    "--max_instances=5"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def loader(flowloader, data, **kwargs):
    from flowloader import transforms as T
    compose = T.Compose([T.RandomResizedCrop(48, scale=(0.5, 1.0)),
                         T.RandomHorizontalFlip(), T.ToTensor(),
                         T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    return flowloader.DataLoader(os.path.join(data, "images"),
                                 annotations=os.path.join(data, "annotations",
                                                          "instances.json"),
                                 batch_size=4, num_workers=2, shuffle=False,
                                 transform=compose, **kwargs)


def test_yields_images_and_target_dicts(flowloader_module, detection_data):
    with open(os.path.join(detection_data, "annotations", "instances.json")) as f:
        coco = json.load(f)
    ids = {image["id"] for image in coco["images"]}
    seen = 0
    for images, targets in loader(flowloader_module, detection_data):
        assert isinstance(images, list) and isinstance(targets, list)
        assert len(images) == len(targets)
        for image, target in zip(images, targets):
            seen += 1
            assert image.shape == (3, 48, 48) and image.dtype == torch.float32
            assert set(target) == {"boxes", "labels", "iscrowd", "area", "masks", "image_id"}
            k = target["boxes"].shape[0]
            assert target["boxes"].shape == (k, 4) and target["boxes"].dtype == torch.float32
            assert target["labels"].dtype == torch.int64 and target["labels"].shape == (k,)
            assert target["masks"].shape == (k, 48, 48) and target["masks"].dtype == torch.uint8
            assert target["image_id"] in ids
            # Labels are the 4 categories mapped to 1..4 (0 is the background).
            assert all(1 <= int(v) <= 4 for v in target["labels"])
            b = target["boxes"]
            assert bool(((b[:, 2] - b[:, 0]) >= 1).all()) and bool(((b[:, 3] - b[:, 1]) >= 1).all())
            assert bool((b >= 0).all()) and bool((b <= 48).all())
    assert seen == 16


def test_boxes_are_views_of_the_batch(flowloader_module, detection_data):
    it = iter(loader(flowloader_module, detection_data, prefetch_batches=4))
    images, targets = next(it)
    t = next(x for x in targets if x["boxes"].shape[0] > 0)
    # The dict's tensors are views of one flat buffer (not copies per row): a row's boxes
    # start where the previous row's end.
    rows = [x["boxes"] for x in targets]
    for a, b in zip(rows, rows[1:]):
        if a.shape[0] and b.shape[0]:
            assert b.data_ptr() == a.data_ptr() + a.numel() * 4
    assert t["boxes"].storage().size() >= t["boxes"].numel()


def test_a_batch_held_with_its_targets_counts_once(flowloader_module, detection_data):
    # A loop that keeps the last batch (images and targets) while taking the next holds
    # one batch: every batch stays a zero-copy view of its buffer. Failed when the images
    # and the targets each took a hold: the one held batch counted twice, reached the hold
    # limit (prefetch 3 - 1 = 2) and every later batch was copied.
    dl = loader(flowloader_module, detection_data, prefetch_batches=3)
    batches = 0
    for images, targets in dl:
        assert dl.held_batches == 1  # This batch, once, as a view (a copy holds none).
        batches += 1
    assert batches == 4


def test_exposes_the_category_map(flowloader_module, detection_data):
    dl = loader(flowloader_module, detection_data)
    assert dl.categories == [{"id": 1, "name": "triangle", "label": 1},
                             {"id": 3, "name": "quadrilateral", "label": 2},
                             {"id": 7, "name": "pentagon", "label": 3},
                             {"id": 12, "name": "hexagon", "label": 4}]
    assert dl.annotation_skips == {}
    # The summary JSON (flowloader run --summary_json, stats()) reports the same map.
    assert dl.stats()["annotations"] == {"categories": dl.categories, "skipped": {}}


def _detection_loader(flowloader, data, compose, **kwargs):
    return flowloader.DataLoader(os.path.join(data, "images"),
                                 annotations=os.path.join(data, "annotations",
                                                          "instances.json"),
                                 batch_size=4, num_workers=2, shuffle=False,
                                 transform=compose, **kwargs)


def test_ssd_and_lsj_recipes_with_v2_class_names(flowloader_module, detection_data):
    from flowloader import transforms as T
    ssd = T.Compose([T.RandomPhotometricDistort(), T.RandomZoomOut(fill=[123, 117, 104]),
                     T.RandomIoUCrop(), T.RandomHorizontalFlip(p=0.5), T.Resize([40, 40]),
                     T.ToTensor(), T.SanitizeBoundingBoxes()])
    assert ssd.transforms[:-1] and T._split_sanitize(ssd)[0].to_ops().startswith(
        "random_photometric_distort(brightness=[0.875, 1.125], contrast=[0.5, 1.5]")
    lsj = T.Compose([T.ScaleJitter(target_size=(48, 48)), T.RandomHorizontalFlip(),
                     T.FixedSizeCrop(size=(48, 48), fill=0), T.PILToTensor(),
                     T.ConvertImageDtype(torch.float),
                     T.SanitizeBoundingBoxes(min_size=2.0)])
    for compose, side, min_size in ((ssd, 40, 1.0), (lsj, 48, 2.0)):
        rows = 0
        for images, targets in _detection_loader(flowloader_module, detection_data, compose):
            for image, target in zip(images, targets):
                rows += 1
                assert image.shape == (3, side, side)
                b = target["boxes"]
                assert target["masks"].shape == (b.shape[0], side, side)
                assert bool((b >= 0).all()) and bool((b <= side).all())
                assert bool(((b[:, 2] - b[:, 0]) >= min_size).all())
                assert bool(((b[:, 3] - b[:, 1]) >= min_size).all())
        assert rows == 16


def test_detection_ops_refuse_an_image_alone_and_what_cannot_batch(flowloader_module,
                                                                   detection_data):
    from PIL import Image
    from flowloader import transforms as T
    with pytest.raises(TypeError, match="RandomIoUCrop runs in the loader's op list"):
        T.RandomIoUCrop()(Image.new("RGB", (8, 8)))
    # Scale jitter alone makes sizes that differ per image: refused in one line.
    with pytest.raises(Exception, match="fixed_size_crop"):
        iter(_detection_loader(flowloader_module, detection_data,
                               T.Compose([T.ScaleJitter((64, 64)), T.ToTensor()])))
