"""elastic_transform: ElasticTransform.get_params' field (with scripted torch.rand planes:
the op's params) and F.elastic_transform, run by torchvision itself.

The field's blur is one conv2d in torch and two 1-D passes here (float rounding apart,
~1e-7), so a value on a rounding edge may move by one level.
"""
from unittest import mock

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "nearest": T.InterpolationMode.NEAREST}


def noise(seed):
    """Two torch.rand planes for the image's size (the op's params)."""
    def params(pil):
        w, h = pil.size
        g = torch.Generator().manual_seed(seed)
        planes = [torch.rand([1, 1, h, w], generator=g) for _ in range(2)]
        return torch.cat([p.flatten() for p in planes]).tolist()
    return params


def reference(alpha=50.0, sigma=5.0, mode="bilinear", fill=0):
    def ref(pil, p):
        w, h = pil.size
        planes = iter([torch.tensor(p[:w * h], dtype=torch.float32).view(1, 1, h, w),
                       torch.tensor(p[w * h:], dtype=torch.float32).view(1, 1, h, w)])
        a = [float(alpha)] * 2 if not isinstance(alpha, list) else alpha
        s = [float(sigma)] * 2 if not isinstance(sigma, list) else sigma
        with mock.patch.object(torch, "rand", lambda *args, **kw: next(planes)):
            displacement = T.ElasticTransform.get_params(a, s, [h, w])
        return F.elastic_transform(pil, displacement, MODES[mode], fill)
    return ref


PARITY = [
    Parity("elastic_transform()", noise(0), reference()),
    Parity("elastic_transform(alpha=120.0, sigma=3.0)", noise(1), reference(120.0, 3.0)),
    Parity("elastic_transform(alpha=[30, 90], sigma=[2, 4], fill=[255, 0, 128])", noise(2),
           reference([30.0, 90.0], [2.0, 4.0], fill=[255, 0, 128])),
    Parity("elastic_transform(interpolation=nearest, fill=9)", noise(3),
           reference(mode="nearest", fill=9)),
    Parity("elastic_transform(alpha=80.0, sigma=0)", noise(4), reference(80.0, 0.0)),
    Parity("elastic_transform(fill=null)", noise(5), reference(fill=None)),
]


def draws(width, height, n):
    return np.stack([torch.rand([2 * width * height]).numpy() for _ in range(n)])


DISTRIBUTION = [Distribution("elastic_transform()", 3, 2, draws, applied=1.0)]

REFUSED = [
    ("elastic_transform(alpha=-20000)", "elastic_transform: alpha must be"),
    ("elastic_transform(sigma=[5, 0])", "sigma must be a number or [x, y], both <= 0"),
    ("elastic_transform(interpolation=bicubic)", "interpolation must be nearest or bilinear"),
    ("elastic_transform(fill=[1, 2])", "fill must be"),
]
