"""random_erasing: F.erase on the normalized tensor; RandomErasing.get_params and timm's
RandomErasing draws (max_count). The noise of value=random / mode pixel|rand comes from
flowloader's stream, not torch's: ops_test checks its statistics instead."""
import math
import random

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity


def box(pil, k=0):
    """A box inside the PIL image (the parity test passes the image the tensor is from)."""
    w, h = pil.size
    return [h // 5 + k, w // 7 + 2 * k, h // 3, w // 4 + k]


def erase(value, boxes=1):
    """F.erase with torch.tensor(value)[:, None, None], box after box."""
    def reference(tensor, p):
        v = torch.tensor(value, dtype=torch.float32)[:, None, None]
        out = F.erase(tensor, int(p[0]), int(p[1]), int(p[2]), int(p[3]), v)
        for at in range(5, 5 + 4 * (boxes - 1), 4):
            out = F.erase(out, int(p[at]), int(p[at + 1]), int(p[at + 2]), int(p[at + 3]), v)
        return out
    return reference


def unchanged(tensor, p):
    return tensor


PARITY = [
    Parity("random_erasing()", lambda pil: box(pil) + [12345], erase([0.0]), max_diff=0,
           tensor_input=True),
    Parity("random_erasing(value=1.5, p=1)", lambda pil: box(pil) + [7], erase([1.5]),
           max_diff=0, tensor_input=True),
    Parity("random_erasing(value=[0.5, -1, 2.25])", lambda pil: box(pil) + [7],
           erase([0.5, -1.0, 2.25]), max_diff=0, tensor_input=True),
    # get_params' fallback (0, 0, H, W) returns the image itself.
    Parity("random_erasing(value=3)", lambda pil: [0, 0, pil.size[1], pil.size[0], 1],
           unchanged, max_diff=0, tensor_input=True),
    Parity("random_erasing(max_count=3, value=-0.5)",
           lambda pil: box(pil) + [9] + box(pil, 3) + box(pil, 5), erase([-0.5], boxes=3),
           max_diff=0, tensor_input=True),
]


def torchvision_draws(scale, ratio):
    def draw(width, height, n):
        img = torch.zeros(3, height, width)
        rows = []
        for _ in range(n):
            i, j, h, w, _ = T.RandomErasing.get_params(img, scale, ratio, value=[0.0])
            rows.append([i, j, h, w])
        return np.array(rows)
    return draw


def timm_draws(scale, ratio, max_count):
    """timm's RandomErasing._erase draws (python's random), boxes padded with NaN."""
    rng = random.Random(3)

    def draw(width, height, n):
        rows = []
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(n):
            count = rng.randint(1, max_count)
            row = []
            for _ in range(count):
                for _ in range(10):
                    area = rng.uniform(*scale) * width * height / count
                    aspect = math.exp(rng.uniform(*log_ratio))
                    h = int(round(math.sqrt(area * aspect)))
                    w = int(round(math.sqrt(area / aspect)))
                    if w < width and h < height:
                        row += [rng.randint(0, height - h), rng.randint(0, width - w), h, w]
                        break
                else:
                    row += [0, 0, height, width]
                if len(row) == 4:
                    row.append(np.nan)  # The seed's column.
            rows.append(row + [np.nan] * (5 + 4 * (max_count - 1) - len(row)))
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("random_erasing()", 224, 224,
                 torchvision_draws([0.02, 0.33], [0.3, 3.3]), applied=0.5),
    Distribution("random_erasing(p=0.25, scale=[0.1, 0.5], ratio=[0.5, 2.0])", 176, 144,
                 torchvision_draws([0.1, 0.5], [0.5, 2.0]), applied=0.25),
    # A small image: many attempts fail, some samples fall back to (0, 0, H, W).
    Distribution("random_erasing(p=1, scale=[0.3, 0.9])", 20, 12,
                 torchvision_draws([0.3, 0.9], [0.3, 3.3]), applied=1.0),
    Distribution("random_erasing(max_count=3, mode=pixel)", 224, 224,
                 timm_draws([0.02, 0.33], [0.3, 3.3], 3), columns=[0, 1, 2, 3, 5, 6, 7, 8, 9,
                                                                    10, 11, 12]),
]

REFUSED = [
    ("random_erasing(p=1.5)", "p must be a number in [0, 1]"),
    ("random_erasing(scale=[0.33, 0.02])", "scale must be"),
    ("random_erasing(scale=[0.1, 1.5])", "scale must be"),
    ("random_erasing(ratio=[0, 3.3])", "ratio must be"),
    ("random_erasing(value=foo)", "value must be a number, [r, g, b] or random"),
    ("random_erasing(value=[1, 2])", "value must be"),
    ("random_erasing(mode=noise)", "mode must be const, rand or pixel"),
    ("random_erasing(mode=rand, value=1)", "value must be left out"),
    ("random_erasing(max_count=6)", "max_count must be an integer in [1, 5]"),
]
