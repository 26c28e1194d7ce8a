"""color_jitter: F.adjust_brightness/contrast/saturation/hue on PIL images in the drawn
order; ColorJitter.get_params' permutation and factors.

Params: [fn_idx0..3, brightness, contrast, saturation, hue], a None factor as nan. All of
it is exact (max_diff 0): the blends restate Blend.c's float arithmetic, the hue path
Convert.c's rgb2hsv/hsv2rgb.
"""
import numpy as np
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from harness import Distribution, Parity

NAN = float("nan")
FNS = [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]


def jitter(pil, p):
    for fn in p[:4]:
        factor = p[4 + int(fn)]
        if factor == factor:  # Not nan (torchvision's None).
            pil = FNS[int(fn)](pil, factor)
    return pil


def colour_cube():
    """Every red and green with four blues: 262 144 colours, every hue branch."""
    r, g = np.meshgrid(np.arange(256), np.arange(256))
    planes = [np.stack([r, g, np.full_like(r, b)], axis=-1) for b in (0, 85, 170, 255)]
    return [Image.fromarray(np.concatenate(planes, axis=1).astype(np.uint8), "RGB")]


def flat_and_tiny():
    grey = np.full((9, 11, 3), 77, np.uint8)
    two = np.zeros((5, 6, 3), np.uint8)
    two[:, 3:] = (250, 3, 128)
    return [Image.fromarray(grey, "RGB"), Image.fromarray(two, "RGB"),
            Image.fromarray(np.array([[[9, 200, 31]]], np.uint8), "RGB")]


def single(fn, factor):
    p = [0, 1, 2, 3, NAN, NAN, NAN, NAN]
    p[4 + fn] = factor
    return p


PARITY = (
    [Parity("color_jitter(brightness=1)", single(0, f), jitter, max_diff=0,
            images=flat_and_tiny) for f in (0.0, 0.37, 0.5, 1.0, 1.0000001, 1.73, 2.0)]
    + [Parity("color_jitter(contrast=1)", single(1, f), jitter, max_diff=0,
              images=flat_and_tiny) for f in (0.0, 0.3, 0.999, 1.0, 1.6, 2.5)]
    + [Parity("color_jitter(saturation=1)", single(2, f), jitter, max_diff=0,
              images=flat_and_tiny) for f in (0.0, 0.5, 0.8125, 1.0, 1.2, 3.0)]
    + [Parity("color_jitter(hue=0.5)", single(3, f), jitter, max_diff=0, images=colour_cube)
       for f in (-0.5, -0.3, -0.1, -0.004, -0.0039, 0.0, 0.003, 0.05, 0.1, 0.25, 0.5)]
    + [
        # DINO's jitter with different orders, as get_params returns them.
        Parity("color_jitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)",
               [0, 1, 2, 3, 1.3, 0.7, 1.15, -0.08], jitter, max_diff=0),
        Parity("color_jitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)",
               [3, 2, 1, 0, 0.65, 1.38, 0.81, 0.1], jitter, max_diff=0),
        Parity("color_jitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)",
               [1, 3, 0, 2, 1.01, 1.4, 1.2, 0.033], jitter, max_diff=0),
        Parity("color_jitter(contrast=0.5, hue=0.5)", [2, 0, 3, 1, NAN, 1.45, NAN, -0.42],
               jitter, max_diff=0),
    ]
)


def draws(brightness=0, contrast=0, saturation=0, hue=0):
    def draw(width, height, n):
        cj = T.ColorJitter(brightness, contrast, saturation, hue)
        rows = []
        for _ in range(n):
            fn_idx, *factors = T.ColorJitter.get_params(cj.brightness, cj.contrast,
                                                         cj.saturation, cj.hue)
            rows.append(fn_idx.tolist() + [NAN if f is None else f for f in factors])
        return np.array(rows, dtype=np.float64)
    return draw


PERMUTATION = [(0, 1, 2, 3)]

DISTRIBUTION = [
    Distribution("color_jitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)", 64, 64,
                 draws(0.4, 0.4, 0.2, 0.1), applied=1.0, joint=PERMUTATION),
    Distribution("color_jitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1, p=0.8)",
                 64, 64, draws(0.4, 0.4, 0.2, 0.1), applied=0.8, joint=PERMUTATION),
    Distribution("color_jitter(brightness=[0.2, 0.9], saturation=1.5, hue=[-0.5, -0.2])", 64,
                 64, draws([0.2, 0.9], 0, 1.5, [-0.5, -0.2]), joint=PERMUTATION),
    Distribution("color_jitter(contrast=[1, 1], hue=0.5)", 64, 64, draws(0, [1, 1], 0, 0.5)),
]

REFUSED = [
    ("color_jitter(hue=0.7)",
     "color_jitter: hue must be a number or [min, max] within [-0.5, 0.5], got 0.7"),
    ("color_jitter(hue=[-0.6, 0.1])",
     "color_jitter: hue must be a number or [min, max] within [-0.5, 0.5], got [-0.6, 0.1]"),
    ("color_jitter(hue=-0.1)", "color_jitter: hue must be a non-negative number"),
    ("color_jitter(brightness=-1)",
     "color_jitter: brightness must be a non-negative number or [min, max], got -1"),
    ("color_jitter(contrast=[1.5, 0.5])",
     "color_jitter: contrast must be a number or [min, max] within [0, inf], got [1.5, 0.5]"),
    ("color_jitter(saturation=[-0.5, 1])", "color_jitter: saturation must be"),
    ("color_jitter(saturation=[0.1, 0.2, 0.3])", "color_jitter: saturation must be"),
    ("color_jitter(brightness=bright)", "color_jitter: brightness must be"),
    ("color_jitter(hue=0.1, p=null)", "color_jitter: p must be a number (the probability: 1 or more always applies, 0 or less never), got null"),
    ("color_jitter(brigthness=0.4)", "did you mean 'brightness'"),
]
