#!/usr/bin/env bash
# memory_guard_rss_test.sh: under --memory_limit_mb=1024 with 2 workers, peak RSS
# (/usr/bin/time -v) stays under the limit for valid images and op lists whose image sizes
# only the sample knows, and what would not fit is skipped and counted, never allocated:
#   1. the default graph over two 13000x13000 JPEGs: the crop is decoded DCT-scaled, both
#      samples delivered;
# (each folder of large files holds a small photo too, which is delivered);
#   2. an op list without a planned head (rotate with expand first) over the same files:
#      the whole decode (483 MiB a file) is over a worker's share, skipped as
#      decode_memory;
#   3. resize(size=16384) then random_crop over small photos: the resize's 16384-high
#      image is skipped as op_memory before it is made;
#   4. rotate with expand over 8000x8000 images: the decode fits a worker, the rotated
#      image beside it does not (op_memory);
#   5. the same sizes made by an op inside random_choice or random_order (op_memory);
#   6. one worker, a small photo padded to 8192² (working images the thread keeps, up to
#      the planned scratch) before a 13000x13000 photo whose decode and copy fit the
#      worker's share only if the kept images are not counted (op_memory);
#   7. one worker, pad then resize to 8192 of an 8000x8000 photo: the resize's
#      horizontal pass (8192 wide, 12000 rows) beside its input and output (op_memory;
#      the small photo is delivered).
#   8. one worker, a blur and a rotate in a compose over a 6880x6880 photo of ~24 MB,
#      whose working images just fit a worker's share: the file's bytes and the JPEG
#      scan's copy of them were kept through the transforms (1036 MiB peak at 6950², which
#      no longer fits since the plan counts the buffers a decode thread keeps).
#   9. one worker, elastic_transform over the 13000x13000 JPEGs (the decode fits a
#      worker's share): its draw made two float noise planes of the image's size, 1.3 GB,
#      before the memory check (2282 MiB peak); now checked before the draw (op_memory),
#      in a compose too.
#  10. ops whose output size is their draw: scale_jitter (target_size 16000) and
#      random_shortest_size (in a random_choice) over small photos, 2 workers: the drawn
#      size was counted as the input's (1151 and 1077 MiB peak); random_zoom_out's 4x
#      canvas of a 4000x3000 photo likewise (1259 MiB). Now op_memory before allocating.
#  11. 2 workers, elastic_transform over 8000x8000 photos (the decode fits a worker): the
#      geometry chain drew the op (its noise planes, 512 MiB) to see whether it chains,
#      before any check (1497 MiB peak); now checked before that draw too (op_memory).
#  12. under memory_limit_mb 256 with 2 workers, two 7000x7000 uncompressed BMPs (140 MiB
#      files): the read stage read each whole file before the decode's check refused it
#      (300 MiB peak); a file over a worker's share is now that skip (decode_memory) unread.
# Sanitized builds map shadow memory and quarantine frees: there RSS says nothing, but the
# skips are still checked.
source tests/testing/cli_test_lib.sh "$@"
LIMIT_MB=1024

# Flat-colour JPEGs: hundreds of megapixels, a few MB on disk, made in seconds.
"$PY" - "$TMP" <<'PYEOF'
import os, sys
from PIL import Image
root = sys.argv[1]
def make(folder, side, colours):
    os.makedirs(f"{root}/{folder}/c", exist_ok=True)
    for i, c in enumerate(colours):
        Image.new("RGB", side, c).save(f"{root}/{folder}/c/{i}.jpg", quality=50)
make("huge", (13000, 13000), [(200, 30, 30), (30, 200, 30)])
make("large", (8000, 8000), [(30, 30, 200), (200, 200, 30)])
make("small", (320, 240), [(10, 20, 30), (40, 50, 60)])
# A photo that fits beside the large ones: skipping is per sample, not per run.
for folder in ("huge", "large"):
    Image.new("RGB", (320, 240), (90, 90, 90)).save(f"{root}/{folder}/c/fits.jpg")
# 4000x3000 photos, whose 4x zoom-out canvas is 549 MiB.
os.makedirs(f"{root}/zoom/c", exist_ok=True)
for i, c in enumerate([(20, 120, 220), (220, 120, 20)]):
    Image.new("RGB", (4000, 3000), c).save(f"{root}/zoom/c/{i}.jpg", quality=50)
# Uncompressed files larger than a worker's share under memory_limit_mb 256.
os.makedirs(f"{root}/bmp/c", exist_ok=True)
for i, c in enumerate([(20, 220, 120), (120, 20, 220)]):
    Image.new("RGB", (7000, 7000), c).save(f"{root}/bmp/c/{i}.bmp")
Image.new("RGB", (320, 240), (90, 90, 90)).save(f"{root}/bmp/c/fits.jpg")
# Photo-like (not flat) content: gradients and lines, a whole-image decode.
import numpy as np
def photo(w, h):
    x = (np.arange(w, dtype=np.uint16) % 256).astype(np.uint8)
    a = np.broadcast_to(np.stack([x, x[::-1], (x * 3) % 251], axis=-1), (h, w, 3)).copy()
    a[::97] = 255
    return Image.fromarray(a)
os.makedirs(f"{root}/kept/c", exist_ok=True)
photo(640, 480).save(f"{root}/kept/c/small.jpg", quality=85)
photo(13000, 13000).save(f"{root}/kept/c/huge.jpg", quality=85)
os.makedirs(f"{root}/pass/c", exist_ok=True)
photo(640, 480).save(f"{root}/pass/c/small.jpg", quality=85)
photo(8000, 8000).save(f"{root}/pass/c/large.jpg", quality=85)
# Noisy rows and columns: a file of ~24 MB for 48 Mpx (a flat one is under 1 MB).
os.makedirs(f"{root}/dense/c", exist_ok=True)
a = np.asarray(photo(6880, 6880)).copy()
a += np.random.default_rng(0).integers(0, 40, size=(6880, 1, 1), dtype=np.uint8)
a[:, ::13] ^= 0x55
Image.fromarray(a).save(f"{root}/dense/c/dense.jpg", quality=90)
PYEOF

# run_case NAME DATA SPEC_OPS EXPECT_SAMPLES EXPECT_REASON EXPECT_SKIPS
run_case() {
  local name="$1" data="$2" ops="$3" samples="$4" reason="$5" skips="$6"
  local spec="$TMP/$name.yaml" summary="$TMP/$name.json" log="$TMP/$name.time"
  {
    echo "data: $data"
    echo "batch_size: 1"
    echo "num_workers: ${WORKERS:-2}"
    echo "epochs: ${EPOCHS:-1}"
    echo "memory_limit_mb: $LIMIT_MB"
    if [[ -n "$ops" ]]; then
      echo "stages:"
      echo "  - type: read"
      echo "  - type: decode"
      echo "  - type: transforms"
      echo "    ops:"
      local op
      IFS=';' read -ra op_list <<<"$ops"
      for op in "${op_list[@]}"; do echo "      - $op"; done
    fi
  } >"$spec"
  local rc=0
  /usr/bin/time -v "$FLOWLOADER" run --spec="$spec" --metrics_address= --noprogress \
    --summary_json="$summary" >"$TMP/$name.out" 2>"$log" || rc=$?
  # Exit 3: the run delivered no sample (every one skipped), as expected where none fits.
  if [[ $rc -ne 0 && ! ($rc -eq 3 && $samples -eq 0) ]]; then
    cat "$log" >&2
    fail "$name: run exited $rc"
  fi
  "$PY" - "$name" "$summary" "$log" "$samples" "$reason" "$skips" "$LIMIT_MB" "$SANITIZED" <<'PYEOF'
import json, re, sys
name, summary, log, samples, reason, skips, limit_mb, sanitized = sys.argv[1:]
s = json.load(open(summary))
text = open(log).read()
kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
peak_mb = kb / 1024
print(f"memory_guard_rss_test: {name}: {s['samples']} samples, skipped {s['errors']}, "
      f"peak RSS {peak_mb:.0f} MiB (limit {limit_mb})")
assert s["samples"] == int(samples), (name, s["samples"])
errors = s.get("errors", {})
if reason:
    assert s["skipped"] == int(skips) and errors.get(reason) == int(skips), (name, errors)
    assert reason in text, f"{name}: the log does not name {reason}"
if sanitized == "0":
    assert peak_mb <= int(limit_mb), f"{name}: peak RSS {peak_mb:.0f} MiB over {limit_mb}"
PYEOF
}

run_case default "$TMP/huge" "" 3 "" 0
run_case whole_decode "$TMP/huge" \
  "random_rotation: {degrees: 30, expand: true};resize: {size: [224, 224]};normalize: {}" \
  1 decode_memory 2
run_case resize_16384 "$TMP/small" \
  "resize: {size: 16384};random_crop: {size: 224};normalize: {}" 0 op_memory 2
run_case rotate_expand "$TMP/large" \
  "random_rotation: {degrees: [45, 45], expand: true};resize: {size: [224, 224]};normalize: {}" \
  1 op_memory 2
# 5. an op inside random_choice / random_order (whose sizes the plan cannot know) is
#    checked as the list's own ops are: it went 1.6 GB past the limit.
run_case choice_resize "$TMP/small" \
  "random_choice: {transforms: [{resize: {size: [16384, 16384]}}, {resize: {size: [16000, 16000]}}]};center_crop: {size: 224};normalize: {}" \
  0 op_memory 2
run_case order_resize_rotate "$TMP/small" \
  "random_order: {transforms: [{resize: {size: [16000, 16000]}}, {random_rotation: {degrees: [45, 45], expand: true}}]};center_crop: {size: 224};normalize: {}" \
  0 op_memory 2
# 6. working images a thread keeps from one sample stay resident beside the next one's
#    decode: two epochs, so that the small photo comes before the huge one (1.2 GB).
WORKERS=1 EPOCHS=2 run_case kept_working_images "$TMP/kept" \
  "random_crop: {size: 8192, pad_if_needed: true, padding_mode: edge};gaussian_blur: {kernel_size: 23, sigma: [0.1, 2.0]};resize: {size: [64, 64]};normalize: {}" \
  0 op_memory 4
# 7. the resize's own working memory (its horizontal pass) is counted: 1.28 GB before.
WORKERS=1 run_case resize_pass "$TMP/pass" \
  "pad: {padding: 2000};resize: {size: 8192};resize: {size: [64, 64]};normalize: {}" \
  1 op_memory 1
# 8. the encoded bytes held beside the transforms: the sample is delivered, within the limit.
WORKERS=1 run_case encoded_bytes "$TMP/dense" \
  "compose: {transforms: [{gaussian_blur: {kernel_size: 23, sigma: [0.1, 2.0]}}, {random_rotation: {degrees: 30}}]};resize: {size: [64, 64]};normalize: {}" \
  1 "" 0
# 9. an op whose draw allocates by the image's size: checked before the draw.
WORKERS=1 run_case elastic_draw "$TMP/huge" \
  "elastic_transform: {alpha: 50.0, sigma: 5.0};resize: {size: [64, 64]};normalize: {}" \
  1 op_memory 2
WORKERS=1 run_case elastic_draw_in_compose "$TMP/huge" \
  "compose: {transforms: [{elastic_transform: {alpha: 50.0, sigma: 5.0}}]};resize: {size: [64, 64]};normalize: {}" \
  1 op_memory 2
# 10. an output size that is the op's draw.
run_case scale_jitter "$TMP/small" \
  "scale_jitter: {target_size: [16000, 16000], scale_range: [1.0, 1.0]};resize: {size: [224, 224]};normalize: {}" \
  0 op_memory 2
run_case choice_shortest_size "$TMP/small" \
  "random_choice: {transforms: [{random_shortest_size: {min_size: [12000], max_size: 16384}}]};resize: {size: [224, 224]};normalize: {}" \
  0 op_memory 2
run_case zoom_out "$TMP/zoom" \
  "random_zoom_out: {side_range: [4.0, 4.0], p: 1.0};gaussian_blur: {kernel_size: 3};resize: {size: [224, 224]};normalize: {}" \
  0 op_memory 2
# 11. an op drawn by the geometry chain to see whether it chains: checked before that draw.
run_case elastic_chain_draw "$TMP/large" \
  "elastic_transform: {alpha: 50.0, sigma: 5.0};resize: {size: [224, 224]};normalize: {}" \
  1 op_memory 2
# 12. a file over a worker's share is not read.
LIMIT_MB=256 run_case file_over_share "$TMP/bmp" "" 1 decode_memory 2
echo "memory_guard_rss_test: 16 passed, 0 failed"
