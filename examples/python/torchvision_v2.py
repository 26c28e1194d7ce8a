#!/usr/bin/python3
"""torchvision_v2.py: torchvision's ResNet-50 IMAGENET1K_V2 training preset
(references/classification/presets.py, ClassificationPresetTrain, with train.py's
crop_size=176, auto_augment_policy="ta_wide", random_erase_prob=0.1) moved to flowloader
by changing its import: the same recipe as runtime/specs/torchvision_v2.yaml.

    bazel build -c opt //python:flowloader
    PYTHONPATH=bazel-bin/python /usr/bin/python3 examples/python/torchvision_v2.py \
        --data=.sample_data

Prints images/s over --batches batches. The class is upstream's, line for line, except
where a comment says otherwise.
"""

import argparse
import time

import torch

import flowloader
import flowloader.transforms as transforms
from flowloader.transforms import InterpolationMode
# Difference: upstream also imports `from torchvision.transforms import autoaugment`
# for RandAugment, TrivialAugmentWide, AugMix, AutoAugment(Policy); flowloader.transforms
# has them (AugMix excepted) under the same names.
autoaugment = transforms


class ClassificationPresetTrain:
    def __init__(
        self,
        *,
        crop_size,
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        interpolation=InterpolationMode.BILINEAR,
        hflip_prob=0.5,
        auto_augment_policy=None,
        random_erase_prob=0.0,
    ):
        trans = [transforms.RandomResizedCrop(crop_size, interpolation=interpolation)]
        if hflip_prob > 0:
            trans.append(transforms.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy is not None:
            if auto_augment_policy == "ra":
                trans.append(autoaugment.RandAugment(interpolation=interpolation))
            elif auto_augment_policy == "ta_wide":
                trans.append(autoaugment.TrivialAugmentWide(interpolation=interpolation))
            elif auto_augment_policy == "augmix":
                # Difference: flowloader has no AugMix op.
                raise TypeError("flowloader.transforms has no AugMix")
            else:
                aa_policy = autoaugment.AutoAugmentPolicy(auto_augment_policy)
                trans.append(autoaugment.AutoAugment(policy=aa_policy, interpolation=interpolation))
        trans.extend(
            [
                # PILToTensor + ConvertImageDtype + Normalize become flowloader's one
                # normalize op (ToTensor + Normalize).
                transforms.PILToTensor(),
                transforms.ConvertImageDtype(torch.float),
                transforms.Normalize(mean=mean, std=std),
            ]
        )
        if random_erase_prob > 0:
            trans.append(transforms.RandomErasing(p=random_erase_prob))

        self.transforms = transforms.Compose(trans)

    # Difference: upstream's __call__(img) applies self.transforms to a PIL image; here
    # the Compose is handed to flowloader.DataLoader(transform=...), which runs it natively.


# train.py's collate_fn: RandomChoice([RandomMixup(num_classes, alpha=0.2),
# RandomCutmix(num_classes, alpha=1.0)]). Difference: flowloader runs it as the batch op
# mixup_cutmix with the same alphas (switch_prob 0.5 is the RandomChoice), in place in
# the batch buffer; labels arrive as float32 [N, num_classes] soft targets.
MIXUP_CUTMIX = [{"type": "mixup_cutmix",
                 "options": {"mixup_alpha": 0.2, "cutmix_alpha": 1.0, "switch_prob": 0.5,
                             "prob": 1.0}}]


def make_loader(data, batch_size=64, num_workers=2, **kwargs):
    """train.py's loader: upstream wraps ImageFolder(traindir, preset) in a torch
    DataLoader with Mixup/CutMix in its collate_fn (here batch_ops) and, optionally, the
    repeated-augmentation sampler (repeated_augment=4; it needs epochs of >= 256
    samples, so it is left to the caller)."""
    preset = ClassificationPresetTrain(crop_size=176, auto_augment_policy="ta_wide",
                                       random_erase_prob=0.1)
    return flowloader.DataLoader(data, transform=preset.transforms, batch_size=batch_size,
                                 num_workers=num_workers, batch_ops=MIXUP_CUTMIX, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    with make_loader(args.data, args.batch_size, args.num_workers) as loader:
        start, images, taken = time.perf_counter(), 0, 0
        while taken < args.batches:
            for batch, labels in loader:
                images += labels.shape[0]
                taken += 1
                if taken == args.batches:
                    break
        seconds = time.perf_counter() - start
        shape = tuple(batch.shape)
    print(f"batch: {shape}")
    print(f"{images} images in {seconds:.2f} s: {images / seconds:.1f} images/s")


if __name__ == "__main__":
    main()
