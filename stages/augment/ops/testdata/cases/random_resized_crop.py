"""random_resized_crop: F.resized_crop with get_params' box; RandomResizedCrop.get_params."""
import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
         "nearest": T.InterpolationMode.NEAREST, "box": T.InterpolationMode.BOX,
         "hamming": T.InterpolationMode.HAMMING, "lanczos": T.InterpolationMode.LANCZOS}


def box(pil):
    w, h = pil.size
    return [h // 5, w // 7, h - h // 3, w - w // 4]  # top, left, height, width


def reference(mode, size):
    return lambda pil, p: F.resized_crop(pil, int(p[0]), int(p[1]), int(p[2]), int(p[3]),
                                         size, MODES[mode])


PARITY = [
    Parity(f"random_resized_crop(size=[40, 56], interpolation={m})", box,
           reference(m, [40, 56]), max_diff=0)
    for m in MODES
] + [Parity(f"random_resized_crop(size={n}, interpolation={m})", box,
            reference(m, [n, n]), max_diff=0)
     for m, n in (("bicubic", 96), ("lanczos", 96), ("box", 9), ("hamming", 131))]


def draws(scale, ratio):
    def draw(width, height, n):
        img = torch.zeros(1, height, width)
        return np.array([T.RandomResizedCrop.get_params(img, scale, ratio) for _ in range(n)])
    return draw


DISTRIBUTION = [
    Distribution("random_resized_crop(size=224)", 500, 375,
                 draws([0.08, 1.0], [3 / 4, 4 / 3]), applied=1.0),
    Distribution("random_resized_crop(size=224, scale=[0.4, 1.0])", 320, 480,
                 draws([0.4, 1.0], [3 / 4, 4 / 3])),
    Distribution("random_resized_crop(size=96, scale=[0.05, 0.4])", 500, 375,
                 draws([0.05, 0.4], [3 / 4, 4 / 3])),
]

REFUSED = [
    ("random_resized_crop(size=0)", "size must be"),
    ("random_resized_crop(scale=[0.5, 0.2])", "scale must be"),
    ("random_resized_crop(interpolation=sinc)", "interpolation must be"),
    ("random_resized_crop(sise=3)", "did you mean 'size'"),
    ("random_resized_crop(p=null)", "p must be a number (the probability: 1 or more always applies, 0 or less never)"),
]
