// multi_sample_stages.cc: the batch stages that make one sample out of several of a batch,
// for detection and instance segmentation: `mosaic` (YOLO's four-image mosaic) and
// `copy_paste` (Simple Copy-Paste, torchvision's detection references), over
// stages/detection's kernels (mosaic.h, copy_paste.h).
//
// A row's partners are rows of the same batch, and every draw comes from the batch's
// stream (BatchContext::Rng, keyed by seed, epoch and batch number): the output is the
// same for any num_workers and completion order, and after a resume mid-epoch. Both work
// on a copy of what they read (the batch is rewritten in place): the memory plan counts
// it as the stage's part.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/batch_stage.h"
#include "stages/detection/batch_image.h"
#include "stages/detection/copy_paste.h"
#include "stages/detection/mosaic.h"

namespace flowloader {
namespace {

using detection::BatchImage;
using detection::Targets;

// ImageTensor checks that the batch has one image tensor, uint8 [H, W, C] or float32
// [C, H, W], and instance targets (with masks when `masks`), naming what is missing.
absl::Status CheckBatch(const char* op, const BatchStageEnv& env, bool masks) {
  if (env.outputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " moves one image and its targets: the batch must have one tensor, it has ",
        env.outputs.size(), " (one augment view per sample)"));
  }
  if (env.outputs[0].sample_shape.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " needs an image tensor (uint8 [H, W, C] or float32 [C, H, W]); '",
        env.outputs[0].name, "' is [", absl::StrJoin(env.outputs[0].sample_shape, ", "), "]"));
  }
  if (!env.targets.boxes) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " moves instance targets, and the graph writes none: give `annotations:` (a COCO "
        "instances file) and its `annotations` stage"));
  }
  if (masks && !env.targets.instance_masks) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " pastes instance masks, and the annotations stage writes none: set its option "
        "masks: true"));
  }
  return absl::OkStatus();
}

absl::Status OptionError(const char* op, const std::string& option, const std::string& rule,
                         double got) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": option '", option, "' must be ", rule, ", got ", got));
}

// Geometry is the batch's image size and layout.
struct Geometry {
  int height = 0, width = 0, channels = 0;
  bool float_chw = false;
  size_t bytes = 0;
};

Geometry GeometryOf(const BatchTensor& t) {
  Geometry g;
  g.float_chw = t.dtype == DType::kFloat32;
  const std::vector<int64_t>& s = t.shape;  // [N, ...].
  g.channels = static_cast<int>(g.float_chw ? s[1] : s[3]);
  g.height = static_cast<int>(g.float_chw ? s[2] : s[1]);
  g.width = static_cast<int>(g.float_chw ? s[3] : s[2]);
  g.bytes = static_cast<size_t>(g.height) * g.width * g.channels * (g.float_chw ? 4 : 1);
  return g;
}

BatchImage ImageAt(const Geometry& g, void* base, int64_t row) {
  return BatchImage{static_cast<uint8_t*>(base) + static_cast<size_t>(row) * g.bytes, g.height,
                    g.width, g.channels, g.float_chw};
}

// RowTargets copies row r's targets out of the batch's flat ones.
void RowTargets(const BatchTargets& b, int64_t r, const Geometry& g, Targets* t) {
  t->Clear();
  t->image_id = b.image_ids[static_cast<size_t>(r)];
  t->canvas_width = g.width;
  t->canvas_height = g.height;
  const size_t begin = static_cast<size_t>(b.offsets[static_cast<size_t>(r)]);
  const size_t end = static_cast<size_t>(b.offsets[static_cast<size_t>(r) + 1]);
  t->boxes.assign(b.boxes.begin() + 4 * begin, b.boxes.begin() + 4 * end);
  t->labels.assign(b.labels.begin() + begin, b.labels.begin() + end);
  t->iscrowd.assign(b.iscrowd.begin() + begin, b.iscrowd.begin() + end);
  t->area.assign(b.area.begin() + begin, b.area.begin() + end);
  t->has_masks = b.has_masks;
  if (b.has_masks) {
    const size_t plane = t->mask_plane();
    t->masks.assign(b.masks.begin() + begin * plane, b.masks.begin() + end * plane);
  }
  t->has_keypoints = b.has_keypoints;
  t->num_keypoints = b.has_keypoints ? b.num_keypoints : 0;
  if (b.has_keypoints) {
    const size_t stride = t->keypoint_stride();
    t->keypoints.assign(b.keypoints.begin() + begin * stride, b.keypoints.begin() + end * stride);
  }
}

// CheckTargets checks that the batch's targets are instance targets on its image size.
absl::Status CheckTargets(const char* op, const BatchTargets& b, const Geometry& g,
                          int64_t rows, bool masks) {
  if (!b.present || b.has_semantic || b.rows() != rows) {
    return absl::InternalError(absl::StrCat(op, ": the batch carries no instance targets"));
  }
  if (b.has_masks && (b.mask_height != g.height || b.mask_width != g.width)) {
    return absl::InternalError(absl::StrCat(op, ": masks of ", b.mask_width, "x", b.mask_height,
                                            " on images of ", g.width, "x", g.height));
  }
  if (masks && !b.has_masks && !b.labels.empty()) {
    return absl::InternalError(absl::StrCat(op, ": the batch's instances have no masks"));
  }
  return absl::OkStatus();
}

// Rewrite replaces the batch's targets with `rows`, in order.
void Rewrite(const std::vector<Targets>& rows, BatchTargets* b) {
  b->Start();
  for (const Targets& t : rows) b->Append(t);
}

// --- mosaic -------------------------------------------------------------------------

class MosaicStage : public BatchStage {
 public:
  explicit MosaicStage(detection::MosaicOptions o) : o_(o) {}

  absl::Status Process(BatchContext& ctx) const override {
    Batch& batch = *ctx.batch;
    const int64_t n = ctx.rows();
    if (n == 0) return absl::OkStatus();
    const Geometry g = GeometryOf(batch.tensors.front());
    if (absl::Status s = CheckTargets("mosaic", batch.targets, g, n, false); !s.ok()) return s;
    SampleRng rng = ctx.Rng();
    std::vector<detection::MosaicDraw> draws;
    bool any = false;
    for (int64_t r = 0; r < n; ++r) {
      draws.push_back(detection::DrawMosaic(o_, r, n, g.height, g.width, rng));
      any |= draws.back().applied;
    }
    if (!any) return absl::OkStatus();
    // The sources: the batch's images and targets as collated.
    std::vector<uint8_t> images(static_cast<size_t>(n) * g.bytes);
    std::memcpy(images.data(), ctx.data[0], images.size());
    std::vector<Targets> sources(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) RowTargets(batch.targets, r, g, &sources[r]);
    std::vector<BatchImage> source_images;
    for (int64_t r = 0; r < n; ++r) source_images.push_back(ImageAt(g, images.data(), r));
    std::vector<Targets> out(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      const detection::MosaicDraw& d = draws[static_cast<size_t>(r)];
      if (!d.applied) {
        out[r] = sources[r];
        continue;
      }
      std::array<const BatchImage*, 4> tiles;
      std::array<const Targets*, 4> tile_targets;
      for (int i = 0; i < 4; ++i) {
        tiles[i] = &source_images[static_cast<size_t>(d.tiles[i])];
        tile_targets[i] = &sources[static_cast<size_t>(d.tiles[i])];
      }
      out[r].image_id = sources[r].image_id;
      detection::Mosaic(d, o_, tiles, tile_targets, ImageAt(g, ctx.data[0], r), &out[r]);
    }
    Rewrite(out, &batch.targets);
    return absl::OkStatus();
  }

 private:
  const detection::MosaicOptions o_;
};

absl::StatusOr<std::unique_ptr<BatchStage>> MakeMosaic(const StageArgs& args,
                                                      BatchStageEnv& env) {
  detection::MosaicOptions o;
  o.p = args.GetFloat("p");
  o.center_lo = args.GetFloat("center_min");
  o.center_hi = args.GetFloat("center_max");
  o.fill = static_cast<float>(args.GetFloat("fill"));
  o.min_size = args.GetFloat("min_size");
  o.area_ratio = args.GetFloat("area_ratio");
  o.max_aspect_ratio = args.GetFloat("max_aspect_ratio");
  if (!(o.p >= 0 && o.p <= 1)) return OptionError("mosaic", "p", "in [0, 1]", o.p);
  if (!(o.center_lo >= 0 && o.center_lo <= 2)) {
    return OptionError("mosaic", "center_min", "in [0, 2] (× the side)", o.center_lo);
  }
  if (!(o.center_hi >= o.center_lo && o.center_hi <= 2)) {
    return OptionError("mosaic", "center_max",
                       absl::StrCat("in [center_min, 2] = [", o.center_lo, ", 2]"),
                       o.center_hi);
  }
  if (!(o.min_size >= 0)) return OptionError("mosaic", "min_size", ">= 0 (pixels)", o.min_size);
  if (!(o.area_ratio >= 0 && o.area_ratio < 1)) {
    return OptionError("mosaic", "area_ratio", "in [0, 1)", o.area_ratio);
  }
  if (!(o.max_aspect_ratio > 1)) {
    return OptionError("mosaic", "max_aspect_ratio", "> 1", o.max_aspect_ratio);
  }
  if (absl::Status s = CheckBatch("mosaic", env, false); !s.ok()) return s;
  const OutputSpec& out = env.outputs[0];
  // A uint8 image takes the fill in levels 0..255 (YOLOv5's 114); a normalized float one
  // in its own units, where 0 is the normalize mean (about 114 in ImageNet's).
  if (!out.is_float && !(o.fill >= 0 && o.fill <= 255)) {
    return OptionError("mosaic", "fill", "in [0, 255] on a uint8 image", o.fill);
  }
  if (out.is_float && !args.IsSet("fill")) o.fill = 0.0f;
  // The copy of the batch it reads: images, and targets up to max instances a row.
  const int64_t plane = env.targets.instance_masks
                            ? out.sample_shape[out.is_float ? 1 : 0] *
                                  out.sample_shape[out.is_float ? 2 : 1]
                            : 0;
  const int64_t rows = std::max(env.batch_size, 1);
  const int64_t bytes = rows * static_cast<int64_t>(out.sample_bytes) +
                        rows * 5 * env.targets.max_instances * (plane + 32);
  env.memory.push_back(
      {"mosaic sources", "mosaic_sources", bytes,
       absl::StrCat("batch ", rows, " × (an image of ", out.sample_bytes, " B + 5 × max ",
                    env.targets.max_instances, " instances of ", plane, " B masks: the copy read "
                    "and the four tiles' output)"),
       {"batch_size"}});
  return std::unique_ptr<BatchStage>(new MosaicStage(o));
}

// --- copy_paste -----------------------------------------------------------------------

class CopyPasteStage : public BatchStage {
 public:
  explicit CopyPasteStage(detection::CopyPasteOptions o) : o_(o) {}

  absl::Status Process(BatchContext& ctx) const override {
    Batch& batch = *ctx.batch;
    const int64_t n = ctx.rows();
    if (n == 0) return absl::OkStatus();
    const Geometry g = GeometryOf(batch.tensors.front());
    if (absl::Status s = CheckTargets("copy_paste", batch.targets, g, n, true); !s.ok()) {
      return s;
    }
    std::vector<Targets> rows(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) RowTargets(batch.targets, r, g, &rows[r]);
    // Row r pastes from row r - 1 (SimpleCopyPaste's rolled list): draws in row order.
    SampleRng rng = ctx.Rng();
    std::vector<std::vector<int64_t>> selections(static_cast<size_t>(n));
    bool any = false;
    for (int64_t r = 0; r < n; ++r) {
      if (!rng.Bernoulli(o_.p)) continue;
      selections[r] = detection::DrawSelection(rows[(r + n - 1) % n].size(), rng);
      any |= !selections[r].empty();
    }
    if (!any) return absl::OkStatus();
    // Rows go last to first, so that row r - 1 is still as collated when row r reads it;
    // row 0 reads row n - 1's copy.
    std::vector<uint8_t> last(g.bytes);
    std::memcpy(last.data(), ImageAt(g, ctx.data[0], n - 1).data, g.bytes);
    const Targets last_targets = rows[static_cast<size_t>(n - 1)];
    const BatchImage last_image{last.data(), g.height, g.width, g.channels, g.float_chw};
    std::vector<uint8_t> alpha;
    for (int64_t r = n - 1; r >= 0; --r) {
      const bool first = r == 0;
      detection::CopyPaste(selections[r], o_.blending,
                           first ? last_image : ImageAt(g, ctx.data[0], r - 1),
                           first ? last_targets : rows[r - 1], ImageAt(g, ctx.data[0], r),
                           &rows[r], &alpha);
    }
    Rewrite(rows, &batch.targets);
    return absl::OkStatus();
  }

 private:
  const detection::CopyPasteOptions o_;
};

absl::StatusOr<std::unique_ptr<BatchStage>> MakeCopyPaste(const StageArgs& args,
                                                         BatchStageEnv& env) {
  detection::CopyPasteOptions o;
  o.p = args.GetFloat("p");
  o.blending = args.GetBool("blending");
  if (!(o.p >= 0 && o.p <= 1)) return OptionError("copy_paste", "p", "in [0, 1]", o.p);
  if (absl::Status s = CheckBatch("copy_paste", env, true); !s.ok()) return s;
  const OutputSpec& out = env.outputs[0];
  const int64_t plane = out.sample_shape[out.is_float ? 1 : 0] *
                        out.sample_shape[out.is_float ? 2 : 1];
  const int64_t rows = std::max(env.batch_size, 1);
  // The batch's targets copied out (a pasted row holds up to twice its instances), one
  // image and the paste mask.
  const int64_t bytes = rows * 2 * env.targets.max_instances * (plane + 32) +
                        static_cast<int64_t>(out.sample_bytes) + plane;
  env.memory.push_back(
      {"copy_paste rows", "copy_paste_rows", bytes,
       absl::StrCat("batch ", rows, " × 2 × max ", env.targets.max_instances,
                    " instances of ", plane, " B masks, + one image and its paste mask"),
       {"batch_size"}});
  return std::unique_ptr<BatchStage>(new CopyPasteStage(o));
}

OptionSchema Float(const std::string& name, const std::string& value, const std::string& doc) {
  return OptionSchema{name, OptionType::kFloat, value, doc, {}};
}

}  // namespace

void RegisterMultiSampleBatchStages(StageRegistry& registry) {
  StageSchema mosaic;
  mosaic.type = "mosaic";
  mosaic.doc =
      "YOLOv5's mosaic: a row becomes four rows of its batch (itself and three drawn, "
      "shuffled) around a random centre on a 2H × 2W canvas, cropped to its H × W centre; "
      "boxes and masks move and clip with their images, then box_candidates filters them";
  mosaic.options = {
      Float("p", "1", "probability a row becomes a mosaic"),
      Float("center_min", "0.5", "the centre is drawn in [center_min, center_max) × the side"),
      Float("center_max", "1.5", "(YOLOv5: 0.5 and 1.5, the -s/2 mosaic border)"),
      Float("fill", "114", "where no image lands: uint8 levels (114), a float image's units "
                           "(default 0, the normalize mean)"),
      Float("min_size", "2", "a kept box is wider and taller than this (pixels; wh_thr)"),
      Float("area_ratio", "0.1",
            "a kept box keeps more than this share of its area (area_thr; YOLOv5 0.01 "
            "with segments)"),
      Float("max_aspect_ratio", "100", "a kept box's max(w/h, h/w) is below this (ar_thr)"),
  };
  (void)registry.RegisterBatch(std::move(mosaic), MakeMosaic);

  StageSchema paste;
  paste.type = "copy_paste";
  paste.doc =
      "torchvision's SimpleCopyPaste: row i gets a random subset of row i-1's instances "
      "(masks, pixels), its own masks occluded, boxes from masks, emptied ones dropped";
  paste.options = {
      Float("p", "1", "probability a row gets a paste (torchvision: always)"),
      OptionSchema{"blending", OptionType::kBool, "true",
                   "torchvision's blending: the paste mask's 5x5 gaussian cast to bool (a "
                   "5x5 dilation)",
                   {}},
  };
  (void)registry.RegisterBatch(std::move(paste), MakeCopyPaste);
}

}  // namespace flowloader
