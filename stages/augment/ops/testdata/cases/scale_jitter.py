"""scale_jitter: the detection reference's ScaleJitter (torchvision
references/detection/transforms.py at v0.14.0): F.resize(image, [new_h, new_w],
interpolation) on a PIL image (PIL's resize). Within 1 level: the resize kernel is
resize's, whose cases state the same bound.

Params: [new_height, new_width]. The draw restates forward()'s with torch's generator:
scale = lo + torch.rand(1) * (hi - lo); r = min(target_size[1] / h, target_size[0] / w) *
scale; new = int(size * r).
"""
import numpy as np
import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode
from harness import Distribution, Parity

MODES = {"bilinear": InterpolationMode.BILINEAR, "bicubic": InterpolationMode.BICUBIC,
         "nearest": InterpolationMode.NEAREST}


def case(text, params, mode="bilinear"):
    def reference(pil, p):
        return F.resize(pil, [int(p[0]), int(p[1])], interpolation=MODES[mode])
    return Parity(text, params, reference, max_diff=1)


PARITY = [
    case("scale_jitter(target_size=512)", [100, 77]),
    case("scale_jitter(target_size=512)", [300, 450]),
    case("scale_jitter(target_size=[256, 300], interpolation=nearest)", [31, 200], "nearest"),
    case("scale_jitter(target_size=512, interpolation=bicubic)", [129, 64], "bicubic"),
]


def draws(target, lo, hi):
    def draw(width, height, n):
        rows = []
        for _ in range(n):
            scale = lo + torch.rand(1) * (hi - lo)
            r = min(target[1] / height, target[0] / width) * scale
            rows.append([int(height * r), int(width * r)])
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("scale_jitter(target_size=512)", 640, 480, draws((512, 512), 0.1, 2.0),
                 applied=1.0),
    Distribution("scale_jitter(target_size=[300, 200], scale_range=[0.5, 1.5])", 100, 250,
                 draws((300, 200), 0.5, 1.5)),
]

REFUSED = [
    ("scale_jitter(scale_range=[0, 2])",
     "scale_jitter: scale_range must be [min, max] with 0 < min <= max <= 100"),
    ("scale_jitter(target_size=0)", "scale_jitter: target_size must be"),
    ("scale_jitter(interpolation=box)", "scale_jitter: interpolation must be"),
]
