"""random_crop: RandomCrop.forward with given (top, left): F.pad by padding, the
pad_if_needed pads, then F.crop; RandomCrop.get_params on the padded size.

Exact: a crop of (padded) pixels; np.pad's patterns for edge/reflect/symmetric, including
its repeated reflections where a pad is wider than the image.
"""
import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity


def padded(pil, size, padding, pad_if_needed, fill, mode):
    img = pil
    if padding is not None:
        img = F.pad(img, padding, fill, mode)
    w, h = img.size
    if pad_if_needed and w < size[1]:
        img = F.pad(img, [size[1] - w, 0], fill, mode)
    w, h = img.size
    if pad_if_needed and h < size[0]:
        img = F.pad(img, [0, size[0] - h], fill, mode)
    return img


def case(text, size, padding=None, pad_if_needed=False, fill=0, mode="constant"):
    def params(pil):
        w, h = padded(pil, size, padding, pad_if_needed, fill, mode).size
        return [(h - size[0]) // 3, (w - size[1]) * 2 // 3, size[0], size[1]]

    def reference(pil, p):
        img = padded(pil, size, padding, pad_if_needed, fill, mode)
        return F.crop(img, int(p[0]), int(p[1]), size[0], size[1])

    return Parity(text, params, reference, max_diff=0)


PARITY = [
    case("random_crop(size=32)", [32, 32]),
    case("random_crop(size=[40, 20], padding=4, fill=[255, 0, 10])", [40, 20], 4,
         fill=[255, 0, 10]),
    case("random_crop(size=[30, 50], padding=[3, 7], padding_mode=edge)", [30, 50], [3, 7],
         mode="edge"),
    case("random_crop(size=[35, 45], padding=[1, 2, 3, 4], padding_mode=reflect)", [35, 45],
         [1, 2, 3, 4], mode="reflect"),
    case("random_crop(size=[90, 140], padding=[50, 3, 70, 60], padding_mode=reflect)",
         [90, 140], [50, 3, 70, 60], mode="reflect"),
    case("random_crop(size=[90, 140], padding=[50, 3, 70, 60], padding_mode=symmetric)",
         [90, 140], [50, 3, 70, 60], mode="symmetric"),
    case("random_crop(size=[100, 250], pad_if_needed=true, padding_mode=reflect)",
         [100, 250], None, True, mode="reflect"),
    case("random_crop(size=[100, 250], padding=2, pad_if_needed=true, fill=[1, 2, 3])",
         [100, 250], 2, True, fill=[1, 2, 3]),
    case("random_crop(size=[190, 90], pad_if_needed=true, padding_mode=symmetric)",
         [190, 90], None, True, mode="symmetric"),
]


def draws(size, padded_w, padded_h):
    def draw(width, height, n):
        img = torch.zeros(1, padded_h, padded_w)
        return np.array([T.RandomCrop.get_params(img, size) for _ in range(n)])
    return draw


DISTRIBUTION = [
    Distribution("random_crop(size=32, padding=4)", 64, 64, draws((32, 32), 72, 72),
                 applied=1.0),
    # 40 high: padded 10 above and below to 60; 100 wide: no padding.
    Distribution("random_crop(size=[50, 60], pad_if_needed=true)", 100, 40,
                 draws((50, 60), 100, 60)),
    Distribution("random_crop(size=[7, 9], padding=[1, 2])", 12, 20, draws((7, 9), 14, 24)),
]

REFUSED = [
    ("random_crop(size=0)", "random_crop: size must be"),
    ("random_crop(padding=[1, 2, 3])", "random_crop: padding must be null, an integer"),
    ("random_crop(padding=-16385)", "padding must be"),
    ("random_crop(padding=2.5)", "padding must be"),
    ("random_crop(padding_mode=wrap)", "random_crop: padding_mode must be constant, edge, "
                                       "reflect or symmetric, got wrap"),
    ("random_crop(fill=[1, 2])", "random_crop: fill must be"),
    ("random_crop(pad_if_needed=maybe)", "random_crop: pad_if_needed must be true or false"),
]
