#!/usr/bin/python3
"""recipes_torch.py: the PyTorch side of recipes_bench.py: one epoch of a standard
DataLoader running one of today's training recipes, written as its upstream source
writes it in torchvision 0.14.

    /usr/bin/python3 recipes_torch.py --recipe=torchvision_v2|timm_randaugment|dino|simclr \
        --data=DIR [--num_workers=2 --batch_size=64 --seed=0] \
        [--mixup_alpha=0.2 --cutmix_alpha=1.0] [--blur=torchvision|pil]

Recipes (runtime/specs/<recipe>.yaml is flowloader's form of each):
  torchvision_v2    references/classification/presets.py ClassificationPresetTrain(176,
                    ta_wide, random_erase 0.1); its batch-level Mixup/CutMix with
                    --mixup_alpha/--cutmix_alpha (below)
  timm_randaugment  timm's rand-m9-mstd0.5-inc1 train transform; timm is not installed
                    here, so torchvision's RandAugment(2, 9) stands in (the issue's choice)
                    with timm's bicubic crop and RandomErasing(0.25, random values)
  dino              DataAugmentationDINO: 2 x 224 + 8 x 96 crops
  simclr            MoCo v3's two augmentations (BYOL's asymmetric blur/solarize)
DINO's and MoCo v3's blur and solarize are their own PIL classes. --blur=torchvision (the
default) writes them in torchvision 0.14, as the specs do: RandomApply([GaussianBlur(23,
(0.1, 2.0))], p) and RandomSolarize(128, p), the same ops as the specs' gaussian_blur and
random_solarize. --blur=pil runs upstream's classes (ImageFilter.GaussianBlur with a
uniform radius, ImageOps.solarize), the ops of a spec with pil_gaussian_blur.
DataLoader(batch_size, num_workers, shuffle=True), torch.set_num_threads(1) per worker.
With --mixup_alpha and/or --cutmix_alpha > 0, the DataLoader's collate_fn is the one of
torchvision's references/classification/train.py: default_collate, then
RandomChoice([RandomMixup(num_classes, p=1.0, alpha=mixup_alpha),
RandomCutmix(num_classes, p=1.0, alpha=cutmix_alpha)]) (either alone when the other is 0),
num_classes = the ImageFolder's classes; it runs in the workers, as there.
Prints one JSON line: samples, seconds from the first batch to the last, images/s after
the first batch.
"""
import argparse
import json
import math
import random
import time

import torch
from PIL import ImageFilter, ImageOps
from torch.utils.data import DataLoader, default_collate
from torchvision import datasets, transforms as T

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class PilGaussianBlur:
    """DINO's utils.GaussianBlur / MoCo v3's moco.loader.GaussianBlur (PIL radius)."""

    def __init__(self, p=0.5, radius_min=0.1, radius_max=2.0):
        self.p, self.radius_min, self.radius_max = p, radius_min, radius_max

    def __call__(self, img):
        if random.random() > self.p:
            return img
        return img.filter(ImageFilter.GaussianBlur(
            radius=random.uniform(self.radius_min, self.radius_max)))


class PilSolarization:
    """DINO's utils.Solarization / MoCo v3's Solarize."""

    def __init__(self, p):
        self.p = p

    def __call__(self, img):
        return ImageOps.solarize(img) if random.random() < self.p else img


def blur_and_solarize(kind):
    """(blur(p), solarize(p)) factories: upstream's PIL classes, or torchvision's ops."""
    if kind == "pil":
        return PilGaussianBlur, PilSolarization
    return (lambda p: T.RandomApply([T.GaussianBlur(23, (0.1, 2.0))], p=p),
            lambda p: T.RandomSolarize(128, p=p))


def normalize():
    return T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])


def torchvision_v2():
    return T.Compose([
        T.RandomResizedCrop(176, interpolation=T.InterpolationMode.BILINEAR),
        T.RandomHorizontalFlip(0.5),
        T.TrivialAugmentWide(interpolation=T.InterpolationMode.BILINEAR),
        T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
        T.RandomErasing(p=0.1),
    ])


def timm_randaugment():
    return T.Compose([
        T.RandomResizedCrop(224, interpolation=T.InterpolationMode.BICUBIC),
        T.RandomHorizontalFlip(0.5),
        T.RandAugment(2, 9),
        T.ToTensor(), T.Normalize(MEAN, STD),
        T.RandomErasing(p=0.25, value="random"),
    ])


class Dino:
    """DINO's DataAugmentationDINO((0.4, 1.), (0.05, 0.4), 8)."""

    def __init__(self, blur_kind):
        blur, solarize = blur_and_solarize(blur_kind)
        flip_and_color_jitter = T.Compose([
            T.RandomHorizontalFlip(p=0.5),
            T.RandomApply([T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2,
                                         hue=0.1)], p=0.8),
            T.RandomGrayscale(p=0.2),
        ])
        bicubic = T.InterpolationMode.BICUBIC
        self.global1 = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.), interpolation=bicubic),
                                  flip_and_color_jitter, blur(1.0), normalize()])
        self.global2 = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.), interpolation=bicubic),
                                  flip_and_color_jitter, blur(0.1), solarize(0.2),
                                  normalize()])
        self.local = T.Compose([T.RandomResizedCrop(96, scale=(0.05, 0.4), interpolation=bicubic),
                                flip_and_color_jitter, blur(0.5), normalize()])

    def __call__(self, image):
        return [self.global1(image), self.global2(image)] + [self.local(image) for _ in range(8)]


class SimClr:
    """MoCo v3's augmentation1 / augmentation2 as TwoCropsTransform."""

    def __init__(self, blur_kind):
        blur, solarize = blur_and_solarize(blur_kind)

        def aug(blur_p, solarize_p):
            # Upstream: RandomApply([GaussianBlur([.1, 2.])], p=blur_p), and for the second
            # view RandomApply([Solarize()], p=0.2).
            ops = [T.RandomResizedCrop(224, scale=(0.08, 1.)),
                   T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                   T.RandomGrayscale(p=0.2), blur(blur_p)]
            if solarize_p:
                ops.append(solarize(solarize_p))
            return T.Compose(ops + [T.RandomHorizontalFlip(), normalize()])
        self.a, self.b = aug(1.0, 0), aug(0.1, 0.2)

    def __call__(self, image):
        return [self.a(image), self.b(image)]


class RandomMixup:
    """torchvision's references/classification/transforms.py RandomMixup (the package has
    none in 0.14), written from its behaviour: one-hot float targets; with probability p
    the batch is mixed with itself rolled by one row, λ ~ Beta(α, α) drawn as
    torch._sample_dirichlet([α, α])[0]; inplace=False, so batch and target are cloned."""

    def __init__(self, num_classes, p=0.5, alpha=1.0):
        self.num_classes, self.p, self.alpha = num_classes, p, alpha

    def _prepare(self, batch, target):
        target = torch.nn.functional.one_hot(target, num_classes=self.num_classes)
        return batch.clone(), target.to(dtype=batch.dtype)

    def _lam(self):
        return float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])

    def __call__(self, batch, target):
        batch, target = self._prepare(batch, target)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lam = self._lam()
        batch_rolled.mul_(1.0 - lam)
        batch.mul_(lam).add_(batch_rolled)
        target_rolled.mul_(1.0 - lam)
        target.mul_(lam).add_(target_rolled)
        return batch, target


class RandomCutmix(RandomMixup):
    """The same file's RandomCutmix: with probability p, a box centred at a uniform pixel
    with half-sides int(0.5·√(1-λ)·side), clamped to the image, takes the rolled batch's
    pixels; λ is then 1 - the box's share of the image."""

    def __call__(self, batch, target):
        batch, target = self._prepare(batch, target)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lam = self._lam()
        h, w = batch.shape[-2:]
        r_x, r_y = torch.randint(w, (1,)), torch.randint(h, (1,))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * w), int(r * h)
        x1, y1 = int(torch.clamp(r_x - r_w_half, min=0)), int(torch.clamp(r_y - r_h_half, min=0))
        x2, y2 = int(torch.clamp(r_x + r_w_half, max=w)), int(torch.clamp(r_y + r_h_half, max=h))
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
        lam = float(1.0 - (x2 - x1) * (y2 - y1) / (w * h))
        target_rolled.mul_(1.0 - lam)
        target.mul_(lam).add_(target_rolled)
        return batch, target


def mixup_collate(num_classes, mixup_alpha, cutmix_alpha):
    """train.py's collate_fn: default_collate, then RandomChoice of the mixes that are on."""
    mixes = []
    if mixup_alpha > 0:
        mixes.append(RandomMixup(num_classes, p=1.0, alpha=mixup_alpha))
    if cutmix_alpha > 0:
        mixes.append(RandomCutmix(num_classes, p=1.0, alpha=cutmix_alpha))
    choice = T.RandomChoice(mixes)

    def collate_fn(batch):
        return choice(*default_collate(batch))
    return collate_fn


RECIPES = {"torchvision_v2": lambda blur: torchvision_v2(),
           "timm_randaugment": lambda blur: timm_randaugment(), "dino": Dino, "simclr": SimClr}


def _worker_init(_):
    torch.set_num_threads(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--recipe", choices=sorted(RECIPES), required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mixup_alpha", type=float, default=0.0)
    p.add_argument("--cutmix_alpha", type=float, default=0.0)
    p.add_argument("--blur", choices=["torchvision", "pil"], default="torchvision",
                   help="dino/simclr: blur and solarize as torchvision's ops or upstream's "
                        "PIL classes")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    dataset = datasets.ImageFolder(a.data, transform=RECIPES[a.recipe](a.blur))
    collate_fn = None
    if a.mixup_alpha > 0 or a.cutmix_alpha > 0:
        collate_fn = mixup_collate(len(dataset.classes), a.mixup_alpha, a.cutmix_alpha)
    loader = DataLoader(dataset, batch_size=a.batch_size, shuffle=True,
                        num_workers=a.num_workers, worker_init_fn=_worker_init,
                        collate_fn=collate_fn)
    samples, t_first = 0, None
    for images, labels in loader:
        if t_first is None:
            t_first = time.time()
            first_rows = len(labels)
        samples += len(labels)
    t_end = time.time()
    print(json.dumps({"recipe": a.recipe, "blur": a.blur, "mixup_alpha": a.mixup_alpha,
                      "cutmix_alpha": a.cutmix_alpha, "samples": samples, "seconds": t_end - t_first,
                      "images_per_second_after_first_batch":
                          (samples - first_rows) / (t_end - t_first)}))


if __name__ == "__main__":
    main()
