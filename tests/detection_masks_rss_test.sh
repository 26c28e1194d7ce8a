#!/usr/bin/env bash
# detection_masks_rss_test.sh: instance masks of large images with many instances stay
# within memory_limit_mb 1024 (one worker, batch 2):
#   1. through a rotate with expand: each slot of each batch buffer kept the largest masks
#      it ever held, and the move of a sample's masks kept its input planes in a
#      thread-local buffer until the next sample, both outside the memory plan (1414 MiB
#      peak; under 700 once both are given back over 16 MiB);
#   2. through a 4x random_zoom_out (not chained): the op checked its image, not the
#      masks it moves onto the canvas (2.9 GB); now op_memory;
#   3. the zoom-out chained with a resize: masks move once to the chain's output, all
#      delivered.
# Sanitized builds map shadow memory: there RSS says nothing, only the delivery is checked.
source tests/testing/cli_test_lib.sh "$@"
LIMIT_MB=1024

# Four images of 0.3-3.8 Mpx with 5-80 instances whose boxes cover most of the image.
"$PY" - "$TMP" <<'PYEOF'
import json, os, sys
from PIL import Image
root = sys.argv[1]
os.makedirs(f"{root}/images", exist_ok=True)
images, annotations = [], []
for i, (w, h, k) in enumerate([(2000, 1500, 60), (2400, 1600, 40), (640, 480, 5),
                               (1200, 900, 80)]):
    Image.new("RGB", (w, h), (100, 50, 20)).save(f"{root}/images/{i}.jpg", quality=60)
    images.append({"id": i + 1, "file_name": f"{i}.jpg", "width": w, "height": h})
    for j in range(k):
        x0, y0 = (j * 7) % (w // 4), (j * 11) % (h // 4)
        x1, y1 = w - 1 - (j * 3) % (w // 4), h - 1 - (j * 5) % (h // 4)
        annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                            "category_id": 1 + j % 3, "iscrowd": 0,
                            "bbox": [x0, y0, x1 - x0, y1 - y0],
                            "area": float((x1 - x0) * (y1 - y0)),
                            "segmentation": [[x0, y0, x1, y0, x1, y1, x0, y1]]})
json.dump({"images": images, "annotations": annotations,
           "categories": [{"id": c, "name": str(c)} for c in (1, 2, 3)]},
          open(f"{root}/instances.json", "w"))
PYEOF
# run_list NAME OP_LINES SAMPLES OP_MEMORY_SKIPS: the list over the four images, two epochs.
run_list() {
  local name="$1" ops="$2" samples="$3" skips="$4"
  cat >"$TMP/$name.yaml" <<EOF2
data: $TMP/images
annotations: $TMP/instances.json
batch_size: 2
num_workers: 1
epochs: 2
memory_limit_mb: $LIMIT_MB
stages:
  - type: read
  - type: annotations
    options: {masks: true}
  - type: decode
  - type: transforms
    ops:
$ops
  - type: sanitize_bounding_boxes
EOF2
  run_spec_within_limit detection_masks_rss_test "$name" "$LIMIT_MB" "$samples" "$skips"
}
# 1. Kept masks given back: every sample delivered.
run_list rotate "      - random_rotation: {degrees: 30, expand: true}
      - resize: {size: [512, 512]}
      - normalize: {}" 8 0
# 2. A 4x zoom-out moved the masks onto its canvas unchecked (60 planes of 8000x6000: 2.9
#    GB); now op_memory beyond the masks the plan holds, but for the 5-instance image.
run_list zoom_out "      - random_zoom_out: {side_range: [4.0, 4.0], p: 1.0}
      - gaussian_blur: {kernel_size: 3}
      - resize: {size: [512, 512]}
      - normalize: {}" 2 6
# 3. The same zoom-out in a geometry chain with a resize (SSD's): its masks move once, to
#    300x300, as the chain builds no canvas: every sample delivered.
run_list zoom_chain "      - random_zoom_out: {side_range: [4.0, 4.0], p: 1.0}
      - random_horizontal_flip: {}
      - resize: {size: [300, 300]}
      - normalize: {}" 8 0
echo "detection_masks_rss_test: 3 passed, 0 failed"
