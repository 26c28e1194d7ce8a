#!/usr/bin/python3
"""dino.py: DINO's multi-crop augmentation (facebookresearch/dino, main_dino.py,
DataAugmentationDINO) moved to flowloader by changing its import: 2 global crops (224²)
and 8 local crops (96²), the same recipe as runtime/specs/dino.yaml.

    bazel build -c opt //python:flowloader
    PYTHONPATH=bazel-bin/python /usr/bin/python3 examples/python/dino.py --data=.sample_data

Prints images/s over --batches batches. The class is upstream's, line for line, except
where a comment says otherwise.
"""

import argparse
import time

from PIL import Image

import flowloader
import flowloader.transforms as transforms
# Difference: upstream also has `import utils` for DINO's own GaussianBlur and
# Solarization (PIL classes); see below.


class DataAugmentationDINO(object):
    def __init__(self, global_crops_scale, local_crops_scale, local_crops_number):
        flip_and_color_jitter = transforms.Compose([
            transforms.RandomHorizontalFlip(p=0.5),
            transforms.RandomApply(
                [transforms.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)],
                p=0.8
            ),
            transforms.RandomGrayscale(p=0.2),
        ])
        normalize = transforms.Compose([
            transforms.ToTensor(),
            transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        ])

        # first global crop
        self.global_transfo1 = transforms.Compose([
            transforms.RandomResizedCrop(224, scale=global_crops_scale, interpolation=Image.BICUBIC),
            flip_and_color_jitter,
            # Difference: utils.GaussianBlur(1.0) (PIL ImageFilter.GaussianBlur, radius
            # uniform in [0.1, 2]) is torchvision's GaussianBlur(23, (0.1, 2.0)) under
            # RandomApply with the same p, as runtime/specs/dino.yaml writes it;
            # transforms.PILGaussianBlur(1.0) would be upstream's blur byte for byte.
            transforms.RandomApply([transforms.GaussianBlur(23, (0.1, 2.0))], p=1.0),
            normalize,
        ])
        # second global crop
        self.global_transfo2 = transforms.Compose([
            transforms.RandomResizedCrop(224, scale=global_crops_scale, interpolation=Image.BICUBIC),
            flip_and_color_jitter,
            transforms.RandomApply([transforms.GaussianBlur(23, (0.1, 2.0))], p=0.1),
            # Difference: utils.Solarization(0.2) (PIL ImageOps.solarize, threshold 128)
            # is RandomSolarize(128, p=0.2).
            transforms.RandomSolarize(128, p=0.2),
            normalize,
        ])
        # transformation for the local small crops
        self.local_crops_number = local_crops_number
        self.local_transfo = transforms.Compose([
            transforms.RandomResizedCrop(96, scale=local_crops_scale, interpolation=Image.BICUBIC),
            flip_and_color_jitter,
            transforms.RandomApply([transforms.GaussianBlur(23, (0.1, 2.0))], p=0.5),
            normalize,
        ])

    # Difference: upstream's __call__(image) returns the list of crops of one PIL image;
    # flowloader runs the lists natively, so the views are handed to the DataLoader as a
    # dict (the batch is then {name: tensor}; upstream's list is its values in order).
    def views(self):
        crops = {"global1": self.global_transfo1, "global2": self.global_transfo2}
        for i in range(self.local_crops_number):
            crops[f"local{i + 1}"] = self.local_transfo
        return crops


def make_loader(data, batch_size=64, num_workers=2, **kwargs):
    """DINO's loader: upstream builds datasets.ImageFolder(path, transform=transform) and
    a torch DataLoader(dataset, sampler, batch_size, num_workers, pin_memory=True,
    drop_last=True); here one flowloader.DataLoader does both."""
    transform = DataAugmentationDINO(
        global_crops_scale=(0.4, 1.), local_crops_scale=(0.05, 0.4), local_crops_number=8)
    return flowloader.DataLoader(data, transform=transform.views(), batch_size=batch_size,
                                 num_workers=num_workers, drop_last=True, **kwargs)


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
            for crops, labels in loader:
                images += labels.shape[0]
                taken += 1
                if taken == args.batches:
                    break
        seconds = time.perf_counter() - start
        shapes = {name: tuple(t.shape) for name, t in crops.items()}
    print(f"views: {shapes}")
    print(f"{images} images in {seconds:.2f} s: {images / seconds:.1f} images/s")


if __name__ == "__main__":
    main()
