#!/bin/bash
# formats_rss_check.sh: the real-RSS check behind the per-format decode-memory bounds in
# internal/more_codecs.h (png_rss_check.sh's counterpart for WebP, TIFF, GIF, BMP, PPM).
# It writes one ImageFolder dataset per format of two large single-colour 6000x4000 images
# (72 MB each decoded at full size), runs the flowloader CLI over each (train transform:
# region decodes for a 224 output) under /usr/bin/time -v and prints the peak RSS. GIF is
# not an ImageFolder extension, so its dataset is a list file. Manual (RSS depends on the
# machine and allocator, so no test asserts it); run from the repository root:
#
#   stages/decode/formats_rss_check.sh [FLOWLOADER_BINARY]  (default: bazel-bin/runtime/flowloader)
#
# BMP, PPM and uncompressed TIFF files are as large as their pixels, and the reader holds
# a file's bytes while it is decoded, so their RSS includes the files themselves.
# Measured 2026-12-03 on 2 cores (1 / 2 workers; a full-size decode alone is 72 MB):
#   webp_lossy 19 / 20 MB, webp_lossless 30 / 41 MB, tiff_lzw 21 / 22 MB, gif 21 / 23 MB,
#   tiff_raw, bmp and ppm 156 / 157 MB with 137 MB of files.
set -euo pipefail

binary=${1:-bazel-bin/runtime/flowloader}
[[ -x "$binary" ]] || { echo "no flowloader at $binary: bazel build //runtime:flowloader" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" <<'EOF'
import os, sys
from PIL import Image

im = Image.new("RGB", (6000, 4000), (40, 90, 200))
kinds = {
    "webp_lossy": ("webp", dict(quality=80)),
    "webp_lossless": ("webp", dict(lossless=True)),
    "tiff_lzw": ("tif", dict(compression="tiff_lzw")),
    "tiff_raw": ("tif", {}),
    "gif": ("gif", {}),
    "bmp": ("bmp", {}),
    "ppm": ("ppm", {}),
}
for kind, (ext, options) in kinds.items():
    os.makedirs(os.path.join(sys.argv[1], kind, "c"))
    names = []
    for i in range(2):
        name = "c/x%d.%s" % (i, ext)
        im.save(os.path.join(sys.argv[1], kind, name), **options)
        names.append(name)
    with open(os.path.join(sys.argv[1], kind, "list.tsv"), "w") as f:
        f.writelines(n + "\t0\n" for n in names)
EOF

for kind in webp_lossy webp_lossless tiff_lzw tiff_raw gif bmp ppm; do
  size=$(du -sk "$work/$kind/c" | cut -f1)
  for workers in 1 2; do
    /usr/bin/time -v "$binary" run --data="$work/$kind/list.tsv" --metrics_address= \
      --progress=false --num_workers="$workers" --batch_size=2 >/dev/null 2>"$work/time.txt" || {
      tail -3 "$work/time.txt" >&2
    }
    rss=$(awk '/Maximum resident/ {print $NF}' "$work/time.txt")
    echo "$kind (2 files, $((size / 1024)) MB) num_workers=$workers: max RSS $((rss / 1024)) MB"
  done
done
