#!/usr/bin/env bash
# label_map_rss_test.sh: semantic label maps of large images stay within memory_limit_mb
# 512 (one worker, batch 2) through ops that grow them:
#   1. pad(padding=4000) over 640x480 to 4096x4096 images with their label maps: an op's
#      check counted the image, not the map it moves (a 12096x10048 pad's 116 MiB map
#      beside its 348 MiB image), and the thread kept the largest map planes it ever
#      held for every later sample (627 MiB peak); both are now counted or given back,
#      what does not fit is op_memory, the small image delivered;
#   2. resize(size=8000) over the same (534 MiB peak): likewise.
# Sanitized builds map shadow memory: there RSS says nothing, only the skips are checked.
source tests/testing/cli_test_lib.sh "$@"
LIMIT_MB=512

"$PY" - "$TMP" <<'PYEOF'
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
os.makedirs(f"{root}/images", exist_ok=True)
os.makedirs(f"{root}/maps", exist_ok=True)
for i, (w, h) in enumerate([(4096, 4096), (4000, 3000), (640, 480), (4096, 2048)]):
    Image.new("RGB", (w, h), (30, 90 + i * 20, 60)).save(f"{root}/images/{i}.jpg", quality=60)
    m = np.zeros((h, w), np.uint8)
    m[h // 4: h // 2, w // 4: w // 2] = 3
    m[::50] = 255
    Image.fromarray(m, "L").save(f"{root}/maps/{i}.png")
PYEOF

# run_list NAME OPS(;-separated) SAMPLES OP_MEMORY_SKIPS
run_list() {
  local name="$1" ops="$2" samples="$3" skips="$4"
  {
    echo "data: $TMP/images"
    echo "label_maps: $TMP/maps"
    echo "batch_size: 2"
    echo "num_workers: 1"
    echo "epochs: 1"
    echo "memory_limit_mb: $LIMIT_MB"
    echo "stages:"
    echo "  - type: read"
    echo "  - type: label_map"
    echo "  - type: decode"
    echo "  - type: transforms"
    echo "    ops:"
    local op
    IFS=';' read -ra op_list <<<"$ops"
    for op in "${op_list[@]}"; do echo "      - $op"; done
  } >"$TMP/$name.yaml"
  run_spec_within_limit label_map_rss_test "$name" "$LIMIT_MB" "$samples" "$skips"
}
run_list pad "pad(padding=4000);resize(size=[512, 512])" 1 3
run_list resize "resize(size=8000);random_crop(size=512)" 1 3
echo "label_map_rss_test: 2 passed, 0 failed"
