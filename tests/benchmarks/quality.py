# quality.py: output quality of flowloader's eval transform against torchvision's.
#
# write_subset_list() picks `count` images spread evenly over the sorted ImageFolder
# listing and writes a flowloader list file (`relative/path<TAB>label`) for them.
# compare() loads the uint8 [N,224,224,3] array dump_batches wrote for that list, builds
# torchvision's reference for each key -- PIL open, convert("RGB"), Resize(256),
# CenterCrop(224), as uint8 (i.e. the eval transform before ToTensor/Normalize) -- and
# returns the per-image PSNR (dB, peak 255) with mean / median / min and the worst keys.
# Identical images are reported as PSNR_CAP dB instead of infinity.
import math
import os

import numpy as np

PSNR_CAP = 99.0


def list_images(root):
    """ImageFolder order: sorted class dirs, then sorted files (recursive)."""
    from torchvision import datasets

    ds = datasets.ImageFolder(root)
    return [(os.path.relpath(path, root), label) for path, label in ds.samples]


def write_subset_list(root, count, list_path):
    """Writes a list file for `count` evenly spaced images; returns the list's keys."""
    images = list_images(root)
    count = min(count, len(images))
    step = len(images) / count
    chosen = [images[int(i * step)] for i in range(count)]
    list_dir = os.path.dirname(os.path.abspath(list_path))
    rel_root = os.path.relpath(os.path.abspath(root), list_dir)
    with open(list_path, "w") as f:
        f.write("# quality subset written by tests/benchmarks/quality.py\n")
        for key, label in chosen:
            f.write(f"{os.path.join(rel_root, key)}\t{label}\n")
    return [os.path.join(rel_root, key) for key, _ in chosen]


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return PSNR_CAP if mse == 0 else min(PSNR_CAP, 10.0 * math.log10(255.0 ** 2 / mse))


def compare(npy_path, keys_path, list_dir, image_size=224):
    from PIL import Image
    from torchvision import transforms

    ref_tf = transforms.Compose([
        transforms.Resize(image_size * 256 // 224),
        transforms.CenterCrop(image_size),
    ])
    ours = np.load(npy_path)
    with open(keys_path) as f:
        keys = [line.rstrip("\n") for line in f if line.strip()]
    if len(keys) != ours.shape[0]:
        raise RuntimeError(f"{len(keys)} keys but {ours.shape[0]} images in {npy_path}")
    per_image = []
    max_abs = 0
    for i, key in enumerate(keys):
        with Image.open(os.path.join(list_dir, key)) as im:
            ref = np.asarray(ref_tf(im.convert("RGB")), dtype=np.uint8)
        if ref.shape != ours[i].shape:
            raise RuntimeError(f"{key}: shape {ours[i].shape} vs torchvision {ref.shape}")
        per_image.append(psnr(ours[i], ref))
        max_abs = max(max_abs, int(np.abs(ours[i].astype(np.int16) - ref).max()))
    values = np.array(per_image)
    worst = np.argsort(values)[:5]
    return {
        "images": len(keys),
        "psnr_mean_db": float(values.mean()) if len(values) else None,
        "psnr_median_db": float(np.median(values)) if len(values) else None,
        "psnr_min_db": float(values.min()) if len(values) else None,
        "below_30db": int((values < 30).sum()),
        "max_abs_pixel_diff": max_abs,
        "worst": [{"key": os.path.basename(os.path.dirname(keys[j])) + "/" +
                   os.path.basename(keys[j]), "psnr_db": float(values[j])} for j in worst],
        "per_image_db": [round(float(v), 3) for v in values],
    }
