"""random_shortest_size: the detection reference's RandomShortestSize (torchvision
references/detection/transforms.py at v0.14.0): F.resize(image, [new_h, new_w],
interpolation) on a PIL image. Within 1 level (resize's kernel and bound).

Params: [new_height, new_width]. The draw restates forward()'s with torch's generator:
m = min_size[torch.randint(len(min_size), (1,))]; r = min(m / min(h, w), max_size /
max(h, w)); new = int(size * r).
"""
import numpy as np
import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode
from harness import Distribution, Parity

PARITY = [
    Parity("random_shortest_size(min_size=[100, 200], max_size=300)", [150, 99],
           lambda pil, p: F.resize(pil, [int(p[0]), int(p[1])]), max_diff=1),
    Parity("random_shortest_size(min_size=64, max_size=100, interpolation=bicubic)", [64, 90],
           lambda pil, p: F.resize(pil, [int(p[0]), int(p[1])],
                                   interpolation=InterpolationMode.BICUBIC), max_diff=1),
]


def draws(min_size, max_size):
    def draw(width, height, n):
        rows = []
        for _ in range(n):
            m = min_size[torch.randint(len(min_size), (1,)).item()]
            r = min(m / min(height, width), max_size / max(height, width))
            rows.append([int(height * r), int(width * r)])
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("random_shortest_size()", 640, 427,
                 draws([480, 512, 544, 576, 608, 640, 672, 704, 736, 768, 800], 1333),
                 applied=1.0),
    Distribution("random_shortest_size(min_size=[100, 150, 900], max_size=1000)", 300, 500,
                 draws([100, 150, 900], 1000)),
]

REFUSED = [
    ("random_shortest_size(min_size=[])", "random_shortest_size: min_size must be"),
    ("random_shortest_size(min_size=[10, 2.5])", "min_size must be an integer or a list"),
    ("random_shortest_size(max_size=0)", "random_shortest_size: max_size must be"),
]
