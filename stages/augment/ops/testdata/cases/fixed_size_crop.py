"""fixed_size_crop: the detection reference's FixedSizeCrop (torchvision
references/detection/transforms.py at v0.14.0), forward() on a PIL image with the crop
corner given: F.crop to min(size, image), then F.pad(img, [0, 0, right, bottom], fill,
padding_mode). Exact.

Params: [top, left]. The draw restates forward()'s with torch's generator: one
r = torch.rand(1) for both, top = int(max(H - h, 0) * r), left = int(max(W - w, 0) * r),
drawn only when the image is larger than size on some side.
"""
import numpy as np
import torch
import torchvision.transforms.functional as F
from harness import Distribution, Parity


def case(text, size, fill=0, mode="constant"):
    def params(pil):
        w, h = pil.size
        return [max(h - size[0], 0) // 3, max(w - size[1], 0) // 3]

    def reference(pil, p):
        w, h = pil.size
        nh, nw = min(h, size[0]), min(w, size[1])
        img = pil
        if nh != h or nw != w:
            img = F.crop(img, int(p[0]), int(p[1]), nh, nw)
        bottom, right = max(size[0] - nh, 0), max(size[1] - nw, 0)
        if bottom or right:
            img = F.pad(img, [0, 0, right, bottom], fill, mode)
        return img
    return Parity(text, params, reference, max_diff=0)


PARITY = [
    case("fixed_size_crop(size=64)", [64, 64]),
    case("fixed_size_crop(size=[500, 20])", [500, 20]),
    case("fixed_size_crop(size=[900, 900], fill=[3, 4, 5])", [900, 900], (3, 4, 5)),
    case("fixed_size_crop(size=[700, 30], padding_mode=reflect)", [700, 30], mode="reflect"),
    case("fixed_size_crop(size=[20, 800], padding_mode=edge)", [20, 800], mode="edge"),
]


def draws(size):
    def draw(width, height, n):
        rows = []
        for _ in range(n):
            top = left = 0
            if min(height, size[0]) != height or min(width, size[1]) != width:
                r = torch.rand(1)
                top = int(max(height - size[0], 0) * r)
                left = int(max(width - size[1], 0) * r)
            rows.append([top, left])
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("fixed_size_crop(size=512)", 900, 700, draws((512, 512)), applied=1.0),
    Distribution("fixed_size_crop(size=[100, 300])", 250, 200, draws((100, 300))),
]

REFUSED = [
    ("fixed_size_crop(size=0)", "fixed_size_crop: size must be"),
    ("fixed_size_crop(padding_mode=wrap)", "fixed_size_crop: padding_mode must be"),
    ("fixed_size_crop(fill=[1, 2])", "fixed_size_crop: fill must be"),
]
