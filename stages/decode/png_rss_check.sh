#!/bin/bash
# png_rss_check.sh: the real-RSS check behind png_region_test's buffer accounting. It
# writes ImageFolder datasets of hostile and large PNGs, runs the flowloader CLI over
# each under /usr/bin/time -v and prints the peak RSS. Manual (RSS depends on the
# machine and allocator, so no test asserts it); run from the repository root:
#
#   stages/decode/png_rss_check.sh [FLOWLOADER_BINARY]   (default: bazel-bin/runtime/flowloader)
#
# Datasets (4 files each, DIR/c/xN.png):
#   corrupt  355 KB files whose header says 13000x13000 RGB and whose IDAT is random bytes
#   short    13000x13000 headers with 3000 good rows, then the image data stops
#   solid    valid 8000x6000 single-colour PNGs (144 MB each decoded at full size)
# Measured 2026-12-03 on 2 cores: before the row-by-row region decode 1950 MB for corrupt
# and short and 153 / 291 MB for solid (1 / 2 workers); after, 16-17 MB for all six.
set -euo pipefail

binary=${1:-bazel-bin/runtime/flowloader}
[[ -x "$binary" ]] || { echo "no flowloader at $binary: bazel build //runtime:flowloader" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'EOF'
import os, random, struct, sys, zlib

def chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))

def png(width, height, idat):
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB.
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) +
            chunk(b"IEND", b""))

def rows(width, count, finish):
    z = zlib.compressobj(9)
    data = z.compress((b"\x00" + bytes([40, 90, 200]) * width) * count)
    return data + z.flush(zlib.Z_FINISH if finish else zlib.Z_SYNC_FLUSH)

rng = random.Random(1)
kinds = {
    "corrupt": lambda: png(13000, 13000, bytes(rng.getrandbits(8) for _ in range(355000))),
    "short": lambda: png(13000, 13000, rows(13000, 3000, finish=False)),
    "solid": lambda: png(8000, 6000, rows(8000, 6000, finish=True)),
}
for kind, make in kinds.items():
    os.makedirs(os.path.join(sys.argv[1], kind, "c"))
    for i in range(4):
        with open(os.path.join(sys.argv[1], kind, "c", "x%d.png" % i), "wb") as f:
            f.write(make())
EOF

for kind in corrupt short solid; do
  for workers in 1 2; do
    # Exit code 3 (every sample failed) is the expected outcome for corrupt and short.
    /usr/bin/time -v "$binary" run --data="$work/$kind" --metrics_address= --progress=false \
      --num_workers="$workers" --batch_size=4 >/dev/null 2>"$work/time.txt" || true
    rss=$(awk '/Maximum resident/ {print $NF}' "$work/time.txt")
    echo "$kind num_workers=$workers: max RSS $((rss / 1024)) MB"
  done
done
