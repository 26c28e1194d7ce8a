"""pil_reference.py: torchvision 0.14's PIL transforms on raw RGB images, for tests.

Reads a job file, one job per line:
  crop_resize IN W H  LEFT TOP CW CH  N FLIP  OUT    RandomResizedCrop's crop + resize
  resize_crop IN W H  NEW_W NEW_H LEFT TOP  N  OUT   Resize + CenterCrop
IN is W*H*3 raw RGB bytes; OUT receives N*N*3 raw RGB bytes. Exactly the PIL calls
torchvision.transforms.functional makes for PIL images (crop, then resize with
BILINEAR, then transpose for the flip). Exits non-zero on any error, so a missing PIL
fails the calling test.
"""
import sys

from PIL import Image


def main(job_path):
    with open(job_path) as jobs:
        for line in jobs:
            f = line.split()
            if not f:
                continue
            op, src, w, h = f[0], f[1], int(f[2]), int(f[3])
            with open(src, "rb") as raw:
                img = Image.frombytes("RGB", (w, h), raw.read())
            if op == "crop_resize":
                left, top, cw, ch, n, flip = map(int, f[4:10])
                out = img.crop((left, top, left + cw, top + ch))
                out = out.resize((n, n), Image.BILINEAR)
                if flip:
                    out = out.transpose(Image.FLIP_LEFT_RIGHT)
                dst = f[10]
            elif op == "resize_crop":
                new_w, new_h, left, top, n = map(int, f[4:9])
                out = img.resize((new_w, new_h), Image.BILINEAR)
                out = out.crop((left, top, left + n, top + n))
                dst = f[9]
            else:
                raise ValueError("unknown op " + op)
            with open(dst, "wb") as raw:
                raw.write(out.tobytes())


if __name__ == "__main__":
    main(sys.argv[1])
