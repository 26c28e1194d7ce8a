"""RandomHorizontalFlip(keypoint_flip=...) in the Python loader: each instance's points
come out reordered as the references' flip_inds reorder them (point i is point
keypoint_flip[i] of the plain flip), boxes and images unchanged; torchvision's repr and
signature stay as they were without it; a list that is no permutation is refused."""

import os
import subprocess

import pytest
import torch

from conftest import FLOWLOADER_BIN


@pytest.fixture(scope="module")
def keypoint_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("kp") / "data"
    subprocess.run([FLOWLOADER_BIN, "make-dataset", "--task=detection", f"--out={root}",
                    "--images=8", "--min_short_side=64", "--max_short_side=96",
                    "--max_instances=4", "--keypoints"], check=True,
                   stdout=subprocess.DEVNULL)
    return str(root)


def batches(flowloader, data, flip):
    from flowloader import transforms as T
    compose = T.Compose([T.Resize((40, 44)), flip, T.ToTensor()])
    loader = flowloader.DataLoader(os.path.join(data, "images"),
                                   annotations=os.path.join(data, "annotations",
                                                            "instances.json"),
                                   batch_size=4, num_workers=2, shuffle=False,
                                   transform=compose)
    out = []
    for images, targets in loader:
        for image, target in zip(images, targets):
            out.append((image.clone(), target["boxes"].clone(), target["keypoints"].clone()))
    return out


def test_keypoint_flip_reorders_the_mirrored_points(flowloader_module, keypoint_data):
    from flowloader import transforms as T
    plain = batches(flowloader_module, keypoint_data, T.RandomHorizontalFlip(p=1.0))
    swapped = batches(flowloader_module, keypoint_data,
                      T.RandomHorizontalFlip(p=1.0, keypoint_flip=[2, 0, 1]))
    assert len(plain) == len(swapped) == 8
    instances = 0
    for (image, boxes, points), (image2, boxes2, points2) in zip(plain, swapped):
        assert torch.equal(image, image2) and torch.equal(boxes, boxes2)
        assert points.shape[1:] == (3, 3)
        assert torch.equal(points2, points[:, [2, 0, 1]])
        instances += points.shape[0]
    assert instances > 0


def test_repr_and_refusals(flowloader_module, keypoint_data):
    from flowloader import transforms as T
    assert repr(T.RandomHorizontalFlip()) == "RandomHorizontalFlip(p=0.5)"
    assert "keypoint_flip='coco_person'" in repr(
        T.RandomHorizontalFlip(keypoint_flip="coco_person"))
    with pytest.raises(ValueError) as e:
        batches(flowloader_module, keypoint_data,
                T.RandomHorizontalFlip(keypoint_flip=[0, 0, 1]))
    assert "keypoint_flip" in str(e.value) and "\n" not in str(e.value)
