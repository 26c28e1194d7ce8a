"""random_iou_crop: the detection reference's RandomIoUCrop (torchvision
references/detection/transforms.py at v0.14.0): F.crop(image, top, left, new_h, new_w) on a
PIL image. Exact.

Params: [top, left, height, width], or none (left as is). Its draw looks at the boxes, so
its distribution (against the reference's loop, on the same boxes) and its targets are
tested in stages/detection (detection_ops_parity_test); here only the pixels.
"""
import torchvision.transforms.functional as F
from harness import Parity


def reference(pil, p):
    if not p:
        return pil
    return F.crop(pil, int(p[0]), int(p[1]), int(p[2]), int(p[3]))


def params(pil):
    w, h = pil.size
    return [h // 5, w // 7, h // 2, w - w // 7 - 1]


PARITY = [
    Parity("random_iou_crop()", params, reference, max_diff=0),
    Parity("random_iou_crop(min_scale=0.5, sampler_options=[0.3, 1.0])", [], reference,
           max_diff=0),
]

DISTRIBUTION = []  # With boxes: detection_ops_parity_test.

REFUSED = [
    ("random_iou_crop(min_scale=0)", "random_iou_crop: min_scale must be a number in (0, 1]"),
    ("random_iou_crop(max_scale=0.2)", "max_scale must be a number in [min_scale, 1]"),
    ("random_iou_crop(trials=0)", "trials must be an integer in [1, 1000]"),
    ("random_iou_crop(sampler_options=[-1, 0.5])", "sampler_options must be"),
]
