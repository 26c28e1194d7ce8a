"""policy_ref: runs torchvision's own policy forward() with scripted random draws, so that
a parity case's reference is torchvision's code path given flowloader's params."""
from unittest import mock

import torch
import torchvision.transforms as T

MODES = {"nearest": T.InterpolationMode.NEAREST, "bilinear": T.InterpolationMode.BILINEAR,
         "bicubic": T.InterpolationMode.BICUBIC}


class Scripted:
    """Stands in for torch.randint: returns the given values in order."""

    def __init__(self, values):
        self.values = [int(v) for v in values]

    def __call__(self, *args, **kwargs):
        if not self.values:
            raise AssertionError("torchvision drew more than the case scripted")
        return torch.tensor([self.values.pop(0)])


def run_scripted(transform, pil, draws):
    """transform(pil) with torch.randint returning `draws` in order (all must be used)."""
    scripted = Scripted(draws)
    with mock.patch.object(torch, "randint", scripted):
        out = transform(pil)
    if scripted.values:
        raise AssertionError(f"torchvision left draws unused: {scripted.values}")
    return out


def space_signed(transform, *space_args):
    """[(name, has_magnitudes, signed)] of a policy's _augmentation_space, in order."""
    return [(name, mags.ndim > 0, signed)
            for name, (mags, signed) in transform._augmentation_space(*space_args).items()]
