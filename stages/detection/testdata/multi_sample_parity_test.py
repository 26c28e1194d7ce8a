#!/usr/bin/python3
"""multi_sample_parity_test: the multi-sample ops' kernels against their references.

Run by Bazel as `multi_sample_parity_test.py PATH_TO_multi_sample_tool`.

copy_paste: torchvision's `_copy_paste` (pytorch/vision, references/detection/transforms.py
at tag v0.14.0, used by SimpleCopyPaste; unchanged in v0.15), restated below with its one
random draw (`random_selection`) taken as a parameter and everything else as written there,
run with Debian's torch/torchvision (F.gaussian_blur, ops.masks_to_boxes). For the same
image pairs and selections: pixels equal, boxes within 1e-3 px, labels, iscrowd and area
equal, masks identical; with and without blending, on uint8 and float images.

mosaic: YOLOv5's LoadImagesAndLabels.load_mosaic (ultralytics/yolov5,
utils/dataloaders.py) with its draws (centre, the four images in order) taken as
parameters, followed by utils/augmentations.py random_perspective with degrees, translate,
scale, shear and perspective 0 (its warp is then the integer shift of the border crop,
written as the slice cv2.warpAffine makes of it) and box_candidates. Instance masks move
as load_mosaic moves the pixels (zero where no image lands). Keypoints (YOLOv5 has none)
move as ultralytics' pose mosaic moves them (ultralytics/ultralytics data/augment.py:
Mosaic._mosaic4's Instances.add_padding, _cat_labels' Instances.clip to the 2s canvas,
utils/instance.py; then RandomPerspective.apply_keypoints). Pixels and masks equal, boxes
and keypoints within 1e-3 px, visibilities equal, the same instances kept.

Fails, never skips, when torch or torchvision are missing.
"""
import os
import sys
import tempfile

import numpy as np
import torch
import torchvision.ops as ops
import torchvision.transforms.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from line_tool import Tool  # noqa: E402


def write_targets(path, t):
    h, w = t["size"]
    kp = t.get("keypoints")
    p = 0 if kp is None else kp.shape[1]
    with open(path, "wb") as f:
        f.write(f"{w} {h} {len(t['labels'])} 1 {p}\n".encode())
        for k in range(len(t["labels"])):
            b = [float(v) for v in t["boxes"][k]]
            f.write((" ".join(repr(v) for v in b) +
                     f" {int(t['labels'][k])} {int(t['iscrowd'][k])} "
                     f"{float(t['area'][k])!r}\n").encode())
        for k in range(len(t["labels"]) if p else 0):
            f.write((" ".join(repr(float(v)) for v in kp[k].reshape(-1)) + "\n").encode())
        f.write(b"masks\n")
        f.write(np.asarray(t["masks"], dtype=np.uint8).tobytes())


def read_targets(path):
    data = open(path, "rb").read()
    header, rest = data.split(b"\n", 1)
    fields = [int(v) for v in header.split()]
    w, h, k, m = fields[:4]
    p = fields[4] if len(fields) > 4 else 0
    rows = []
    for _ in range(k):
        line, rest = rest.split(b"\n", 1)
        rows.append([float(v) for v in line.split()])
    rows = np.array(rows, dtype=np.float64).reshape(k, 7)
    kp = []
    for _ in range(k if p else 0):
        line, rest = rest.split(b"\n", 1)
        kp.append([float(v) for v in line.split()])
    kp = np.array(kp, dtype=np.float64).reshape(k, p, 3) if p else None
    _, rest = rest.split(b"\n", 1)
    masks = np.frombuffer(rest, dtype=np.uint8).reshape(k, h, w)
    return {"boxes": rows[:, :4], "labels": rows[:, 4].astype(np.int64),
            "iscrowd": rows[:, 5].astype(np.int64), "area": rows[:, 6], "masks": masks,
            "keypoints": kp}


def with_keypoints(g, t, p):
    """t with p keypoints per instance: points in and around the image (some outside it),
    visibility 0, 1 or 2."""
    h, w = t["size"]
    k = len(t["labels"])
    kp = np.zeros((k, p, 3), dtype=np.float32)
    kp[..., 0] = g.uniform(-0.3 * w, 1.3 * w, (k, p)).round(2)
    kp[..., 1] = g.uniform(-0.3 * h, 1.3 * h, (k, p)).round(2)
    kp[..., 2] = g.integers(0, 3, (k, p))
    return dict(t, keypoints=kp)


def sample(g, w, h, k, first_label=1, thin=False):
    """A noise image and k instances: a box each, its mask an ellipse inside it (one
    instance one pixel wide when thin)."""
    image = g.integers(0, 256, (h, w, 3), dtype=np.uint8)
    boxes, masks = [], []
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(k):
        x0, y0 = g.uniform(0, w - 8), g.uniform(0, h - 8)
        x1, y1 = g.uniform(x0 + 3, w), g.uniform(y0 + 3, h)
        cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2
        m = ((xx + 0.5 - cx) / rx) ** 2 + ((yy + 0.5 - cy) / ry) ** 2 <= 1
        if thin and i == 0:
            m = np.zeros((h, w), dtype=bool)
            m[int(y0):int(y1), int(x0)] = True
        boxes.append([x0, y0, x1, y1])
        masks.append(m)
    return image, {"size": (h, w), "boxes": np.array(boxes, dtype=np.float32).reshape(k, 4),
                   "labels": np.arange(first_label, first_label + k, dtype=np.int64),
                   "iscrowd": np.array([i % 2 for i in range(k)], dtype=np.int64),
                   "area": np.array([float(m.sum()) for m in masks], dtype=np.float32),
                   "masks": np.stack(masks).astype(np.uint8) if k else
                   np.zeros((0, h, w), dtype=np.uint8)}


def torch_target(t):
    return {"boxes": torch.tensor(t["boxes"]), "labels": torch.tensor(t["labels"]),
            "iscrowd": torch.tensor(t["iscrowd"]), "area": torch.tensor(t["area"]),
            "masks": torch.tensor(t["masks"])}


# --- torchvision references/detection/transforms.py at v0.14.0: _copy_paste ----------
# As written there, but for `random_selection`, a parameter instead of
# torch.unique(torch.randint(0, num_masks, (num_masks,))). The resize branch (images of
# different sizes) is left out: a batch's rows share one size.

def ref_copy_paste(image, target, paste_image, paste_target, random_selection, blending):
    num_masks = len(paste_target["masks"])
    if num_masks < 1:
        return image, target
    random_selection = torch.tensor(random_selection, dtype=torch.long)
    paste_masks = paste_target["masks"][random_selection]
    paste_boxes = paste_target["boxes"][random_selection]
    paste_labels = paste_target["labels"][random_selection]
    masks = target["masks"]
    paste_alpha_mask = paste_masks.sum(dim=0) > 0
    if blending:
        paste_alpha_mask = F.gaussian_blur(paste_alpha_mask.unsqueeze(0), kernel_size=(5, 5),
                                           sigma=[2.0])
    image = (image * (~paste_alpha_mask)) + (paste_image * paste_alpha_mask)
    masks = masks * (~paste_alpha_mask)
    non_all_zero_masks = masks.sum((-1, -2)) > 0
    masks = masks[non_all_zero_masks]
    out_target = {k: v for k, v in target.items()}
    out_target["masks"] = torch.cat([masks, paste_masks])
    boxes = ops.masks_to_boxes(masks)
    out_target["boxes"] = torch.cat([boxes, paste_boxes])
    labels = target["labels"][non_all_zero_masks]
    out_target["labels"] = torch.cat([labels, paste_labels])
    if "area" in target:
        out_target["area"] = out_target["masks"].sum((-1, -2)).to(torch.float32)
    if "iscrowd" in target and "iscrowd" in paste_target:
        if len(target["iscrowd"]) == len(non_all_zero_masks):
            iscrowd = target["iscrowd"][non_all_zero_masks]
            paste_iscrowd = paste_target["iscrowd"][random_selection]
            out_target["iscrowd"] = torch.cat([iscrowd, paste_iscrowd])
    boxes = out_target["boxes"]
    degenerate_boxes = boxes[:, 2:] <= boxes[:, :2]
    if degenerate_boxes.any():
        valid_targets = ~degenerate_boxes.any(dim=1)
        out_target["boxes"] = boxes[valid_targets]
        out_target["masks"] = out_target["masks"][valid_targets]
        out_target["labels"] = out_target["labels"][valid_targets]
        if "area" in out_target:
            out_target["area"] = out_target["area"][valid_targets]
        if "iscrowd" in out_target and len(out_target["iscrowd"]) == len(valid_targets):
            out_target["iscrowd"] = out_target["iscrowd"][valid_targets]
    return image, out_target


# --- ultralytics/yolov5: load_mosaic + random_perspective(0, ...) + box_candidates ------

def box_candidates(box1, box2, wh_thr=2, ar_thr=100, area_thr=0.1, eps=1e-16):
    w1, h1 = box1[2] - box1[0], box1[3] - box1[1]
    w2, h2 = box2[2] - box2[0], box2[3] - box2[1]
    ar = np.maximum(w2 / (h2 + eps), h2 / (w2 + eps))
    return (w2 > wh_thr) & (h2 > wh_thr) & (w2 * h2 / (w1 * h1 + eps) > area_thr) & (ar < ar_thr)


def ref_mosaic(images, targets, xc, yc, area_thr):
    """load_mosaic's loop with `indices` the four given images in order and (xc, yc)
    given; labels rows [instance id, x1, y1, x2, y2]; masks placed as the pixels."""
    h, w = images[0].shape[:2]
    s = w  # Square tiles: YOLOv5's img_size.
    labels4, masks4, ids4, kp4 = [], [], [], []
    p = next((t["keypoints"].shape[1] for t in targets if t.get("keypoints") is not None), 0)
    for i in range(4):
        img = images[i]
        if i == 0:  # top left
            img4 = np.full((s * 2, s * 2, img.shape[2]), 114, dtype=np.uint8)
            x1a, y1a, x2a, y2a = max(xc - w, 0), max(yc - h, 0), xc, yc
            x1b, y1b, x2b, y2b = w - (x2a - x1a), h - (y2a - y1a), w, h
        elif i == 1:  # top right
            x1a, y1a, x2a, y2a = xc, max(yc - h, 0), min(xc + w, s * 2), yc
            x1b, y1b, x2b, y2b = 0, h - (y2a - y1a), min(w, x2a - x1a), h
        elif i == 2:  # bottom left
            x1a, y1a, x2a, y2a = max(xc - w, 0), yc, xc, min(s * 2, yc + h)
            x1b, y1b, x2b, y2b = w - (x2a - x1a), 0, w, min(y2a - y1a, h)
        else:  # bottom right
            x1a, y1a, x2a, y2a = xc, yc, min(xc + w, s * 2), min(s * 2, yc + h)
            x1b, y1b, x2b, y2b = 0, 0, min(w, x2a - x1a), min(y2a - y1a, h)
        img4[y1a:y2a, x1a:x2a] = img[y1b:y2b, x1b:x2b]
        padw, padh = x1a - x1b, y1a - y1b
        t = targets[i]
        for k in range(len(t["labels"])):
            b = t["boxes"][k].astype(np.float64)
            labels4.append([0, b[0] + padw, b[1] + padh, b[2] + padw, b[3] + padh])
            m4 = np.zeros((s * 2, s * 2), dtype=np.uint8)
            m4[y1a:y2a, x1a:x2a] = t["masks"][k][y1b:y2b, x1b:x2b]
            masks4.append(m4)
            ids4.append((i, k))
            kp = None  # A tile without keypoints: zeros in the output (as collate pads).
            if p and t.get("keypoints") is not None and t["keypoints"].shape[1] == p:
                kp = t["keypoints"][k].copy()
                kp[:, 0] += padw  # Instances.add_padding
                kp[:, 1] += padh
            kp4.append(kp)
    labels4 = np.array(labels4, dtype=np.float64).reshape(-1, 5)
    np.clip(labels4[:, 1:], 0, 2 * s, out=labels4[:, 1:])
    unlabelled = [kp is None for kp in kp4]
    kp4 = np.array([np.zeros((p, 3)) if kp is None else kp for kp in kp4],
                   dtype=np.float32).reshape(len(kp4), p, 3)
    # _cat_labels: Instances.clip(2s, 2s) marks points off the canvas unlabelled, clips them.
    off = (kp4[..., 0] < 0) | (kp4[..., 0] > 2 * s) | (kp4[..., 1] < 0) | (kp4[..., 1] > 2 * s)
    kp4[..., 2][off] = 0.0
    kp4[..., 0] = kp4[..., 0].clip(0, 2 * s)
    kp4[..., 1] = kp4[..., 1].clip(0, 2 * s)
    # random_perspective(img4, labels4, degrees=0, translate=0, scale=0, shear=0,
    # perspective=0, border=(-s // 2, -s // 2)): M = T @ C, a shift by s // 2 - s.
    border = -s // 2
    height, width = img4.shape[0] + border * 2, img4.shape[1] + border * 2
    C = np.eye(3)
    C[0, 2], C[1, 2] = -img4.shape[1] / 2, -img4.shape[0] / 2
    T = np.eye(3)
    T[0, 2], T[1, 2] = 0.5 * width, 0.5 * height
    M = T @ C
    dx, dy = int(-M[0, 2]), int(-M[1, 2])
    assert M[0, 2] == -dx and M[1, 2] == -dy  # An integer shift: warpAffine is a slice.
    out = img4[dy:dy + height, dx:dx + width]
    out_masks = [m[dy:dy + height, dx:dx + width] for m in masks4]
    n = len(labels4)
    kept = []
    if n:
        xy = np.ones((n * 4, 3))
        xy[:, :2] = labels4[:, [1, 2, 3, 4, 1, 4, 3, 2]].reshape(n * 4, 2)
        xy = (xy @ M.T)[:, :2].reshape(n, 8)
        x, y = xy[:, [0, 2, 4, 6]], xy[:, [1, 3, 5, 7]]
        new = np.concatenate((x.min(1), y.min(1), x.max(1), y.max(1))).reshape(4, n).T
        new[:, [0, 2]] = new[:, [0, 2]].clip(0, width)
        new[:, [1, 3]] = new[:, [1, 3]].clip(0, height)
        keep = box_candidates(box1=labels4[:, 1:5].T * 1.0, box2=new.T, area_thr=area_thr)
        # RandomPerspective.apply_keypoints: moved by M, unlabelled outside the window.
        kps = np.zeros((n, p, 3))
        if p:
            xy = np.ones((n * p, 3), dtype=kp4.dtype)
            visible = kp4[..., 2].reshape(n * p, 1).copy()
            xy[:, :2] = kp4[..., :2].reshape(n * p, 2)
            xy = xy @ M.T
            xy = xy[:, :2] / xy[:, 2:3]
            out_mask = (xy[:, 0] < 0) | (xy[:, 1] < 0) | (xy[:, 0] > width) | (xy[:, 1] > height)
            visible[out_mask] = 0
            kps = np.concatenate([xy, visible], axis=-1).reshape(n, p, 3)
            kps[unlabelled] = 0
        kept = [(ids4[j], new[j], out_masks[j], kps[j]) for j in range(n) if keep[j]]
    return out, kept


def main():
    tool = Tool(sys.argv[1])
    tmp = tempfile.mkdtemp()
    path = lambda name: os.path.join(tmp, name)  # noqa: E731
    g = np.random.default_rng(33)
    failures = []
    cases = 0

    # copy_paste: pairs, selections, blending on and off.
    for case in range(40):
        w, h = int(g.integers(24, 80)), int(g.integers(24, 80))
        k_image, k_paste = int(g.integers(0, 7)), int(g.integers(0, 7))
        image, target = sample(g, w, h, k_image, 1, thin=case % 5 == 0)
        paste_image, paste = sample(g, w, h, k_paste, 20)
        if case % 3 == 0 and k_paste:  # A big paste that covers some instances whole.
            paste["masks"][0][:, : w // 2] = 1
        selection = sorted(set(int(v) for v in g.integers(0, max(k_paste, 1), k_paste)))
        blending = case % 2 == 0
        Image.fromarray(image).save(path("i.ppm"))
        Image.fromarray(paste_image).save(path("p.ppm"))
        write_targets(path("t.txt"), target)
        write_targets(path("pt.txt"), paste)
        reply = tool.ask("copy_paste", int(blending), ",".join(map(str, selection)),
                         path("p.ppm"), path("pt.txt"), path("i.ppm"), path("t.txt"),
                         path("o.ppm"), path("ot.txt"))
        if reply != "ok":
            failures.append(f"copy_paste case {case}: {reply}")
            continue
        got_image = np.asarray(Image.open(path("o.ppm")))
        got = read_targets(path("ot.txt"))
        for dtype in (torch.uint8, torch.float32):
            img = torch.tensor(image).permute(2, 0, 1)
            pimg = torch.tensor(paste_image).permute(2, 0, 1)
            if dtype == torch.float32:
                img, pimg = F.convert_image_dtype(img, dtype), F.convert_image_dtype(pimg, dtype)
            ref_image, ref = ref_copy_paste(img, torch_target(target), pimg, torch_target(paste),
                                            selection, blending)
            want = ref_image.permute(1, 2, 0).numpy()
            have = got_image if dtype == torch.uint8 else F.convert_image_dtype(
                torch.tensor(got_image).permute(2, 0, 1), dtype).permute(1, 2, 0).numpy()
            where = f"copy_paste case {case} ({w}x{h}, {dtype}, blending={blending})"
            if not np.array_equal(have, want):
                failures.append(f"{where}: pixels differ at {np.argwhere(have != want)[:3]}")
            if got["labels"].tolist() != ref["labels"].tolist():
                failures.append(f"{where}: labels {got['labels']} vs {ref['labels']}")
                continue
            if len(got["labels"]) and np.abs(got["boxes"] - ref["boxes"].double().numpy()).max() > 1e-3:
                failures.append(f"{where}: boxes {got['boxes']} vs {ref['boxes']}")
            if got["iscrowd"].tolist() != ref["iscrowd"].tolist():
                failures.append(f"{where}: iscrowd")
            if not np.array_equal(got["area"], ref["area"].double().numpy()):
                failures.append(f"{where}: area {got['area']} vs {ref['area']}")
            if not np.array_equal(got["masks"], ref["masks"].numpy()):
                failures.append(f"{where}: masks differ")
        cases += 1

    # mosaic: four square tiles, centres over the whole range (and past it).
    for case in range(30):
        s = int(g.integers(12, 40)) * 2
        tiles = [sample(g, s, s, int(g.integers(0, 6)), 10 * (i + 1)) for i in range(4)]
        # Keypoints on every tile, on none, or on the first two only (the others' zeros).
        tiles = [(img, with_keypoints(g, t, 3) if case % 3 == 0 or (case % 3 == 2 and i < 2)
                  else t) for i, (img, t) in enumerate(tiles)]
        lo, hi = (s // 2, 2 * s - s // 2) if case % 4 else (0, 2 * s)
        xc, yc = int(g.integers(lo, hi)), int(g.integers(lo, hi))
        area_thr = 0.1 if case % 2 else 0.01
        for i, (img, t) in enumerate(tiles):
            Image.fromarray(img).save(path(f"m{i}.ppm"))
            write_targets(path(f"mt{i}.txt"), t)
        reply = tool.ask("mosaic", xc, yc, area_thr, *[path(f"m{i}.ppm") for i in range(4)],
                         *[path(f"mt{i}.txt") for i in range(4)], path("mo.ppm"),
                         path("mot.txt"))
        where = f"mosaic case {case} (s={s}, centre {xc},{yc})"
        if reply != "ok":
            failures.append(f"{where}: {reply}")
            continue
        want_image, kept = ref_mosaic([img for img, _ in tiles], [t for _, t in tiles], xc, yc,
                                      area_thr)
        got_image = np.asarray(Image.open(path("mo.ppm")))
        got = read_targets(path("mot.txt"))
        if not np.array_equal(got_image, want_image):
            failures.append(f"{where}: pixels differ")
        want_labels = [tiles[i][1]["labels"][k] for (i, k), _, _, _ in kept]
        if got["labels"].tolist() != want_labels:
            failures.append(f"{where}: labels {got['labels'].tolist()} vs {want_labels}")
            continue
        want_p = 3 if case % 3 != 1 else 0
        got_p = 0 if got["keypoints"] is None else got["keypoints"].shape[1]
        if got_p != want_p:
            failures.append(f"{where}: {got_p} keypoints per instance, want {want_p}")
            continue
        for j, ((i, k), box, mask, kp) in enumerate(kept):
            if np.abs(got["boxes"][j] - box).max() > 1e-3:
                failures.append(f"{where}: box {j} {got['boxes'][j]} vs {box}")
            if want_p and (np.abs(got["keypoints"][j][:, :2] - kp[:, :2]).max() > 1e-3 or
                           not np.array_equal(got["keypoints"][j][:, 2], kp[:, 2])):
                failures.append(f"{where}: keypoints {j} {got['keypoints'][j].tolist()} "
                                f"vs {kp.tolist()}")
            if not np.array_equal(got["masks"][j], mask):
                failures.append(f"{where}: mask {j} differs")
            if got["iscrowd"][j] != tiles[i][1]["iscrowd"][k] or \
                    got["area"][j] != tiles[i][1]["area"][k]:
                failures.append(f"{where}: iscrowd/area of {j}")
        cases += 1

    for f in failures[:20]:
        print("FAIL", f)
    print(f"{cases} cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
