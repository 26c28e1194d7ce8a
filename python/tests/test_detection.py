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


def test_exposes_the_category_map(flowloader_module, detection_data):
    dl = loader(flowloader_module, detection_data)
    assert dl.categories == [{"id": 1, "name": "triangle", "label": 1},
                             {"id": 3, "name": "quadrilateral", "label": 2},
                             {"id": 7, "name": "pentagon", "label": 3},
                             {"id": 12, "name": "hexagon", "label": 4}]
    assert dl.annotation_skips == {}
    # The summary JSON (flowloader run --summary_json, stats()) reports the same map.
    assert dl.stats()["annotations"] == {"categories": dl.categories, "skipped": {}}
