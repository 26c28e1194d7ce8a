"""auto_augment: AutoAugment.forward run by torchvision itself with get_params replaced by
the params (policy_id, probs, signs); get_params' own distribution."""
import numpy as np
import torch
import torchvision.transforms as T
from harness import Distribution, Parity
from policy_ref import MODES

POLICIES = {"imagenet": T.AutoAugmentPolicy.IMAGENET, "cifar10": T.AutoAugmentPolicy.CIFAR10,
            "svhn": T.AutoAugmentPolicy.SVHN}


def reference(policy, interpolation="nearest", fill=None):
    def ref(pil, p):
        transform = T.AutoAugment(POLICIES[policy], MODES[interpolation], fill)
        given = (int(p[0]), torch.tensor(p[1:3], dtype=torch.float32),
                 torch.tensor([int(p[3]), int(p[4])]))
        transform.get_params = lambda n: given
        return transform(pil)
    return ref


PARITY = []
for name in POLICIES:
    for pid in range(25):
        # probs 0.05: both sub-ops apply unless their p is 0; signs alternate.
        PARITY.append(Parity(f"auto_augment(policy={name})", [pid, 0.05, 0.05, pid % 2, 1 - pid % 2],
                             reference(name), max_diff=0))
PARITY += [
    # Only the first sub-op (0.5 <= p) of sub-policies whose second has p < 0.7.
    Parity("auto_augment(fill=[9, 99, 199])", [10, 0.5, 0.7, 0, 0],
           reference("imagenet", fill=[9, 99, 199]), max_diff=0),
    Parity("auto_augment(policy=svhn, interpolation=bilinear)", [22, 0.1, 0.1, 1, 0],
           reference("svhn", "bilinear"), max_diff=1),
]


def draws(width, height, n):
    return np.array([[pid, probs[0].item(), probs[1].item(), signs[0].item(), signs[1].item()]
                     for pid, probs, signs in (T.AutoAugment.get_params(25) for _ in range(n))])


DISTRIBUTION = [
    Distribution("auto_augment()", 224, 224, draws, applied=1.0),
    Distribution("auto_augment(policy=cifar10, p=0.5)", 32, 32, draws, applied=0.5),
]

REFUSED = [
    ("auto_augment(policy=coco)", "policy must be imagenet, cifar10 or svhn"),
    ("auto_augment(fill=[1, 2, 3, 4])", "fill must be"),
    ("auto_augment(p=abc)", "p must be a number (the probability: 1 or more always applies, 0 or less never)"),
]
