"""random_choice: torchvision's RandomChoice(transforms, p): one sub-op picked as
`random.choices(transforms, weights=p)` picks it (p is `weights` here). Params: the
chosen index, the sub-ops' seed. The distribution's reference is Python's
random.choices itself."""
import random

import numpy as np
import torchvision.transforms.functional as F
from harness import Distribution, Parity

_FLIPS = ("random_choice(transforms=[random_horizontal_flip(p=1); random_vertical_flip(p=1); "
          "grayscale()], weights=[1, 2, 0.5])")
PARITY = [
    Parity(_FLIPS, [0, 7], lambda pil, p: F.hflip(pil), max_diff=0),
    Parity(_FLIPS, [1, 7], lambda pil, p: F.vflip(pil), max_diff=0),
    Parity(_FLIPS, [2, 7], lambda pil, p: F.rgb_to_grayscale(pil, 3), max_diff=0),
]


def _choices(weights, count):
    def draw(w, h, n):
        rng = random.Random(3)
        return np.array([[rng.choices(range(count), weights=weights)[0]] for _ in range(n)])
    return draw


DISTRIBUTION = [
    Distribution(_FLIPS, 64, 64, _choices([1, 2, 0.5], 3), columns=[0], applied=1.0),
    Distribution("random_choice(transforms=[grayscale(); random_invert(); "
                 "random_solarize(threshold=9); random_equalize()])", 64, 64,
                 _choices(None, 4), columns=[0]),
    Distribution("random_choice(transforms=[grayscale(); random_invert()], weights=[0, 1], "
                 "p=0.4)", 64, 64, _choices([0, 1], 2), columns=[0], applied=0.4),
]

REFUSED = [
    ("random_choice(transforms=[grayscale(); random_invert()], weights=[1])",
     "random_choice: weights must be null or 2 numbers >= 0"),
    ("random_choice(transforms=[grayscale(); random_invert()], weights=[0, 0])",
     "not all 0"),
    ("random_choice(transforms=[grayscale(); random_invert()], weights=[-1, 2])",
     "random_choice: weights must be"),
    ("random_choice(transforms=[normalize()])", "random_choice: transforms: op 1 (normalize)"),
]
