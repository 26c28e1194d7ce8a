"""random_order: torchvision's RandomOrder(transforms): the sub-ops in the order Python's
random.shuffle gives. Params: the order, then the sub-ops' seed. The distribution's
reference is Python's random.shuffle itself (the 6 orders of 3, jointly)."""
import random

import numpy as np
import torchvision.transforms.functional as F
from harness import Distribution, Parity

_OPS = ("random_order(transforms=[center_crop(size=20); random_horizontal_flip(p=1); "
        "resize(size=[30, 24])])")
PARITY = [
    Parity(_OPS, [2, 0, 1, 9],
           lambda pil, p: F.hflip(F.center_crop(F.resize(pil, [30, 24]), 20))),
    Parity(_OPS, [1, 2, 0, 9],
           lambda pil, p: F.center_crop(F.resize(F.hflip(pil), [30, 24]), 20)),
]


def _shuffles(count):
    def draw(w, h, n):
        rng = random.Random(4)
        out = []
        for _ in range(n):
            order = list(range(count))
            rng.shuffle(order)
            out.append(order)
        return np.array(out)
    return draw


DISTRIBUTION = [
    Distribution("random_order(transforms=[grayscale(); random_invert(); random_equalize()])",
                 64, 64, _shuffles(3), columns=[0, 1, 2], joint=[(0, 1, 2)]),
]

REFUSED = [
    ("random_order(transforms=[random_erasing()])", "random_order: transforms: op 1 "
     "(random_erasing): works on the float tensor"),
]
