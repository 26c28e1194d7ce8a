"""random_zoom_out: the detection reference's RandomZoomOut (torchvision
references/detection/transforms.py at v0.14.0): F.pad(image, [left, top, right, bottom],
fill=tuple(int(x) for x in fill)) on a PIL image. Exact.

Params: [left, top, right, bottom]. The draw restates forward()'s, with torch's
generator: r = side_range[0] + torch.rand(1) * (side_range[1] - side_range[0]);
canvas = int(size * r); left, top = int((canvas - size) * torch.rand(2)).
"""
import numpy as np
import torch
import torchvision.transforms.functional as F
from harness import Distribution, Parity


def case(text, params, fill=(0, 0, 0)):
    def reference(pil, p):
        return F.pad(pil, [int(v) for v in p], fill=tuple(int(x) for x in fill))
    return Parity(text, params, reference, max_diff=0)


PARITY = [
    case("random_zoom_out()", [5, 7, 30, 2]),
    case("random_zoom_out(fill=[123, 117, 104])", [0, 40, 11, 0], (123, 117, 104)),
    case("random_zoom_out(fill=9)", [0, 0, 0, 0], (9, 9, 9)),
]


def draws(lo, hi):
    def draw(width, height, n):
        rows = []
        for _ in range(n):
            r = lo + torch.rand(1) * (hi - lo)
            cw, ch = int(width * r), int(height * r)
            r = torch.rand(2)
            left, top = int((cw - width) * r[0]), int((ch - height) * r[1])
            rows.append([left, top, cw - (left + width), ch - (top + height)])
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("random_zoom_out()", 60, 40, draws(1.0, 4.0), applied=0.5),
    Distribution("random_zoom_out(side_range=[1.5, 2.0], p=1)", 33, 77, draws(1.5, 2.0),
                 applied=1.0),
]

REFUSED = [
    ("random_zoom_out(side_range=[0.5, 2.0])",
     "random_zoom_out: side_range must be [min, max] with 1 <= min <= max <= 16"),
    ("random_zoom_out(side_range=[3, 2])", "side_range must be"),
    ("random_zoom_out(fill=[1, 2])", "random_zoom_out: fill must be"),
]
