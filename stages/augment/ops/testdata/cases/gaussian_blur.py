"""gaussian_blur: F.gaussian_blur on PIL images (torchvision's tensor conv2d with reflect
padding, rounded back to uint8); GaussianBlur.get_params for sigma.

Bound: within 1 level. Ours sums the separable kernel in two float passes, torchvision
the outer-product kernel in one conv2d; a value within float noise of .5 can round the
other way.
"""
import numpy as np
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity


def blur(kx, ky):
    return lambda pil, p: F.gaussian_blur(pil, [kx, ky], [p[0], p[0]])


PARITY = [
    Parity("gaussian_blur(kernel_size=23, sigma=[0.1, 2.0])", [1.5], blur(23, 23)),
    Parity("gaussian_blur(kernel_size=23)", [2.0], blur(23, 23)),
    Parity("gaussian_blur(kernel_size=23)", [0.1], blur(23, 23)),
    Parity("gaussian_blur(kernel_size=[5, 9], sigma=0.7)", [0.7], blur(5, 9)),
    Parity("gaussian_blur(kernel_size=[21, 7], sigma=[3, 4])", [3.3], blur(21, 7)),
    Parity("gaussian_blur(kernel_size=3)", [0.83], blur(3, 3)),
    Parity("gaussian_blur(kernel_size=1)", [1.0], blur(1, 1), max_diff=0),
]


def sigmas(lo, hi):
    return lambda w, h, n: np.array([[T.GaussianBlur.get_params(lo, hi)] for _ in range(n)])


DISTRIBUTION = [
    Distribution("gaussian_blur(kernel_size=23, sigma=[0.1, 2.0])", 224, 224,
                 sigmas(0.1, 2.0), applied=1.0),
    Distribution("gaussian_blur(kernel_size=9, sigma=[1.0, 5.0], p=0.5)", 96, 96,
                 sigmas(1.0, 5.0), applied=0.5),
]

REFUSED = [
    ("gaussian_blur(kernel_size=4)", "gaussian_blur: kernel_size must be an odd integer"),
    ("gaussian_blur(kernel_size=[3, 0])", "kernel_size must be an odd integer"),
    ("gaussian_blur(kernel_size=-3)", "kernel_size must be an odd integer"),
    ("gaussian_blur(kernel_size=2.5)", "kernel_size must be an odd integer"),
    ("gaussian_blur(sigma=-1)", "gaussian_blur: sigma must be a number > 0"),
    ("gaussian_blur(sigma=0)", "sigma must be a number > 0"),
    ("gaussian_blur(sigma=[2.0, 1.0])", "sigma must be a number > 0 or [min, max] with 0 < min <= max, got [2, 1]"),
    ("gaussian_blur(sigma=[0, 1.0])", "sigma must be"),
]
