"""rand_augment: RandAugment.forward run by torchvision itself with the params' draws
scripted (policy_ref); timm's inc1 sub-ops restated on PIL from timm's auto_augment.py
(rand_augment_transform, LEVEL_TO_ARG, NAME_TO_OP); the selection distributions of
torchvision's forward (torch) and of timm's RandAugment (numpy / python random)."""
import math
import random

import numpy as np
import torch
import torchvision.transforms as T
from harness import Distribution, Parity
from PIL import Image, ImageEnhance, ImageOps
from policy_ref import MODES, run_scripted, space_signed

SPACE = space_signed(T.RandAugment(), 31, (64, 64))


def reference(num_ops=1, magnitude=9, bins=31, interpolation="nearest", fill=None):
    """RandAugment(num_ops, magnitude, ...) for the applied sub-ops of params."""
    def ref(pil, p):
        subs = [p[i:i + 4] for i in range(0, len(p), 4)]
        applied = [s for s in subs if s[3]]
        transform = T.RandAugment(len(applied), magnitude, bins, MODES[interpolation], fill)
        draws = []
        for op, _, negate, _ in applied:
            draws += [int(op)] + ([int(negate)] if SPACE[int(op)][2] else [])
        return run_scripted(transform, pil, draws)
    return ref


def torchvision_cases(text, magnitude, **kwargs):
    out = []
    for op, (_, _, signed) in enumerate(SPACE):
        for negate in ((0, 1) if signed else (0,)):
            out.append(Parity(text, [op, magnitude, negate, 1],
                              reference(magnitude=magnitude, **kwargs), max_diff=0))
    return out


PARITY = (torchvision_cases("rand_augment(num_ops=1)", 9) +
          torchvision_cases("rand_augment(num_ops=1, magnitude=30, fill=77)", 30, fill=77))
PARITY += [
    # Two sub-ops in sequence; a sub-op that op_p left out.
    Parity("rand_augment()", [5, 9, 1, 1, 8, 9, 0, 1], reference(), max_diff=0),
    Parity("rand_augment(num_ops=2, op_p=0.5)", [10, 9, 0, 1, 3, 9, 1, 0], reference(),
           max_diff=0),
]

# timm's inc1 set (_RAND_INCREASING_TRANSFORMS) and its level functions, at timm's level
# (0..10): what rand_augment(increasing=true) must reproduce.
TIMM = ["AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing",
        "SolarizeIncreasing", "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing",
        "BrightnessIncreasing", "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel",
        "TranslateYRel"]
TIMM_SIGNED = {"Rotate", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing",
               "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"}
ENHANCE = {"ColorIncreasing": ImageEnhance.Color, "ContrastIncreasing": ImageEnhance.Contrast,
           "BrightnessIncreasing": ImageEnhance.Brightness,
           "SharpnessIncreasing": ImageEnhance.Sharpness}
PIL_MODES = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}


def timm_op(img, name, level, negate, resample, fill):
    sign = -1 if negate else 1
    f = level / 10.0
    kw = dict(resample=resample, fillcolor=fill)
    if name == "AutoContrast":
        return ImageOps.autocontrast(img)
    if name == "Equalize":
        return ImageOps.equalize(img)
    if name == "Invert":
        return ImageOps.invert(img)
    if name == "Rotate":
        return img.rotate(sign * f * 30.0, **kw)
    if name == "PosterizeIncreasing":
        return ImageOps.posterize(img, 4 - int(f * 4))
    if name == "SolarizeIncreasing":
        return ImageOps.solarize(img, 256 - min(256, int(f * 256)))
    if name == "SolarizeAdd":
        add = min(128, int(f * 110))
        return img.point([min(255, i + add) if i < 128 else i for i in range(256)] * 3)
    if name in ENHANCE:
        return ENHANCE[name](img).enhance(max(0.1, 1.0 + sign * f * 0.9))
    if name == "ShearX":
        return img.transform(img.size, Image.AFFINE, (1, sign * f * 0.3, 0, 0, 1, 0), **kw)
    if name == "ShearY":
        return img.transform(img.size, Image.AFFINE, (1, 0, 0, sign * f * 0.3, 1, 0), **kw)
    if name == "TranslateXRel":
        pixels = sign * f * 0.45 * img.size[0]
        return img.transform(img.size, Image.AFFINE, (1, 0, pixels, 0, 1, 0), **kw)
    if name == "TranslateYRel":
        pixels = sign * f * 0.45 * img.size[1]
        return img.transform(img.size, Image.AFFINE, (1, 0, 0, 0, 1, pixels), **kw)
    raise ValueError(name)


def timm_reference(bins, interpolation, fill):
    def ref(pil, p):
        for i in range(0, len(p), 4):
            op, level, negate, applied = p[i:i + 4]
            if applied:
                pil = timm_op(pil, TIMM[int(op)], level * 10.0 / (bins - 1), negate,
                              PIL_MODES[interpolation], tuple(fill))
        return pil
    return ref


def timm_cases(interpolation, max_diff):
    text = ("rand_augment(num_ops=1, magnitude=9, num_magnitude_bins=11, increasing=true, "
            f"interpolation={interpolation}, fill=[124, 116, 104])")
    out = []
    for op, name in enumerate(TIMM):
        for negate in ((0, 1) if name in TIMM_SIGNED else (0,)):
            # 8.37: a level between bins, as magnitude_std draws them.
            for level in (9, 10, 8.37):
                out.append(Parity(text, [op, level, negate, 1],
                                  timm_reference(11, interpolation, [124, 116, 104]),
                                  max_diff=max_diff))
    return out


PARITY += timm_cases("nearest", 0) + timm_cases("bilinear", 1)


def torchvision_draws(num_ops, magnitude_std=0.0, magnitude=9, bins=31):
    """RandAugment.forward's selection (torch), plus timm's magnitude noise."""
    space = list(T.RandAugment()._augmentation_space(bins, (64, 64)).values())
    rng = random.Random(5)

    def draw(width, height, n):
        rows = []
        for _ in range(n):
            row = []
            for _ in range(num_ops):
                op = int(torch.randint(len(space), (1,)).item())
                level = magnitude
                if magnitude_std > 0:  # timm's AugmentOp.__call__: gauss, clipped.
                    level = max(0.0, min(rng.gauss(magnitude, magnitude_std), bins - 1))
                negate = int(torch.randint(2, (1,))) if space[op][1] else 0
                row += [op, level, negate, 1]
            rows.append(row)
        return np.array(rows, dtype=np.float64)
    return draw


def timm_draws(num_ops, magnitude, magnitude_std, prob, bins):
    """timm's RandAugment.__call__ (np.random.choice with replacement) and AugmentOp."""
    np_rng = np.random.default_rng(6)
    rng = random.Random(6)

    def draw(width, height, n):
        rows = []
        for _ in range(n):
            row = []
            for op in np_rng.choice(len(TIMM), num_ops, replace=True):
                applied = not (prob < 1.0 and rng.random() > prob)
                level = max(0.0, min(rng.gauss(magnitude, magnitude_std), bins - 1))
                negate = int(rng.random() > 0.5) if TIMM[op] in TIMM_SIGNED else 0
                row += [op, level, negate, int(applied)]
            rows.append(row)
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("rand_augment()", 224, 224, torchvision_draws(2), applied=1.0),
    Distribution("rand_augment(num_ops=3, magnitude=5, num_magnitude_bins=11, p=0.3)", 64, 64,
                 torchvision_draws(3, magnitude=5, bins=11), applied=0.3),
    Distribution("rand_augment(magnitude_std=0.5, num_magnitude_bins=11)", 224, 224,
                 torchvision_draws(2, 0.5, bins=11)),
    # timm's rand-m9-mstd0.5-inc1 (p 0.5): the DeiT recipe.
    Distribution("rand_augment(magnitude=9, num_magnitude_bins=11, magnitude_std=0.5, "
                 "increasing=true, op_p=0.5)", 224, 224, timm_draws(2, 9, 0.5, 0.5, 11)),
]

REFUSED = [
    ("rand_augment(num_ops=-1)", "num_ops must be an integer in [0, 1024]"),
    ("rand_augment(num_ops=1025)", "num_ops must be an integer in [0, 1024]"),
    ("rand_augment(magnitude=31)", "magnitude must be a number in [-31, 30]"),
    ("rand_augment(magnitude=-32)", "magnitude must be a number in [-31, 30]"),
    ("rand_augment(magnitude=11, num_magnitude_bins=11)", "magnitude must be a number in [-11, 10]"),
    ("rand_augment(magnitude_std=-1)", "magnitude_std must be"),
    ("rand_augment(op_p=1.5)", "op_p must be a number in [0, 1]"),
    ("rand_augment(p=[1])", "p must be a number (the probability: 1 or more always applies, 0 or less never)"),
    ("rand_augment(interpolation=box)", "interpolation must be"),
    ("rand_augment(increasing=0.5)", "increasing must be true or false"),
    ("rand_augment(fill=[1, 2])", "fill must be"),
]
