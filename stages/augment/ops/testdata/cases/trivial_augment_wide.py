"""trivial_augment_wide: TrivialAugmentWide.forward run by torchvision itself with the
params' draws scripted (policy_ref), and its selection code's distribution (torch)."""
import numpy as np
import torch
import torchvision.transforms as T
from harness import Distribution, Parity
from policy_ref import MODES, run_scripted, space_signed

SPACE = space_signed(T.TrivialAugmentWide(), 31)


def reference(bins=31, interpolation="nearest", fill=None):
    transform = T.TrivialAugmentWide(bins, MODES[interpolation], fill)

    def ref(pil, p):
        op, b, negate = (int(v) for v in p)
        _, has_mags, signed = SPACE[op]
        draws = [op] + ([b] if has_mags else []) + ([negate] if signed else [])
        return run_scripted(transform, pil, draws)
    return ref


def cases(text, bins_list, **kwargs):
    out = []
    for op, (name, has_mags, signed) in enumerate(SPACE):
        for b in (bins_list if has_mags else [0]):
            for negate in ((0, 1) if signed else (0,)):
                out.append(Parity(text, [op, b, negate], reference(**kwargs), max_diff=0))
    return out


PARITY = (cases("trivial_augment_wide()", [3, 30]) +
          cases("trivial_augment_wide(num_magnitude_bins=11, fill=[10, 200, 30])", [7],
                bins=11, fill=[10, 200, 30]))
# Bilinear geometry: PIL's float filter, within one level.
PARITY += [Parity("trivial_augment_wide(interpolation=bilinear)", [op, 17, 1],
                  reference(interpolation="bilinear"), max_diff=1) for op in range(1, 6)]


def draws(bins):
    transform = T.TrivialAugmentWide(bins)

    def draw(width, height, n):
        # TrivialAugmentWide.forward's own selection, with torch's generator.
        space = list(transform._augmentation_space(bins).values())
        rows = []
        for _ in range(n):
            op = int(torch.randint(len(space), (1,)).item())
            mags, signed = space[op]
            b = int(torch.randint(len(mags), (1,), dtype=torch.long).item()) if mags.ndim > 0 else 0
            negate = int(torch.randint(2, (1,))) if signed else 0
            rows.append([op, b, negate])
        return np.array(rows)
    return draw


DISTRIBUTION = [
    Distribution("trivial_augment_wide()", 176, 176, draws(31), applied=1.0),
    Distribution("trivial_augment_wide(num_magnitude_bins=8, p=0.4)", 64, 48, draws(8),
                 applied=0.4),
]

REFUSED = [
    ("trivial_augment_wide(num_magnitude_bins=1)", "num_magnitude_bins must be an integer"),
    ("trivial_augment_wide(num_magnitude_bins=7.5)", "num_magnitude_bins must be an integer"),
    ("trivial_augment_wide(interpolation=lanczos)", "interpolation must be"),
    ("trivial_augment_wide(fill=[1, 2])", "fill must be"),
    ("trivial_augment_wide(fill=3000000000)", "fill must be"),
    ("trivial_augment_wide(p=[1.5])", "p must be a number (the probability: 1 or more always applies, 0 or less never)"),
]
