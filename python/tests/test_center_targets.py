"""center= with targets in the loader (issue 35, round 8): RandomRotation and RandomAffine
about a given centre move boxes, masks, keypoints and label maps with the pixels (they
were skipped as samples before: the target mover turned about the image centre only).

Each image has a red rectangle painted on black, annotated as one instance (its box, its
polygon, its four corners as keypoints) and as class 1 of a label map. The loader runs
the Compose without the warp and with it; the warped image must be torchvision's F.rotate
/ F.affine of the plain one (NEAREST, exact), the mask and label map the same warp of the
plain ones (PIL's, exact), the red pixels must lie where the mask is, and the boxes and
keypoints must be the plain ones through the warp about that centre (v2's kernels:
_affine_bounding_boxes_with_expand with center=, within 1e-3 px).
"""

import json
import os

import numpy as np
import pytest
import torch
import torchvision.transforms.functional as TF
from PIL import Image
from torchvision.transforms import InterpolationMode

import flowloader
import flowloader.transforms as T

W, H = 56, 44
RECTS = [(8, 10, 30, 26), (20, 5, 44, 17), (3, 20, 15, 40)]  # x0, y0, x1, y1 (exclusive)


@pytest.fixture(scope="module")
def painted(tmp_path_factory):
    root = tmp_path_factory.mktemp("painted")
    os.makedirs(root / "images")
    os.makedirs(root / "labels")
    coco = {"images": [], "annotations": [],
            "categories": [{"id": 1, "name": "box", "keypoints": ["a", "b", "c", "d"],
                            "skeleton": []}]}
    for i, (x0, y0, x1, y1) in enumerate(RECTS):
        pixels = np.zeros((H, W, 3), np.uint8)
        pixels[y0:y1, x0:x1] = (250, 10, 10)
        Image.fromarray(pixels).save(root / "images" / f"im{i}.png")
        labels = np.zeros((H, W), np.uint8)
        labels[y0:y1, x0:x1] = 1
        Image.fromarray(labels, "L").save(root / "labels" / f"im{i}.png")
        coco["images"].append({"id": i + 1, "file_name": f"im{i}.png", "width": W,
                               "height": H})
        corners = [x0, y0, x1, y0, x1, y1, x0, y1]
        coco["annotations"].append({
            "id": i + 1, "image_id": i + 1, "category_id": 1, "iscrowd": 0,
            "bbox": [x0, y0, x1 - x0, y1 - y0], "area": (x1 - x0) * (y1 - y0),
            "segmentation": [corners], "num_keypoints": 4,
            "keypoints": [v for k in range(4) for v in (corners[2 * k], corners[2 * k + 1], 2)]})
    with open(root / "instances.json", "w") as f:
        json.dump(coco, f)
    return root


def _detections(root, warp):
    ops = [T.Resize((H, W))] + ([warp] if warp is not None else []) + [
        T.PILToTensor(), T.ConvertImageDtype(torch.float)]
    with flowloader.DataLoader(str(root / "images"), annotations=str(root / "instances.json"),
                               batch_size=1, shuffle=False, transform=T.Compose(ops)) as loader:
        return [(images[0].clone(), {k: v.clone() if isinstance(v, torch.Tensor) else v
                                     for k, v in targets[0].items()}) for images, targets in loader]


def _pil(image):
    return Image.fromarray((image * 255).round().byte().permute(1, 2, 0).numpy())


def _v2_move(points, center, angle, translate, scale, shear):
    """Points [N, 2] through v2's forward matrix about `center` (its kernels' float32)."""
    m = TF._get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=False)
    mt = torch.tensor(m, dtype=torch.float32).reshape(2, 3).T
    return torch.cat([points, torch.ones(points.shape[0], 1)], dim=1) @ mt


def _v2_boxes(boxes, center, *args):
    corners = boxes[:, [[0, 1], [2, 1], [2, 3], [0, 3]]].reshape(-1, 2)
    moved = _v2_move(corners, center, *args).reshape(-1, 4, 2)
    out = torch.cat([moved.min(dim=1).values, moved.max(dim=1).values], dim=1)
    out[:, 0::2].clamp_(0, W)
    out[:, 1::2].clamp_(0, H)
    return out


CASES = [
    # (flowloader warp, torchvision's F call on a PIL image, v2's affine args)
    ("rotate", lambda c: T.RandomRotation((25, 25), center=c),
     lambda im, c: TF.rotate(im, 25, InterpolationMode.NEAREST, center=c),
     lambda c: (-25.0, [0.0, 0.0], 1.0, [0.0, 0.0])),
    ("affine", lambda c: T.RandomAffine((-40, -40), scale=(1.2, 1.2), shear=(10, 10, 0, 0),
                                        center=c),
     lambda im, c: TF.affine(im, -40, [0, 0], 1.2, [10.0, 0.0], InterpolationMode.NEAREST,
                             center=c),
     lambda c: (-40.0, [0.0, 0.0], 1.2, [10.0, 0.0])),
]


@pytest.mark.parametrize("center", [[12, 30], [0, 0], [W + 5, -3.5], [19.5, 11.25]], ids=str)
@pytest.mark.parametrize("name,warp,pixels,args", CASES, ids=[c[0] for c in CASES])
def test_targets_turn_about_the_centre_with_the_pixels(painted, name, warp, pixels, args,
                                                       center):
    plain = _detections(painted, None)
    moved = _detections(painted, warp(center))
    assert len(plain) == len(moved) == len(RECTS)  # None skipped (all were before).
    for (image0, t0), (image1, t1) in zip(plain, moved):
        # The pixels: torchvision's warp of the plain image.
        expected = np.asarray(pixels(_pil(image0), center))
        assert np.array_equal(np.asarray(_pil(image1)), expected)
        # Masks: the same warp of the plain masks; the red pixels lie on the mask.
        for m0, m1 in zip(t0["masks"], t1["masks"]):
            warped = np.asarray(pixels(Image.fromarray(m0.numpy(), "L"), center))
            assert np.array_equal(m1.numpy(), warped)
        red = np.asarray(_pil(image1))[:, :, 0] > 128
        if t1["masks"].shape[0]:
            assert np.array_equal(red, t1["masks"][0].numpy().astype(bool))
        # Boxes and keypoints: v2's forward map about the centre.
        angle, translate, scale, shear = args(center)
        boxes = _v2_boxes(t0["boxes"], center, angle, translate, scale, shear)
        if t1["boxes"].shape[0]:  # (A box moved wholly outside is dropped: sanitize.)
            assert torch.allclose(t1["boxes"], boxes, atol=1e-3)
            points = _v2_move(t0["keypoints"][0, :, :2], center, angle, translate, scale, shear)
            assert torch.allclose(t1["keypoints"][0, :, :2], points, atol=1e-3)


@pytest.mark.parametrize("warp", [
    lambda: T.RandomRotation((30, 30), center=[10, 35]),
    lambda: T.RandomAffine((15, 15), translate=(0.1, 0.1), center=[40.5, 3]),
], ids=["rotate", "affine"])
def test_label_maps_turn_about_the_centre(painted, warp):
    """A label map moves with a centred warp (255 where the image is uncovered), as
    torchvision's segmentation references move a PIL mask: the class-1 pixels are the red
    ones."""
    compose = T.Compose([T.Resize((H, W)), warp(), T.PILToTensor(),
                         T.ConvertImageDtype(torch.float)])
    with flowloader.DataLoader(str(painted / "images"), label_maps=str(painted / "labels"),
                               batch_size=len(RECTS), shuffle=False, seed=3,
                               transform=compose) as loader:
        (images, masks), = list(loader)
    seen = 0
    for image, mask in zip(images, masks):
        red = image[0] > 0.5
        assert torch.equal(red, mask == 1)
        assert bool(((mask == 0) | (mask == 1) | (mask == 255)).all())
        assert bool((mask == 255).any())  # Some of the canvas is uncovered.
        seen += int(red.sum())
    assert seen > 0
