#!/usr/bin/python3
"""detection_parity_test: flowloader's target geometry and mask coding against references.

Run by Bazel as `detection_parity_test.py PATH_TO_det_tool`. The references are written
here, in torch, from the sources they follow (Debian's torchvision 0.14 has no
transforms.v2, so its kernels cannot be imported):
  * boxes, masks and sanitize: torchvision/transforms/v2/functional/_geometry.py
    (horizontal_flip_bounding_boxes, vertical_flip_bounding_boxes, crop_bounding_boxes,
    pad_bounding_boxes, resize_bounding_boxes, resized_crop_bounding_boxes,
    center_crop_bounding_boxes, clamp_bounding_boxes; horizontal_flip_mask, crop_mask =
    crop_image, pad_mask, resize_mask = interpolate(mode="nearest"), center_crop_mask =
    center_crop_image) and _misc.py (_get_sanitize_bounding_boxes_mask), pytorch/vision
    main as of 2024 (the v2 kernels since v0.16). Masks use torch 1.13's real
    torch.nn.functional.interpolate, the function v2's resize_mask calls.
    Boxes must agree within 1e-3 px, masks and sanitize's choices exactly.
  * COCO RLE: the compressed string form and the column-major runs as cocoapi's
    maskApi.c defines them (rleToString / rleFrString), and polygon rasterisation as its
    rleFrPoly does, each written out below; flowloader must match them exactly.
  * PIL's ImageDraw.polygon (fill=1, outline=1) is compared with COCO's rasteriser: they
    differ only on boundary pixels (PIL fills the pixels its outline crosses, which makes
    its masks larger, ~9% more pixels on these small polygons, and draws the outline
    from vertices rounded to whole pixels, which loses a few of COCO's); the test checks
    that every differing pixel's centre lies within 1.5 px of the polygon's outline and
    prints how many differ each way.
"""
import math
import os
import random
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as TF
from PIL import Image, ImageDraw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from line_tool import Tool  # noqa: E402  (ask_line: det_tool answers one line)

TOOL = sys.argv[1]
FAILURES = []


def check(cond, message):
    if not cond:
        FAILURES.append(message)


def nums(values):
    return ",".join(repr(float(v)) for v in values)


# ---- References from torchvision.transforms.v2 (see the module docstring). ----

def clamp_xyxy(b, h, w):
    b = b.clone()
    b[:, 0::2].clamp_(min=0, max=w)
    b[:, 1::2].clamp_(min=0, max=h)
    return b


def ref_boxes(geometry, b, h, w):
    """Returns (boxes, (h, w)) as v2's *_bounding_boxes kernels give for xyxy boxes."""
    kind, args = geometry
    if kind == "hflip":
        b = b.clone()
        b[:, [2, 0]] = b[:, [0, 2]].sub_(w).neg_()
        return b, (h, w)
    if kind == "vflip":
        b = b.clone()
        b[:, [1, 3]] = b[:, [3, 1]].sub_(h).neg_()
        return b, (h, w)
    if kind == "crop":
        top, left, ch, cw = args
        b = b - torch.tensor([left, top, left, top], dtype=b.dtype)
        return clamp_xyxy(b, ch, cw), (ch, cw)
    if kind == "pad":
        left, top, right, bottom = args
        b = b + torch.tensor([left, top, left, top], dtype=b.dtype)
        h, w = h + top + bottom, w + left + right
        return clamp_xyxy(b, h, w), (h, w)
    if kind == "resize":
        nh, nw = args
        if (nh, nw) == (h, w):
            return b, (h, w)
        ratios = torch.tensor([nw / w, nh / h, nw / w, nh / h])
        return b.mul(ratios).to(b.dtype), (nh, nw)
    if kind == "resized_crop":
        top, left, ch, cw, oh, ow = args
        b, (h, w) = ref_boxes(("crop", (top, left, ch, cw)), b, h, w)
        return ref_boxes(("resize", (oh, ow)), b, h, w)
    if kind == "center_crop":
        ch, cw = args
        top = int(round((h - ch) / 2.0))
        left = int(round((w - cw) / 2.0))
        return ref_boxes(("crop", (top, left, ch, cw)), b, h, w)
    raise ValueError(kind)


def crop_image(img, top, left, height, width):
    """v2's crop_image on [..., H, W]: slicing, zero padding where the window is outside."""
    h, w = img.shape[-2:]
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        img = img[..., max(top, 0):bottom, max(left, 0):right]
        pad = [max(min(right, 0) - left, 0), max(right - max(w, left), 0),
               max(min(bottom, 0) - top, 0), max(bottom - max(h, top), 0)]
        return TF.pad(img, pad, value=0)
    return img[..., top:bottom, left:right]


def ref_masks(geometry, m):
    """v2's *_mask kernels on uint8 [K, H, W]."""
    kind, args = geometry
    h, w = m.shape[-2:]
    if kind == "hflip":
        return m.flip(-1)
    if kind == "vflip":
        return m.flip(-2)
    if kind == "crop":
        return crop_image(m, *args)
    if kind == "pad":
        left, top, right, bottom = args
        return TF.pad(m, [left, right, top, bottom], value=0)
    if kind == "resize":
        nh, nw = args
        if (nh, nw) == (h, w):
            return m
        return TF.interpolate(m[None], size=[nh, nw], mode="nearest")[0]
    if kind == "resized_crop":
        top, left, ch, cw, oh, ow = args
        return ref_masks(("resize", (oh, ow)), crop_image(m, top, left, ch, cw))
    if kind == "center_crop":  # center_crop_image
        ch, cw = args
        if ch > h or cw > w:
            pad = [(cw - w) // 2 if cw > w else 0, (ch - h) // 2 if ch > h else 0,
                   (cw - w + 1) // 2 if cw > w else 0, (ch - h + 1) // 2 if ch > h else 0]
            m = TF.pad(m, [pad[0], pad[2], pad[1], pad[3]], value=0)
            h, w = m.shape[-2:]
            if (cw, ch) == (w, h):
                return m
        top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
        return m[..., top:top + ch, left:left + cw]
    raise ValueError(kind)


def ref_sanitize(b, h, w, min_size, min_area):
    """_get_sanitize_bounding_boxes_mask for xyxy boxes."""
    ws, hs = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    valid = (ws >= min_size) & (hs >= min_size) & (b >= 0).all(dim=-1) & (ws * hs >= min_area)
    valid &= (b[:, 0] <= w) & (b[:, 2] <= w)
    valid &= (b[:, 1] <= h) & (b[:, 3] <= h)
    return valid


# ---- References from cocoapi's maskApi.c (the COCO RLE definition). ----

def ref_rle_to_string(counts):
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1f
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def ref_rle_from_string(s):
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1f) << (5 * k)
            more = c & 0x20
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def ref_decode(counts, h, w):
    flat = np.zeros(h * w, np.uint8)
    pos, val = 0, 0
    for c in counts:
        flat[pos:pos + c] = val
        pos += c
        val = 1 - val
    return flat.reshape(w, h).T.copy()  # Column-major: pixel (x, y) is x·h + y.


def ref_encode(mask):
    flat = mask.T.reshape(-1)
    counts, cur, run = [], 0, 0
    for v in flat:
        if v != cur:
            counts.append(run)
            run, cur = 0, v
        run += 1
    counts.append(run)
    return counts


def ref_poly(xy, h, w):
    """cocoapi rleFrPoly, line by line (C's (int) truncates toward zero)."""
    scale = 5.0
    k = len(xy) // 2
    x = [int(scale * xy[2 * j] + .5) for j in range(k)] + [0]
    y = [int(scale * xy[2 * j + 1] + .5) for j in range(k)] + [0]
    x[k], y[k] = x[0], y[0]
    u, v = [], []
    for j in range(k):
        xs, xe, ys, ye = x[j], x[j + 1], y[j], y[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        # cocoapi divides 0 by 0 for a repeated point; that NaN is never read.
        s = 0.0 if dx == dy == 0 else ((ye - ys) / dx if dx >= dy else (xe - xs) / dy)
        if dx >= dy:
            for d in range(dx + 1):
                t = dx - d if flip else d
                u.append(t + xs)
                v.append(int(ys + s * t + .5))
        else:
            for d in range(dy + 1):
                t = dy - d if flip else d
                v.append(t + ys)
                u.append(int(xs + s * t + .5))
    a = []
    for j in range(1, len(u)):
        if u[j] == u[j - 1]:
            continue
        xd = float(u[j] if u[j] < u[j - 1] else u[j] - 1)
        xd = (xd + .5) / scale - .5
        if math.floor(xd) != xd or xd < 0 or xd > w - 1:
            continue
        yd = float(v[j] if v[j] < v[j - 1] else v[j - 1])
        yd = (yd + .5) / scale - .5
        yd = 0 if yd < 0 else (h if yd > h else yd)
        yd = math.ceil(yd)
        a.append(int(xd) * h + int(yd))
    a.append(h * w)
    a.sort()
    prev = 0
    for i in range(len(a)):
        a[i], prev = a[i] - prev, a[i]
    b, j = [a[0]], 1
    while j < len(a):
        if a[j] > 0:
            b.append(a[j])
            j += 1
        else:
            j += 1
            if j < len(a):
                b[-1] += a[j]
                j += 1
    return ref_decode(b, h, w)


def near_outline(xy, h, w, radius=1.0):
    """Pixels whose centre lies within `radius` of the polygon's outline."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    pts = np.array(xy, np.float64).reshape(-1, 2)
    best = np.full((h, w), np.inf)
    for i in range(len(pts)):
        (x0, y0), (x1, y1) = pts[i], pts[(i + 1) % len(pts)]
        dx, dy = x1 - x0, y1 - y0
        L = dx * dx + dy * dy
        t = np.clip(((xs - x0) * dx + (ys - y0) * dy) / L if L > 0 else 0, 0, 1)
        d = np.hypot(xs - (x0 + t * dx), ys - (y0 + t * dy))
        best = np.minimum(best, d)
    return best <= radius + 1e-9


def random_polygon(rng, h, w):
    n = rng.randint(3, 9)
    cx, cy = rng.uniform(0, w), rng.uniform(0, h)
    r = rng.uniform(2, max(h, w) / 2)
    angles = sorted(rng.uniform(0, 2 * math.pi) for _ in range(n))
    xy = []
    for a in angles:
        rr = r * rng.uniform(0.4, 1.0)
        xy += [round(cx + rr * math.cos(a), 2), round(cy + rr * math.sin(a), 2)]
    return xy


def random_geometry(rng, h, w):
    kind = rng.choice(["hflip", "vflip", "crop", "pad", "resize", "resized_crop", "center_crop"])
    if kind in ("hflip", "vflip"):
        return (kind, ())
    if kind == "crop":
        # Windows that overlap the image (v2's slicing misreads one wholly above or left
        # of it: a negative end index counts from the far side).
        top, left = rng.randint(-5, h - 1), rng.randint(-5, w - 1)
        ch, cw = rng.randint(max(1, 1 - top), h + 10), rng.randint(max(1, 1 - left), w + 10)
        return (kind, (top, left, ch, cw))
    if kind == "pad":
        return (kind, tuple(rng.randint(0, 12) for _ in range(4)))
    if kind == "resize":
        return (kind, (rng.randint(1, 2 * h), rng.randint(1, 2 * w)))
    if kind == "resized_crop":
        ch, cw = rng.randint(1, h), rng.randint(1, w)
        return (kind, (rng.randint(0, h - ch), rng.randint(0, w - cw), ch, cw,
                       rng.randint(1, 2 * h), rng.randint(1, 2 * w)))
    return (kind, (rng.randint(1, h + 9), rng.randint(1, w + 9)))


def geometry_text(geometry):
    kind, args = geometry
    return kind if not args else kind + ":" + ",".join(str(a) for a in args)


def test_boxes_and_masks(tool, tmp):
    rng = random.Random(1)
    worst, cases = 0.0, 0
    for case in range(400):
        h, w = rng.randint(4, 60), rng.randint(4, 60)
        k = rng.randint(0, 6)
        boxes = []
        for _ in range(k):
            x1, y1 = rng.uniform(-5, w), rng.uniform(-5, h)
            boxes += [x1, y1, x1 + rng.uniform(0, w), y1 + rng.uniform(0, h)]
        b = torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4)
        g = random_geometry(rng, h, w)
        want, (wh, ww) = ref_boxes(g, b, h, w)
        got = tool.ask_line("boxes", geometry_text(g), "xyxy", f"{w},{h}",
                       nums(b.reshape(-1).tolist()))
        size, _, values = got.partition(" ")
        check(size == f"{ww},{wh}", f"{g} on {w}x{h}: canvas {size}, want {ww},{wh}")
        got_b = torch.tensor([float(v) for v in values.split(",") if v], dtype=torch.float32)
        if got_b.numel() != want.numel():
            check(False, f"{g}: {got_b.numel()} box values, want {want.numel()}")
            continue
        if k:
            err = (got_b.reshape(-1, 4) - want).abs().max().item()
            worst = max(worst, err)
            check(err <= 1e-3, f"{g} on {w}x{h}: boxes differ by {err}")
        # Masks: random planes, moved by flowloader and by the reference.
        m = (torch.rand(max(k, 1), h, w, generator=torch.Generator().manual_seed(case)) > 0.5)
        m = m.to(torch.uint8)
        src, dst = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
        m.numpy().tofile(src)
        want_m = ref_masks(g, m)
        got = tool.ask_line("masks", geometry_text(g), f"{m.shape[0]},{w},{h}", src, dst)
        mh, mw = want_m.shape[-2:]
        check(got == f"{mw},{mh}", f"{g} on {w}x{h}: mask size {got}, want {mw},{mh}")
        got_m = np.fromfile(dst, np.uint8)
        check(got_m.size == want_m.numel() and
              np.array_equal(got_m.reshape(want_m.shape), want_m.numpy()),
              f"{g} on {w}x{h}: masks differ")
        cases += 1
    print(f"boxes/masks: {cases} cases, largest box difference {worst:.2e} px")


def test_box_formats(tool):
    # xywh and cxcywh go through xyxy as v2 does.
    b = torch.tensor([[10.0, 5.0, 20.0, 8.0]])  # xywh
    got = tool.ask_line("boxes", "hflip", "xywh", "50,40", nums(b.reshape(-1).tolist()))
    want = [50 - 10 - 20, 5, 20, 8]
    vals = [float(v) for v in got.split(" ")[1].split(",")]
    check(all(abs(a - c) <= 1e-4 for a, c in zip(vals, want)), f"xywh hflip {vals} != {want}")
    got = tool.ask_line("boxes", "crop:2,4,30,30", "cxcywh", "50,40", nums([15, 10, 10, 4]))
    vals = [float(v) for v in got.split(" ")[1].split(",")]
    check(all(abs(a - c) <= 1e-4 for a, c in zip(vals, [11, 8, 10, 4])), f"cxcywh crop {vals}")


def test_sanitize(tool):
    rng = random.Random(2)
    for _ in range(300):
        h, w = rng.randint(1, 50), rng.randint(1, 50)
        boxes = []
        for _ in range(rng.randint(1, 8)):
            x1, y1 = rng.uniform(-3, w + 1), rng.uniform(-3, h + 1)
            boxes += [x1, y1, x1 + rng.uniform(-2, 6), y1 + rng.uniform(-2, 6)]
        if rng.random() < 0.2:
            boxes[0] = float("nan")
        min_size, min_area = rng.choice([1.0, 0.5, 2.0]), rng.choice([1.0, 0.0, 4.0])
        b = torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4)
        want = ref_sanitize(b, h, w, min_size, min_area).to(torch.int).tolist()
        got = tool.ask_line("sanitize", f"{w},{h}", f"{min_size},{min_area}", nums(boxes))
        check(got == ",".join(str(v) for v in want), f"sanitize {boxes}: {got} != {want}")


def test_rle(tool, tmp):
    rng = np.random.default_rng(3)
    path = os.path.join(tmp, "m.bin")
    for case in range(200):
        h, w = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        # Blobby masks: runs of every length, long ones too (multi-character numbers).
        mask = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        if case % 3 == 0:
            mask[:] = 0
            mask[h // 4: 3 * h // 4 + 1, w // 4:] = 1
        counts = ref_encode(mask)
        want = ref_rle_to_string(counts)
        mask.tofile(path)
        got = tool.ask_line("rle_encode", f"{h},{w}", path)
        check(got == want, f"rle_encode {h}x{w}: {got!r} != {want!r}")
        check(ref_rle_from_string(want) == counts, "reference decoder disagrees with encoder")
        got = tool.ask_line("rle_decode", f"{h},{w}", want, path)
        check(got == "ok" and np.array_equal(np.fromfile(path, np.uint8).reshape(h, w), mask),
              f"rle_decode {h}x{w} of {want!r}: {got}")
    # Counts that overrun the image, and a bad character: refused, not decoded.
    got = tool.ask_line("rle_decode", "2,2", ref_rle_to_string([2, 5]), path)
    check(got.startswith("error: RLE counts sum to 7"), f"overrun accepted: {got}")
    got = tool.ask_line("rle_decode", "2,2", "2\x7f1", path)
    check(got.startswith("error:"), f"bad character accepted: {got}")
    print("rle: 200 masks encoded and decoded as cocoapi defines")


def test_polygons(tool, tmp):
    rng = random.Random(4)
    path = os.path.join(tmp, "p.bin")
    extra, missing, total, pil_px = 0, 0, 0, 0
    for _ in range(150):
        h, w = rng.randint(5, 64), rng.randint(5, 64)
        xy = random_polygon(rng, h, w)
        got = tool.ask_line("poly", f"{h},{w}", nums(xy), path)
        mask = np.fromfile(path, np.uint8).reshape(h, w)
        want = ref_poly(xy, h, w)
        check(got == "ok" and np.array_equal(mask, want), f"polygon {xy} on {w}x{h} != rleFrPoly")
        img = Image.new("L", (w, h), 0)
        ImageDraw.Draw(img).polygon([(xy[i], xy[i + 1]) for i in range(0, len(xy), 2)],
                                    fill=1, outline=1)
        pil = np.asarray(img, np.uint8)
        diff = pil != mask
        off = diff & ~near_outline(xy, h, w, radius=1.5)
        check(not off.any(), f"polygon {xy} on {w}x{h}: PIL and COCO differ off the outline "
                             f"at {np.argwhere(off)[:5].tolist()}")
        extra += int((pil > mask).sum())
        missing += int((pil < mask).sum())
        pil_px += int(pil.sum())
        total += h * w
    print(f"polygons: 150 identical to rleFrPoly; of PIL ImageDraw.polygon's {pil_px} filled "
          f"pixels, {extra} are outside COCO's mask and {missing} of COCO's are not filled, "
          f"all within 1.5 px of the outline")


def main():
    tool = Tool(TOOL)
    with tempfile.TemporaryDirectory() as tmp:
        test_boxes_and_masks(tool, tmp)
        test_box_formats(tool)
        test_sanitize(tool)
        test_rle(tool, tmp)
        test_polygons(tool, tmp)
    for f in FAILURES[:30]:
        print("FAIL:", f)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print("detection parity: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
