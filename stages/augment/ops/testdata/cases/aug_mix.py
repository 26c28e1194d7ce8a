"""aug_mix: AugMix.forward run by torchvision itself with its draws scripted (policy_ref's
torch.randint, and _sample_dirichlet, the method torchvision keeps apart for tests).

torchvision's AugMix runs its tensor kernels even on PIL images (pil_to_tensor first);
flowloader's sub-ops are the policies' PIL ones, whose rounding (the tensor colour ops
truncate, PIL's round) and bilinear edges differ by about a level per sub-op: bounded by
PSNR. The mixing arithmetic is torchvision's, in float32 (a chain of identity-like
sub-ops gives its bytes: the equalize-only cases below are exact but for that rounding).
"""
import numpy as np
import torch
import torchvision.transforms as T
from harness import Distribution, Parity
from policy_ref import MODES, run_scripted

SPACE = [(name, mags.ndim > 0, signed) for name, (mags, signed) in
         T.AugMix()._augmentation_space(10, (64, 64)).items()]


def reference(width=3, depth=-1, all_ops=True, interpolation="bilinear", fill=None,
              severity=3):
    def ref(pil, p):
        transform = T.AugMix(severity, width, depth, 1.0, all_ops, MODES[interpolation], fill)
        weights = iter([torch.tensor([p[:2]]), torch.tensor([p[2:2 + width]])])
        transform._sample_dirichlet = lambda params: next(weights)
        draws, at = [], 2 + width
        for _ in range(width):
            d = int(p[at])
            at += 1
            if depth <= 0:
                draws.append(d)  # torch.randint(1, 4).
            for _ in range(d):
                op, b, negate = (int(v) for v in p[at:at + 3])
                at += 3
                _, has_mags, signed = SPACE[op]
                draws += [op] + ([b] if has_mags else []) + ([negate] if signed else [])
        return run_scripted(transform, pil, draws)
    return ref


def chains(width, depth_ops, m=(0.3, 0.7)):
    """Params: Dirichlet weights (m, then equal chain weights) and the chains' ops."""
    params = list(m) + [1.0 / width] * width
    for ops in depth_ops:
        params.append(len(ops))
        for op, b, negate in ops:
            params += [op, b, negate]
    return params


PARITY = [
    # Equalize and autocontrast only (7, 8): the same bytes in both but for the mix.
    Parity("aug_mix(mixture_width=2)", chains(2, [[(8, 0, 0)], [(7, 0, 0), (8, 0, 0)]]),
           reference(width=2), max_diff=1),
    Parity("aug_mix(mixture_width=2, chain_depth=1)", chains(2, [[(6, 2, 0)], [(5, 1, 0)]],
                                                             m=(0.55, 0.45)),
           reference(width=2, depth=1), max_diff=1),
    # Every sub-op, signed both ways, bin 2: PIL's kernels against the tensor ones.
    Parity("aug_mix()", chains(3, [[(0, 2, 1), (1, 2, 0), (2, 2, 1)],
                                   [(3, 2, 0), (4, 2, 1), (9, 2, 0)],
                                   [(10, 2, 1), (11, 2, 0), (12, 2, 1)]]),
           reference(), min_psnr=30),
    Parity("aug_mix(interpolation=nearest, fill=[10, 20, 30])",
           chains(3, [[(0, 1, 0)], [(3, 2, 1), (4, 1, 0)], [(11, 0, 1)]]),
           reference(interpolation="nearest", fill=[10, 20, 30]), min_psnr=30),
]


def draws(width, depth, all_ops):
    transform = T.AugMix(3, width, depth, 1.0, all_ops)

    def draw(w, h, n):
        # forward()'s own draws: Dirichlet weights, then each chain's depth and sub-ops.
        space = list(transform._augmentation_space(10, (h, w)).values())
        rows = []
        for _ in range(n):
            m = transform._sample_dirichlet(torch.tensor([[1.0, 1.0]]))[0].tolist()
            c = transform._sample_dirichlet(torch.tensor([[1.0] * width]))[0].tolist()
            row = m + c
            for _ in range(width):
                d = depth if depth > 0 else int(torch.randint(1, 4, (1,)).item())
                row.append(d)
                for k in range(d):
                    op = int(torch.randint(len(space), (1,)).item())
                    mags, signed = space[op]
                    b = int(torch.randint(3, (1,)).item()) if mags.ndim > 0 else 0
                    negate = int(torch.randint(2, (1,))) if signed else 0
                    if k == 0:
                        row += [op, b, negate]
            rows.append(row[:2 + width + 4])  # Weights, and chain 0's depth and first op.
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("aug_mix()", 64, 48, draws(3, -1, True), columns=range(9)),
    Distribution("aug_mix(mixture_width=2, chain_depth=2, all_ops=false)", 64, 48,
                 draws(2, 2, False), columns=range(8)),
]

REFUSED = [
    ("aug_mix(severity=0)", "aug_mix: severity must be an integer"),
    ("aug_mix(severity=11)", "aug_mix: severity must be an integer"),
    ("aug_mix(mixture_width=0)", "mixture_width must be"),
    ("aug_mix(chain_depth=17)", "chain_depth must be"),
    ("aug_mix(alpha=0)", "alpha must be a number in (0, 1000]"),
    ("aug_mix(interpolation=lanczos)", "interpolation must be"),
    ("aug_mix(fill=[1, 2])", "fill must be"),
]
