// transforms_stage.cc: the `transforms` stage type: one view's op list (torchvision's
// Compose, stages/augment/ops/view_program.h) per batch tensor it writes.
#include <algorithm>
#include <cmath>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/core/sample_error.h"
#include "graph/internal/sample_buffers.h"
#include "graph/internal/view_planning.h"
#include "graph/stage.h"
#include "stages/augment/ops/view_program.h"
#include "stages/collate/pad_images.h"
#include "stages/decode/coarser.h"
#include "stages/detection/geometry.h"

namespace flowloader {
namespace {

// The list `augment`'s train mode stands for: the default of `ops`.
constexpr char kDefaultOps[] =
    "random_resized_crop(size=224); random_horizontal_flip(); normalize()";

// CostRows maps each op position of `program` to its row in the stage's OpCosts(): the
// head's ops share row 0 (one pass, one counter); the ops after it get a row each.
std::vector<int32_t> CostRows(const augment::ViewProgram& program) {
  std::vector<int32_t> rows(program.size(), 0);
  int32_t row = 0;
  for (size_t i = program.cost_span(0); i < program.size(); ++i) rows[i] = ++row;
  return rows;
}

// TraceOps records each op the program ran as a span inside the stage's span.
class TraceOps : public augment::OpObserver {
 public:
  TraceOps(const SampleContext& sample, const std::vector<int32_t>& rows)
      : sample_(sample), rows_(rows) {}
  void OpRan(size_t op, int64_t start_nanos, int64_t duration_nanos) const override {
    sample_.trace->Record(sample_.trace_stage, start_nanos, duration_nanos, sample_.index,
                          rows_[op]);
  }

 private:
  const SampleContext& sample_;
  const std::vector<int32_t>& rows_;
};

// CoarserDecodes hands each view the decode it needs: the sample's own, or, where the
// decode serves several views and this one needs a half or a quarter of its pixels per
// side, a halved copy (stages/decode/coarser.h), made once per sample and level.
class CoarserDecodes {
 public:
  explicit CoarserDecodes(const SampleContext& sample)
      : decoded_(sample.decoded),
        shared_(std::count(sample.planned.begin(), sample.planned.end(), 1) > 1) {}

  const decode::DecodedImage& For(const augment::CropPlan* plan) {
    if (plan == nullptr || !shared_) return decoded_;
    const int halvings = decode::HalvingsFor(decoded_, plan->decode_request);
    for (int level = built_; level < halvings; ++level) {
      decode::HalveDecoded(level == 0 ? decoded_ : Levels()[level - 1], &Levels()[level]);
      built_ = level + 1;
    }
    return halvings == 0 ? decoded_ : Levels()[halvings - 1];
  }

 private:
  // Per thread, reused across samples (Process runs concurrently).
  static std::array<decode::DecodedImage, decode::kMaxHalvings>& Levels() {
    thread_local std::array<decode::DecodedImage, decode::kMaxHalvings> levels;
    return levels;
  }

  const decode::DecodedImage& decoded_;
  const bool shared_;  // Decoded once for several views' crops (their union).
  int built_ = 0;      // Levels()[0, built_) hold this sample's halvings.
};

// kPixelOnlyOps move no pixel: after the head, a list whose sample carries targets may
// hold only these (colour, blur, erasing and normalize leave boxes and masks as they are).
constexpr const char* kPixelOnlyOps[] = {
    "normalize",        "color_jitter",       "grayscale",        "random_grayscale",
    "gaussian_blur",    "pil_gaussian_blur",  "random_adjust_sharpness",
    "random_autocontrast", "random_equalize", "random_invert",    "random_posterize",
    "random_solarize",  "random_erasing"};

// IsPixelOnly says op `name` moves no pixel (kPixelOnlyOps).
bool IsPixelOnly(const std::string& name) {
  for (const char* op : kPixelOnlyOps) {
    if (name == op) return true;
  }
  return false;
}

// RefusedSubOp is `op`, or the first of its sub-ops (compose, random_choice,
// random_order, nested), that `moves` refuses; nullptr when all pass. An op with sub-ops
// moves what its sub-ops move (Op::SubOps).
template <typename Moves>
const augment::Op* RefusedSubOp(const augment::Op& op, const Moves& moves) {
  const std::vector<const augment::Op*> subs = op.SubOps();
  if (subs.empty()) return moves(op) ? nullptr : &op;
  for (const augment::Op* sub : subs) {
    if (const augment::Op* refused = RefusedSubOp(*sub, moves); refused != nullptr) {
      return refused;
    }
  }
  return nullptr;
}

// OpAndSubOp names an op and, when it is one of its sub-ops that is refused, that one:
// "random_choice holding random_perspective".
std::string OpAndSubOp(const augment::Op& op, const augment::Op& refused) {
  if (&op == &refused) return op.name();
  return absl::StrCat(op.name(), " holding ", refused.name());
}

// FirstOpAfterHead is the first op the head does not cover: 0 without a head (the
// head's span, cost_span(0), is 1 then, which let op 1 past the checks below).
size_t FirstOpAfterHead(const augment::ViewProgram& program) {
  return program.head() != nullptr ? program.cost_span(0) : 0;
}

// CheckLabelMapOps refuses, for a sample carrying a semantic label map (`masks` without
// boxes), a list with an op that moves pixels but cannot move the map (MovesLabels).
absl::Status CheckLabelMapOps(const augment::ViewProgram& program, size_t views) {
  if (views != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transforms: the sample carries a label map, one per sample: bind the stage to one "
        "output, not ", views));
  }
  const auto moves = [](const augment::Op& op) {
    return IsPixelOnly(op.name()) || op.MovesLabels() ||
           op.Targets() == augment::Op::TargetEffect::kKeeps;
  };
  for (size_t i = FirstOpAfterHead(program); i < program.size(); ++i) {
    const augment::Op* refused = RefusedSubOp(program.op(i), moves);
    if (refused == nullptr) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "transforms: op ", i + 1, " (", OpAndSubOp(program.op(i), *refused),
        ") cannot move the label map "
        "(masks) the sample carries: label maps move through random_resized_crop, resize, "
        "center_crop, random_crop, pad, the flips, random_affine and random_rotation; "
        "remove it"));
  }
  return absl::OkStatus();
}

// CheckTargetOps refuses, when the sample carries targets (`carried`), a list with an op
// that would leave the boxes behind: every op after the head must either keep them
// (colour ops, kPixelOnlyOps or TargetEffect::kKeeps) or move them (kMoves: the flips,
// crops, resizes, pad and the detection ops). The head (random_resized_crop, resize +
// center_crop, with an absorbed horizontal flip) moves them through its plan.
absl::Status CheckTargetOps(const augment::ViewProgram& program,
                            const std::vector<std::string>& carried, size_t views) {
  if (carried.empty()) return absl::OkStatus();
  if (std::find(carried.begin(), carried.end(), kBoxesField) == carried.end()) {
    return CheckLabelMapOps(program, views);
  }
  if (views != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transforms: the sample carries ", carried.front(), ", one set per sample: bind the "
        "stage to one output, not ", views));
  }
  const auto moves = [](const augment::Op& op) {
    return IsPixelOnly(op.name()) || op.Targets() != augment::Op::TargetEffect::kRefuses;
  };
  for (size_t i = FirstOpAfterHead(program); i < program.size(); ++i) {
    if (const augment::Op* refused = RefusedSubOp(program.op(i), moves); refused != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "transforms: op ", i + 1, " (", OpAndSubOp(program.op(i), *refused),
          ") cannot move the ",
          carried.front(), " the sample carries: use the ops that move targets (flips, "
          "crops, resize, pad, random_affine, random_rotation, random_zoom_out, "
          "random_iou_crop, scale_jitter, random_shortest_size, fixed_size_crop) or colour "
          "ops, or remove it"));
    }
  }
  return absl::OkStatus();
}

// MoveTargets applies the head's planned geometry (CropPlan) to the sample's targets: the
// train head crops the region and resizes it to the output (v2's resized_crop), the eval
// head resizes the image and crops the centre (v2's resize + center_crop); then the
// absorbed flip. The image must be the size the annotations give.
absl::Status MoveTargets(const augment::CropPlan& plan, const decode::ImageInfo& info,
                         int out_width, int out_height, detection::Targets* targets) {
  if (info.width != targets->canvas_width || info.height != targets->canvas_height) {
    return SampleError(absl::StatusCode::kInvalidArgument, reason::kSizeMismatch,
                       absl::StrCat("the image is ", info.width, "×", info.height,
                                    ", its annotations say ", targets->canvas_width, "×",
                                    targets->canvas_height));
  }
  if (plan.resized_width > 0) {
    detection::Apply(detection::Geometry::Resize(plan.resized_height, plan.resized_width),
                     targets);
    detection::Apply(
        detection::Geometry::Crop(plan.crop_top, plan.crop_left, out_height, out_width),
        targets);
  } else {
    detection::Apply(detection::Geometry::ResizedCrop(
                         static_cast<int>(std::lround(plan.region.y)),
                         static_cast<int>(std::lround(plan.region.x)),
                         static_cast<int>(std::lround(plan.region.h)),
                         static_cast<int>(std::lround(plan.region.w)), out_height, out_width),
                     targets);
  }
  if (plan.flip) detection::Apply(detection::Geometry::HorizontalFlip(), targets);
  return absl::OkStatus();
}

// TransformsStage runs its program once per view it is bound to; view v's head draws from
// ViewStream(v), as augment's view v does, so the same list gives the same pixels.
class TransformsStage : public SampleStage {
 public:
  TransformsStage(std::shared_ptr<const augment::ViewProgram> program, std::vector<int> views,
                  bool frees_image, bool moves_targets)
      : program_(std::move(program)),
        views_(std::move(views)),
        frees_image_(frees_image),
        moves_targets_(moves_targets),
        rows_(CostRows(*program_)) {}

  absl::Status Process(SampleContext& sample) const override {
    absl::Status status;
    const augment::ViewProgram::SampleKey key{sample.seed, static_cast<uint64_t>(sample.epoch),
                                              sample.rng_key};  // Index, or the copy.
    const TraceOps trace_ops(sample, rows_);
    const augment::OpObserver* observer = sample.trace != nullptr ? &trace_ops : nullptr;
    CoarserDecodes coarser(sample);
    for (int view : views_) {
      const augment::CropPlan* plan = sample.planned[view] ? &sample.plans[view] : nullptr;
      if (plan == nullptr && program_->head() != nullptr) {
        // Decoded without a plan (a user stage decoded it): the head plans on all of it.
        sample.decoded.covered =
            RectF{0, 0, static_cast<double>(sample.decoded.image.width),
                  static_cast<double>(sample.decoded.image.height)};
      }
      if (moves_targets_ && sample.targets.has_semantic) {
        status = RunWithLabelMap(sample, coarser.For(plan), plan, key, view, observer);
        if (!status.ok()) break;
        continue;
      }
      if (moves_targets_) {
        // Through the head first (its geometry is the plan's); the ops after it move
        // the targets as they run.
        status = HeadTargets(plan, sample);
        if (!status.ok()) break;
      }
      augment::OpSize made;
      status = program_->Run(coarser.For(plan), plan, key, ViewStream(view),
                             sample.outputs[view].data, observer,
                             moves_targets_ ? &sample.targets : nullptr, nullptr, &made);
      if (!status.ok()) break;
      sample.outputs[view].height = made.height;  // A padded batch's row (collate).
      sample.outputs[view].width = made.width;
    }
    if (frees_image_) graph_internal::GiveBack(sample.decoded.image.pixels);
    return status;
  }
  size_t BytesProduced(const SampleContext& sample) const override {
    size_t bytes = 0;
    for (int view : views_) bytes += sample.outputs[view].bytes;
    return bytes;
  }

  // OpCosts: one row per op, named by the op, the head's fused ops as one row
  // ("random_resized_crop+random_horizontal_flip+normalize"), a repeated name numbered
  // from its second use ("color_jitter#2"). The views of a stage bound to several share
  // one program, so each row sums that op over all of them (they run the same list).
  std::vector<OpCostRow> OpCosts() const override {
    std::vector<OpCostRow> rows;
    std::map<std::string, int> uses;
    for (size_t i = 0; i < program_->size(); i += program_->cost_span(i)) {
      std::string name = program_->op_name(i);
      for (size_t j = 1; j < program_->cost_span(i); ++j) {
        absl::StrAppend(&name, "+", program_->op_name(i + j));
      }
      if (const int n = ++uses[name]; n > 1) absl::StrAppend(&name, "#", n);
      // Aliasing pointers: they own the program, so the counters outlive the stage.
      const augment::OpCost& cost = program_->cost(i);
      rows.push_back({std::move(name),
                      std::shared_ptr<const std::atomic<int64_t>>(program_, &cost.busy_ns),
                      std::shared_ptr<const std::atomic<int64_t>>(program_, &cost.runs)});
    }
    return rows;
  }

 private:
  // RunWithLabelMap runs the list with the sample's label map riding along (the head and
  // every geometric op move it, augment::LabelPlane); the map must be the image's size.
  absl::Status RunWithLabelMap(SampleContext& sample, const decode::DecodedImage& decoded,
                               const augment::CropPlan* plan,
                               const augment::ViewProgram::SampleKey& key, int view,
                               const augment::OpObserver* observer) const {
    detection::Targets& t = sample.targets;
    if (sample.info.width != t.canvas_width || sample.info.height != t.canvas_height) {
      return SampleError(absl::StatusCode::kInvalidArgument, reason::kSizeMismatch,
                         absl::StrCat("the image is ", sample.info.width, "×",
                                      sample.info.height, ", its label map ", t.canvas_width,
                                      "×", t.canvas_height));
    }
    // Per thread, reused across samples: the map's bytes are swapped in and out.
    thread_local Image labels, spare;
    labels.width = t.canvas_width;
    labels.height = t.canvas_height;
    labels.channels = 1;
    labels.pixels.swap(t.semantic);
    augment::LabelPlane plane{&labels, &spare, t.ignore_index};
    absl::Status status = program_->Run(decoded, plan, key, ViewStream(view),
                                        sample.outputs[view].data, observer,
                                        /*targets=*/nullptr, &plane);
    t.semantic.swap(labels.pixels);
    t.canvas_width = labels.width;
    t.canvas_height = labels.height;
    // The thread keeps its two planes for the next sample up to 16 MiB each: larger ones,
    // made for one large map (a pad or resize of a 16 Mpx map), go back at once instead
    // of staying beside every later sample, outside the plan and the worker's share.
    constexpr size_t kKeptPlaneBytes = size_t{16} << 20;
    for (Image* plane : {&labels, &spare}) {
      if (plane->pixels.capacity() > kKeptPlaneBytes) {
        decltype(plane->pixels)().swap(plane->pixels);
      }
    }
    if (!status.ok()) return status;
    const std::array<int64_t, 3> shape = program_->shape();
    const bool chw = program_->is_float();
    if (t.canvas_width != (chw ? shape[2] : shape[1]) ||
        t.canvas_height != (chw ? shape[1] : shape[0])) {
      return absl::InternalError(absl::StrCat("transforms: the label map came out ",
                                              t.canvas_width, "×", t.canvas_height,
                                              ", the image ", chw ? shape[2] : shape[1], "×",
                                              chw ? shape[1] : shape[0]));
    }
    return absl::OkStatus();
  }

  // HeadTargets moves the targets through the list's head (its plan), or, for a list
  // without a head, checks that the whole decoded image is the annotations' canvas.
  absl::Status HeadTargets(const augment::CropPlan* plan, SampleContext& sample) const {
    detection::Targets* targets = &sample.targets;
    if (program_->head() == nullptr) {
      const Image& image = sample.decoded.image;
      if (image.width != targets->canvas_width || image.height != targets->canvas_height) {
        return SampleError(absl::StatusCode::kInvalidArgument, reason::kSizeMismatch,
                           absl::StrCat("the image is ", image.width, "×", image.height,
                                        ", its annotations say ", targets->canvas_width, "×",
                                        targets->canvas_height));
      }
      return absl::OkStatus();
    }
    if (plan == nullptr) {
      return absl::FailedPreconditionError(
          "transforms: the image was decoded without a planned crop, so its targets "
          "cannot follow it: decode it with the built-in decode stage");
    }
    const int n = program_->head()->options().image_size;  // The head writes n × n.
    return MoveTargets(*plan, sample.info, n, n, targets);
  }

  std::shared_ptr<const augment::ViewProgram> program_;
  const std::vector<int> views_;
  const bool frees_image_;
  const bool moves_targets_;  // The sample carries boxes (or masks) here.
  const std::vector<int32_t> rows_;  // CostRows(*program_).
};

// SizeKnob is the argument that sets the size of what `program` writes, for the memory
// plan's refusals: the last op of a fixed output size ("five_crop size", "resize size"),
// else image_size.
std::string SizeKnob(const augment::ViewProgram& program) {
  for (size_t i = program.size(); i-- > 0;) {
    if (program.op(i).OutputSize(augment::OpSize{}).Known()) {
      return absl::StrCat(program.op_name(i), " size");
    }
  }
  return "image_size";
}

// HeadKnob is the argument that sets the head's planned crop (the decode scratch's
// knob): the head's first op's size ("random_resized_crop size"), or the crop a resize
// head absorbed ("center_crop size"), which sets what it writes.
std::string HeadKnob(const augment::ViewProgram& program) {
  if (program.head() == nullptr || program.size() == 0) return "image_size";
  const size_t span = program.cost_span(0);
  for (size_t i = std::min(span, program.size()); i-- > 0;) {
    if (program.op(i).OutputSize(augment::OpSize{}).Known()) {
      return absl::StrCat(program.op_name(i), " size");
    }
  }
  return absl::StrCat(program.op_name(0), " size");
}

// SlotSpec is the batch tensor a sample of `program` writes: its shape; for a padded
// batch (size_divisibility >= 0) the list's largest image (its bound) with each side
// rounded up to the divisibility, so that the padded batch fits the slots it is laid out
// over (stages/collate/pad_images.h).
OutputSpec SlotSpec(const augment::ViewProgram& program, int size_divisibility) {
  std::array<int64_t, 3> shape = program.shape();
  size_t bytes = program.output_bytes();
  if (size_divisibility >= 0) {
    const int h = program.is_float() ? 1 : 0;  // [C, H, W] or [H, W, C].
    for (int side : {h, h + 1}) shape[side] = PaddedSide({shape[side]}, size_divisibility);
    bytes = static_cast<size_t>(shape[0] * shape[1] * shape[2]) *
            (program.is_float() ? sizeof(float) : 1);
  }
  // A list with five_crop / ten_crop writes its crops stacked: [crops, C, H, W] (never
  // padded: CreateTransforms refuses size_divisibility with them).
  std::vector<int64_t> sample_shape(shape.begin(), shape.end());
  if (program.crops() > 1) sample_shape.insert(sample_shape.begin(), program.crops());
  OutputSpec spec{std::move(sample_shape), program.is_float(), bytes};
  spec.size_knob = SizeKnob(program);
  return spec;
}

StageSchema TransformsSchema() {
  return StageSchema{
      "transforms",
      "one view's op list, torchvision's Compose (`ops:`, run in order; `flowloader stages` "
      "lists the ops): the crop-and-resize at its head is planned before decoding, "
      "normalize writes the float tensor (without it the view is uint8 [H, W, 3]). "
      "`outputs: [a, b]` writes an independent random view into each",
      {{"ops", OptionType::kString, kDefaultOps,
        "the op list: `name(arg=value, ...)` separated by ';' (a spec writes it as an `ops:` "
        "list)"}},
      0,
      {{kImageField, FieldKind::kImage}},
      {{kOutputField, FieldKind::kTensor}},
      {kImageField},
      /*output_repeats=*/true,
      /*help_outputs=*/{"view1"}};
}

absl::StatusOr<std::unique_ptr<SampleStage>> CreateTransforms(const StageArgs& args,
                                                              StageEnv& env) {
  absl::StatusOr<std::vector<augment::OpText>> ops =
      augment::ParseOpListText(args.GetString("ops"));
  if (!ops.ok()) return absl::InvalidArgumentError(absl::StrCat("transforms: ", ops.status().message()));
  // A padded batch (size_divisibility) takes lists whose size depends on the image, up
  // to their bound.
  const bool padded = env.size_divisibility >= 0;
  absl::StatusOr<std::unique_ptr<augment::ViewProgram>> made =
      augment::ViewProgram::Create(*ops, nullptr, padded);
  if (!made.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("transforms: ", made.status().message()));
  }
  (*made)->set_worker_memory(env.worker_memory);
  // The annotations stage plans two copies of a sample's instance masks at the most
  // instances and the largest image (graph/detection_stages.cc): ops check the rest.
  if (env.dataset != nullptr && env.dataset->annotations() != nullptr) {
    const detection::CocoDataset& coco = *env.dataset->annotations();
    (*made)->set_planned_mask_bytes(coco.MaxInstances() * 2 * coco.MaxPlaneBytes());
  }
  std::shared_ptr<const augment::ViewProgram> program = std::move(*made);
  if (padded && program->crops() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transforms: size_divisibility ", env.size_divisibility, " pads images of different "
        "sizes, but the list's ", program->crops(), " crops are one size: remove "
        "size_divisibility"));
  }
  const OutputSpec spec = SlotSpec(*program, env.size_divisibility);
  std::vector<int> views =
      graph_internal::DeclareViews(program->head(), spec, env, HeadKnob(*program));
  if (absl::Status s = CheckTargetOps(*program, env.carried, views.size()); !s.ok()) return s;
  if (padded && std::find(env.carried.begin(), env.carried.end(), kBoxesField) ==
                    env.carried.end() && !env.carried.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transforms: size_divisibility ", env.size_divisibility, " pads images of different "
        "sizes, but the samples carry label maps (one [N, H, W] tensor per batch): end the "
        "op list with a fixed size and remove size_divisibility"));
  }
  if (program->scratch_bytes() > 0) {
    // Named by the op whose output is the largest image and its argument, so a refusal
    // says which op's size does not fit ("lower center_crop size or num_workers").
    const int64_t per_worker = static_cast<int64_t>(program->scratch_bytes());
    const std::string op_size =
        program->largest_op() >= 0
            ? absl::StrCat(program->op_name(static_cast<size_t>(program->largest_op())), " size")
            : "image_size";
    env.memory.push_back({"transforms scratch", "transforms_scratch",
                          per_worker * env.num_workers,
                          absl::StrCat("num_workers ", env.num_workers, " × ",
                                       FormatBytes(per_worker), " working pixels, two images "
                                       "of the largest an op makes (", op_size, ")"),
                          {op_size, "num_workers"}});
  }
  return std::unique_ptr<SampleStage>(
      new TransformsStage(std::move(program), std::move(views), graph_internal::MayFree(env, 0),
                          !env.carried.empty()));
}

}  // namespace

void RegisterTransformsStage(StageRegistry& registry) {
  (void)registry.Register(TransformsSchema(), CreateTransforms);
}

}  // namespace flowloader
