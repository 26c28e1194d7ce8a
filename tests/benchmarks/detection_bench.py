#!/usr/bin/python3
"""detection_bench.py: the SSD and Mask R-CNN (large-scale jitter) recipes through
flowloader.DataLoader(annotations=...) against torch DataLoader(num_workers=2) running the
same recipes with torchvision 0.14 and the detection reference transforms.

    PYTHONPATH=bazel-bin/python /usr/bin/python3 tests/benchmarks/detection_bench.py \
        [--data=DIR] [--rounds=3] [--batches=12] [--out=tests/benchmarks/results/detection.md]

Recipes (both sides, in this order):
  ssd:  RandomPhotometricDistort, RandomZoomOut(fill=mean), RandomIoUCrop,
        RandomHorizontalFlip, Resize to 300 x 300, ToTensor, SanitizeBoundingBoxes
        (boxes only: no masks are read);
  lsj:  ScaleJitter(512), RandomHorizontalFlip, FixedSizeCrop(512, fill=mean), ToTensor,
        SanitizeBoundingBoxes, with instance masks from the COCO segmentations.
The torch side is a map-style Dataset that reads the COCO file with json, opens each image
with PIL, rasterises polygons with PIL's ImageDraw.polygon (RLE decoded with numpy, since
pycocotools is not packaged here), and runs the reference transforms written below: the
classes of torchvision's references/detection/transforms.py at v0.14.0 (Debian ships
none), as the SSD and LSJ presets of references/detection/presets.py compose them, plus a
Resize to 300 (torchvision's SSD does it in the model; a batch needs one size) and v2's
SanitizeBoundingBoxes rule. It batches with collate_fn=lambda b: tuple(zip(*b)) (lists,
as the detection references do). flowloader's side is the same recipe with
flowloader.transforms' v2 class names (stages= spelled out to switch masks off for ssd).

Both use batch_size=32, 2 workers, prefetch 2 (torch) / 3 (flowloader's default), no
shuffle, on the same data and cores. Each round makes each loader anew and times
--batches batches after its first; the two alternate (which goes first alternates too)
and the result is the median images/s and the median of the rounds' ratios, because the
shared machine moves run to run. Data: <repo>/.bench_data/detection_400 (`flowloader
make-dataset --task=detection --images=400`, 480-640 px shorter side, up to 6 shapes),
made here when missing. A program, not a unit test.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision
import torchvision.transforms as TT
import torchvision.transforms.functional as F
from PIL import Image, ImageDraw
from torchvision.transforms import InterpolationMode

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MEAN = (123, 117, 104)  # ImageNet's mean in 8 bits: the zoom-out and crop fill.
BATCH = 32


def log(msg):
    print(f"[detection_bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def dataset(bin_path):
    root = os.path.join(REPO, ".bench_data", "detection_400")
    if not os.path.isdir(root):
        os.makedirs(os.path.dirname(root), exist_ok=True)
        subprocess.run([bin_path, "make-dataset", "--task=detection", f"--out={root}",
                        "--images=400", "--min_short_side=480", "--max_short_side=640",
                        "--max_instances=6", "--seed=1"], check=True, stdout=subprocess.DEVNULL)
    return root


# ------------------------------------------------- torchvision's reference transforms
# references/detection/transforms.py at v0.14.0 (forward() bodies as upstream; the
# classes this recipe uses), on PIL images and target dicts.

def _flip_coco_person_keypoints(kps, width):
    return kps  # (Unused: no keypoints here.)


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image, target):
        for t in self.transforms:
            image, target = t(image, target)
        return image, target


class RandomHorizontalFlip(TT.RandomHorizontalFlip):
    def forward(self, image, target=None):
        if torch.rand(1) < self.p:
            image = F.hflip(image)
            if target is not None:
                _, _, width = F.get_dimensions(image)
                target["boxes"][:, [0, 2]] = width - target["boxes"][:, [2, 0]]
                if "masks" in target:
                    target["masks"] = target["masks"].flip(-1)
        return image, target


class PILToTensor(torch.nn.Module):
    def forward(self, image, target=None):
        return F.pil_to_tensor(image), target


class ConvertImageDtype(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image, target=None):
        return F.convert_image_dtype(image, self.dtype), target


class RandomIoUCrop(torch.nn.Module):
    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5,
                 max_aspect_ratio=2.0, sampler_options=None, trials=40):
        super().__init__()
        self.min_scale = min_scale
        self.max_scale = max_scale
        self.min_aspect_ratio = min_aspect_ratio
        self.max_aspect_ratio = max_aspect_ratio
        if sampler_options is None:
            sampler_options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]
        self.options = sampler_options
        self.trials = trials

    def forward(self, image, target=None):
        _, orig_h, orig_w = F.get_dimensions(image)
        while True:
            idx = int(torch.randint(low=0, high=len(self.options), size=(1,)))
            min_jaccard_overlap = self.options[idx]
            if min_jaccard_overlap >= 1.0:
                return image, target
            for _ in range(self.trials):
                r = self.min_scale + (self.max_scale - self.min_scale) * torch.rand(2)
                new_w = int(orig_w * r[0])
                new_h = int(orig_h * r[1])
                aspect_ratio = new_w / new_h
                if not (self.min_aspect_ratio <= aspect_ratio <= self.max_aspect_ratio):
                    continue
                r = torch.rand(2)
                left = int((orig_w - new_w) * r[0])
                top = int((orig_h - new_h) * r[1])
                right = left + new_w
                bottom = top + new_h
                if left == right or top == bottom:
                    continue
                cx = 0.5 * (target["boxes"][:, 0] + target["boxes"][:, 2])
                cy = 0.5 * (target["boxes"][:, 1] + target["boxes"][:, 3])
                is_within_crop_area = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
                if not is_within_crop_area.any():
                    continue
                boxes = target["boxes"][is_within_crop_area]
                ious = torchvision.ops.boxes.box_iou(
                    boxes, torch.tensor([[left, top, right, bottom]], dtype=boxes.dtype,
                                        device=boxes.device))
                if ious.max() < min_jaccard_overlap:
                    continue
                target["boxes"] = boxes
                target["labels"] = target["labels"][is_within_crop_area]
                target["boxes"][:, 0::2] -= left
                target["boxes"][:, 1::2] -= top
                target["boxes"][:, 0::2].clamp_(min=0, max=new_w)
                target["boxes"][:, 1::2].clamp_(min=0, max=new_h)
                image = F.crop(image, top, left, new_h, new_w)
                return image, target


class RandomZoomOut(torch.nn.Module):
    def __init__(self, fill=None, side_range=(1.0, 4.0), p=0.5):
        super().__init__()
        if fill is None:
            fill = [0.0, 0.0, 0.0]
        self.fill = fill
        self.side_range = side_range
        self.p = p

    def _get_fill_value(self, is_pil):
        return tuple(int(x) for x in self.fill) if is_pil else 0

    def forward(self, image, target=None):
        if torch.rand(1) >= self.p:
            return image, target
        _, orig_h, orig_w = F.get_dimensions(image)
        r = self.side_range[0] + torch.rand(1) * (self.side_range[1] - self.side_range[0])
        canvas_width = int(orig_w * r)
        canvas_height = int(orig_h * r)
        r = torch.rand(2)
        left = int((canvas_width - orig_w) * r[0])
        top = int((canvas_height - orig_h) * r[1])
        right = canvas_width - (left + orig_w)
        bottom = canvas_height - (top + orig_h)
        fill = self._get_fill_value(F._is_pil_image(image))
        image = F.pad(image, [left, top, right, bottom], fill=fill)
        if target is not None:
            target["boxes"][:, 0::2] += left
            target["boxes"][:, 1::2] += top
        return image, target


class RandomPhotometricDistort(torch.nn.Module):
    def __init__(self, contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 brightness=(0.875, 1.125), p=0.5):
        super().__init__()
        self._brightness = TT.ColorJitter(brightness=brightness)
        self._contrast = TT.ColorJitter(contrast=contrast)
        self._hue = TT.ColorJitter(hue=hue)
        self._saturation = TT.ColorJitter(saturation=saturation)
        self.p = p

    def forward(self, image, target=None):
        r = torch.rand(7)
        if r[0] < self.p:
            image = self._brightness(image)
        contrast_before = r[1] < 0.5
        if contrast_before:
            if r[2] < self.p:
                image = self._contrast(image)
        if r[3] < self.p:
            image = self._saturation(image)
        if r[4] < self.p:
            image = self._hue(image)
        if not contrast_before:
            if r[5] < self.p:
                image = self._contrast(image)
        if r[6] < self.p:
            channels, _, _ = F.get_dimensions(image)
            permutation = torch.randperm(channels)
            is_pil = F._is_pil_image(image)
            if is_pil:
                image = F.pil_to_tensor(image)
                image = F.convert_image_dtype(image)
            image = image[..., permutation, :, :]
            if is_pil:
                image = F.to_pil_image(image)
        return image, target


class ScaleJitter(torch.nn.Module):
    def __init__(self, target_size, scale_range=(0.1, 2.0),
                 interpolation=InterpolationMode.BILINEAR):
        super().__init__()
        self.target_size = target_size
        self.scale_range = scale_range
        self.interpolation = interpolation

    def forward(self, image, target=None):
        _, orig_height, orig_width = F.get_dimensions(image)
        scale = self.scale_range[0] + torch.rand(1) * (self.scale_range[1] - self.scale_range[0])
        r = min(self.target_size[1] / orig_height, self.target_size[0] / orig_width) * scale
        new_width = int(orig_width * r)
        new_height = int(orig_height * r)
        image = F.resize(image, [new_height, new_width], interpolation=self.interpolation)
        if target is not None:
            target["boxes"][:, 0::2] *= new_width / orig_width
            target["boxes"][:, 1::2] *= new_height / orig_height
            if "masks" in target and target["masks"].shape[0]:  # (Upstream fails on 0.)
                target["masks"] = F.resize(target["masks"], [new_height, new_width],
                                           interpolation=InterpolationMode.NEAREST)
            elif "masks" in target:
                target["masks"] = target["masks"].new_zeros(0, new_height, new_width)
        return image, target


class FixedSizeCrop(torch.nn.Module):
    def __init__(self, size, fill=0, padding_mode="constant"):
        super().__init__()
        size = tuple(TT.transforms._setup_size(
            size, error_msg="Please provide only two dimensions (h, w) for size."))
        self.crop_height = size[0]
        self.crop_width = size[1]
        self.fill = fill
        self.padding_mode = padding_mode

    def _pad(self, img, target, padding):
        pad_left, pad_top, pad_right, pad_bottom = padding
        padding = [pad_left, pad_top, pad_right, pad_bottom]
        img = F.pad(img, padding, self.fill, self.padding_mode)
        if target is not None:
            target["boxes"][:, 0::2] += pad_left
            target["boxes"][:, 1::2] += pad_top
            if "masks" in target:
                target["masks"] = F.pad(target["masks"], padding, 0, "constant")
        return img, target

    def _crop(self, img, target, top, left, height, width):
        img = F.crop(img, top, left, height, width)
        if target is not None:
            boxes = target["boxes"]
            boxes[:, 0::2] -= left
            boxes[:, 1::2] -= top
            boxes[:, 0::2].clamp_(min=0, max=width)
            boxes[:, 1::2].clamp_(min=0, max=height)
            is_valid = (boxes[:, 0] < boxes[:, 2]) & (boxes[:, 1] < boxes[:, 3])
            target["boxes"] = boxes[is_valid]
            target["labels"] = target["labels"][is_valid]
            if "masks" in target:
                target["masks"] = F.crop(target["masks"][is_valid], top, left, height, width)
        return img, target

    def forward(self, img, target=None):
        _, height, width = F.get_dimensions(img)
        new_height = min(height, self.crop_height)
        new_width = min(width, self.crop_width)
        if new_height != height or new_width != width:
            offset_height = max(height - self.crop_height, 0)
            offset_width = max(width - self.crop_width, 0)
            r = torch.rand(1)
            top = int(offset_height * r)
            left = int(offset_width * r)
            img, target = self._crop(img, target, top, left, new_height, new_width)
        pad_bottom = max(self.crop_height - new_height, 0)
        pad_right = max(self.crop_width - new_width, 0)
        if pad_bottom != 0 or pad_right != 0:
            img, target = self._pad(img, target, [0, 0, pad_right, pad_bottom])
        return img, target


class Resize300(torch.nn.Module):
    """F.resize to 300 x 300 with the boxes scaled (what v2's Resize does to them)."""

    def forward(self, image, target=None):
        w, h = image.size
        image = F.resize(image, [300, 300])
        target["boxes"][:, 0::2] *= 300 / w
        target["boxes"][:, 1::2] *= 300 / h
        return image, target


class SanitizeBoundingBoxes(torch.nn.Module):
    """v2's SanitizeBoundingBoxes(min_size=1): drops small or outside boxes, their labels
    and masks (_get_sanitize_bounding_boxes_mask)."""

    def forward(self, image, target):
        b = target["boxes"]
        h, w = image.shape[-2:]
        ws, hs = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
        valid = (ws >= 1) & (hs >= 1) & (b >= 0).all(dim=-1) & (ws * hs >= 1)
        valid &= (b[:, 0] <= w) & (b[:, 2] <= w) & (b[:, 1] <= h) & (b[:, 3] <= h)
        for key in ("boxes", "labels", "masks"):
            if key in target:
                target[key] = target[key][valid]
        return image, target


def torch_recipe(name):
    if name == "ssd":  # presets.py "ssd" + Resize 300 + sanitize.
        return Compose([RandomPhotometricDistort(), RandomZoomOut(fill=list(MEAN)),
                        RandomIoUCrop(), RandomHorizontalFlip(0.5), Resize300(), PILToTensor(),
                        ConvertImageDtype(torch.float), SanitizeBoundingBoxes()])
    return Compose([ScaleJitter(target_size=(512, 512)), RandomHorizontalFlip(0.5),
                    FixedSizeCrop(size=(512, 512), fill=list(MEAN)), PILToTensor(),
                    ConvertImageDtype(torch.float), SanitizeBoundingBoxes()])


# ------------------------------------------------------------------ torch's dataset

def rle_decode(seg, h, w):
    """COCO RLE (counts a list, or the compressed string) -> uint8 [h, w] (column-major)."""
    counts = seg["counts"]
    if isinstance(counts, str):  # maskApi.c's rleFrString.
        out, p, m = [], 0, 0
        while p < len(counts):
            x, k, more = 0, 0, True
            while more:
                c = ord(counts[p]) - 48
                x |= (c & 0x1F) << (5 * k)
                more = bool(c & 0x20)
                p += 1
                k += 1
                if not more and (c & 0x10):
                    x |= -1 << (5 * k)
            if m > 2:
                x += out[m - 2]
            out.append(x)
            m += 1
        counts = out
    values = np.zeros(len(counts), dtype=np.uint8)
    values[1::2] = 1
    return np.repeat(values, counts).reshape(w, h).T


class CocoDetection(torch.utils.data.Dataset):
    def __init__(self, root, transforms, masks):
        with open(os.path.join(root, "annotations", "instances.json")) as f:
            coco = json.load(f)
        self.images = coco["images"]
        self.dir = os.path.join(root, "images")
        cats = sorted(c["id"] for c in coco["categories"])
        self.label = {c: i + 1 for i, c in enumerate(cats)}
        self.anns = {}
        for a in coco["annotations"]:
            self.anns.setdefault(a["image_id"], []).append(a)
        self.transforms = transforms
        self.masks = masks

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        info = self.images[i]
        image = Image.open(os.path.join(self.dir, info["file_name"])).convert("RGB")
        w, h = image.size
        anns = [a for a in self.anns.get(info["id"], []) if a["bbox"][2] > 0 and a["bbox"][3] > 0]
        boxes = torch.tensor([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                               a["bbox"][1] + a["bbox"][3]] for a in anns],
                             dtype=torch.float32).reshape(-1, 4)
        boxes[:, 0::2].clamp_(min=0, max=w)
        boxes[:, 1::2].clamp_(min=0, max=h)
        target = {"boxes": boxes, "image_id": info["id"],
                  "labels": torch.tensor([self.label[a["category_id"]] for a in anns],
                                         dtype=torch.int64)}
        if self.masks:
            planes = []
            for a in anns:
                seg = a["segmentation"]
                if isinstance(seg, list):  # Polygons: PIL's ImageDraw.polygon.
                    m = Image.new("L", (w, h), 0)
                    for poly in seg:
                        ImageDraw.Draw(m).polygon(poly, outline=1, fill=1)
                    planes.append(np.asarray(m))
                else:
                    planes.append(rle_decode(seg, h, w))
            target["masks"] = torch.from_numpy(np.stack(planes)) if planes else \
                torch.zeros(0, h, w, dtype=torch.uint8)
        return self.transforms(image, target)


def collate(batch):
    return tuple(zip(*batch))


def torch_loader(root, recipe):
    ds = CocoDetection(root, torch_recipe(recipe), masks=recipe == "lsj")
    return torch.utils.data.DataLoader(ds, batch_size=BATCH, num_workers=2, shuffle=False,
                                       collate_fn=collate, prefetch_factor=2,
                                       persistent_workers=False)


# ------------------------------------------------------------------- flowloader side

def flowloader_loader(root, recipe):
    import flowloader
    from flowloader import transforms as T
    if recipe == "ssd":
        ops = T.Compose([T.RandomPhotometricDistort(), T.RandomZoomOut(fill=list(MEAN)),
                         T.RandomIoUCrop(), T.RandomHorizontalFlip(0.5), T.Resize([300, 300]),
                         T.ToTensor()])
    else:
        ops = T.Compose([T.ScaleJitter(target_size=(512, 512)), T.RandomHorizontalFlip(0.5),
                         T.FixedSizeCrop(size=(512, 512), fill=list(MEAN)), T.ToTensor()])
    stages = [{"type": "read"},
              {"type": "annotations", "options": {"masks": recipe == "lsj"}},
              {"type": "decode"}, {"type": "transforms", "ops": ops},
              {"type": "sanitize_bounding_boxes"}]
    return flowloader.DataLoader(os.path.join(root, "images"),
                                 annotations=os.path.join(root, "annotations",
                                                          "instances.json"),
                                 batch_size=BATCH, num_workers=2, shuffle=False, stages=stages)


def measure(make, batches):
    """images/s over `batches` batches after the first (start-up excluded)."""
    loader = make()
    it = iter(loader)
    next(it)
    start, images = time.perf_counter(), 0
    for _ in range(batches):
        imgs, targets = next(it)
        images += len(imgs)
    ips = images / (time.perf_counter() - start)
    if hasattr(loader, "close"):
        loader.close()
    del it, loader
    return ips


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--bin", default=os.path.join(REPO, "bazel-bin/runtime/flowloader"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--recipes", default="ssd,lsj")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = args.data or dataset(args.bin)
    rows = []
    for recipe in args.recipes.split(","):
        makers = {"flowloader": lambda: flowloader_loader(data, recipe),
                  "torch": lambda: torch_loader(data, recipe)}
        results = {name: [] for name in makers}
        ratios = []
        for r in range(args.rounds):
            order = list(makers) if r % 2 == 0 else list(reversed(makers))
            got = {}
            for name in order:
                got[name] = measure(makers[name], args.batches)
                results[name].append(got[name])
                log(f"{recipe} round {r + 1}: {name} {got[name]:.1f} img/s "
                    f"(load {os.getloadavg()[0]:.1f})")
            ratios.append(got["flowloader"] / got["torch"])
        fl, tv = statistics.median(results["flowloader"]), statistics.median(results["torch"])
        ratio = statistics.median(ratios)
        rows.append((recipe, fl, tv, ratio))
    names = {"ssd": "SSD (photometric distort, zoom out, IoU crop, flip, resize 300, sanitize)",
             "lsj": "Mask R-CNN LSJ (scale jitter 512, flip, fixed-size crop 512, masks from "
                    "polygons, sanitize)"}
    lines = ["| recipe | flowloader img/s | torch DataLoader(2) + reference img/s | ratio | "
             "target |", "| --- | ---: | ---: | ---: | --- |"]
    for recipe, fl, tv, ratio in rows:
        lines.append(f"| {names[recipe]} | {fl:.0f} | {tv:.0f} | {ratio:.2f}x | >= 8x "
                     f"{'PASS' if ratio >= 8 else 'FAIL'} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# detection_bench.py ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                    f"{os.cpu_count()} CPUs, batch {BATCH}, 2 workers, {args.rounds} rounds x "
                    f"{args.batches} batches, medians)\n\n{table}\n")


if __name__ == "__main__":
    main()
