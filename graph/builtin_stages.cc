// builtin_stages.cc: the read, decode and augment stage types, adapting the stage
// libraries in stages/ to the SampleStage interface and declaring their options.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "graph/internal/sample_buffers.h"
#include "graph/internal/view_planning.h"
#include "graph/read_stage.h"
#include "graph/stage.h"
#include "stages/core/sample_error.h"
#include "stages/reader/file_reader.h"

namespace flowloader {
namespace {

using graph_internal::Borrow;
using graph_internal::GiveBack;

// UnionRequest is one decode request that serves every view: the bounding box of their
// regions, at the finest scale any of them needs (each view's region keeps at least its
// target's pixels), in YCbCr only when every view takes it.
decode::RegionRequest UnionRequest(const std::vector<augment::CropPlan>& plans) {
  const decode::RegionRequest& first = plans.front().decode_request;
  double x0 = first.region.x, y0 = first.region.y;
  double x1 = x0 + first.region.w, y1 = y0 + first.region.h;
  double per_x = 0, per_y = 0;  // Target pixels per original pixel, the finest asked.
  bool accept_ycc = true;
  for (const augment::CropPlan& plan : plans) {
    const decode::RegionRequest& r = plan.decode_request;
    x0 = std::min(x0, r.region.x);
    y0 = std::min(y0, r.region.y);
    x1 = std::max(x1, r.region.x + r.region.w);
    y1 = std::max(y1, r.region.y + r.region.h);
    if (r.region.w > 0) per_x = std::max(per_x, r.target_width / r.region.w);
    if (r.region.h > 0) per_y = std::max(per_y, r.target_height / r.region.h);
    accept_ycc = accept_ycc && r.accept_ycc;
  }
  decode::RegionRequest out;
  out.region = RectF{x0, y0, x1 - x0, y1 - y0};
  out.target_width = static_cast<int>(std::ceil(out.region.w * per_x));
  out.target_height = static_cast<int>(std::ceil(out.region.h * per_y));
  out.accept_ycc = accept_ycc;
  return out;
}


// kKeptFileBytes is the largest file-bytes buffer a decode thread keeps as its spare once
// the sample is decoded: a larger one (a 24 MB photo's) is freed, not kept resident beside
// the transforms and every later sample (spares of decoded pixels are kept up to
// kKeptSpareBytes, 64 MiB). Counted in the memory plan once per worker, with the JPEG
// scan's copy (decode::kKeptScanBytes), so small: 1 MiB holds nearly all web photos.
constexpr size_t kKeptFileBytes = size_t{1} << 20;

// DecodeStage decodes once per sample. When augment branches read its image, it plans
// every branch's crop from the header first and decodes only what they need together.
class DecodeStage : public SampleStage {
 public:
  DecodeStage(std::unique_ptr<decode::Decoder> decoder, std::vector<ViewPlanner> planners,
              bool frees_bytes, std::shared_ptr<const WorkerMemory> worker_memory)
      : decoder_(std::move(decoder)),
        planners_(std::move(planners)),
        frees_bytes_(frees_bytes),
        worker_memory_(std::move(worker_memory)),
        whole_image_(std::any_of(planners_.begin(), planners_.end(),
                                 [](const ViewPlanner& p) { return p.planner == nullptr; })) {}

  absl::Status Process(SampleContext& sample) const override {
    absl::Status status = DecodeBytes(sample);
    // The file's bytes are not needed past decoding, unless a later stage reads them.
    if (frees_bytes_) GiveBack(sample.bytes, kKeptFileBytes);
    return status;
  }
  size_t BytesProduced(const SampleContext& sample) const override {
    return sample.decoded.image.pixels.size();
  }

 private:
  absl::Status DecodeBytes(SampleContext& sample) const {
    absl::StatusOr<decode::ImageInfo> info = decoder_->ReadInfo(sample.bytes);
    if (!info.ok()) return info.status();
    sample.info = *info;
    // Plan the crops from the header so only what they need is decoded. A reader
    // without a planner needs the whole image: then everything is decoded.
    for (const ViewPlanner& p : planners_) {
      if (p.planner == nullptr) continue;
      SampleRng rng = sample.Rng(ViewStream(p.view));
      sample.plans[p.view] = p.planner->Plan(info->width, info->height, rng);
      sample.planned[p.view] = 1;
    }
    if (!planners_.empty() && planners_.front().planner != nullptr) {
      sample.plan = sample.plans[planners_.front().view];
      sample.has_plan = true;
    }
    decode::RegionRequest request;
    if (whole_image_) {
      if (absl::Status s = CheckMemory(*info, nullptr, sample.bytes.size()); !s.ok()) {
        return s;
      }
      Borrow(sample.decoded.image.pixels);
      return decoder_->Decode(sample.bytes, *info, nullptr, &sample.decoded);
    }
    if (planners_.size() == 1) {
      request = sample.plan.decode_request;  // One view: exactly its request, as always.
    } else if (planners_.size() > 1) {
      request_scratch_.clear();
      for (const ViewPlanner& p : planners_) request_scratch_.push_back(sample.plans[p.view]);
      request = UnionRequest(request_scratch_);
    }
    if (absl::Status s = CheckMemory(*info, planners_.empty() ? nullptr : &request,
                                     sample.bytes.size());
        !s.ok()) {
      return s;
    }
    Borrow(sample.decoded.image.pixels);
    return decoder_->Decode(sample.bytes, *info, planners_.empty() ? nullptr : &request,
                            &sample.decoded);
  }

  // CheckMemory skips, as decode_memory, a sample whose decoded pixels (bounded from the
  // header: the whole image, or the planned box at its scale) would be more than a worker
  // may hold for one sample, before they are allocated.
  absl::Status CheckMemory(const decode::ImageInfo& info, const decode::RegionRequest* request,
                           size_t encoded_bytes) const {
    if (worker_memory_->bytes() <= 0) return absl::OkStatus();
    const decode::DecodedSize size = decoder_->OutputBound(info, request);
    // Beside the pixels, the encoded bytes and the JPEG scan's unstuffed copy of them
    // (about as large) are held while decoding.
    const int64_t need = size.bytes() + 2 * static_cast<int64_t>(encoded_bytes);
    if (need <= worker_memory_->bytes()) return absl::OkStatus();
    // The message names both parts of `need`, so that the sum adds up for the reader.
    const std::string parts =
        absl::StrCat(" (", FormatBytes(size.bytes()), " of pixels, and 2 × the ",
                     FormatBytes(static_cast<int64_t>(encoded_bytes)),
                     " encoded file: its bytes and the decoder's copy of them)");
    return worker_memory_->Check(
        need, reason::kDecodeMemory,
        request == nullptr
            ? absl::StrCat("decoding the whole ", info.width, "x", info.height, " image",
                           parts)
            : absl::StrCat("decoding ", size.width, "x", size.height, " pixels of a ",
                           info.width, "x", info.height, " image", parts));
  }

  std::unique_ptr<decode::Decoder> decoder_;
  const std::vector<ViewPlanner> planners_;
  const bool frees_bytes_;
  const std::shared_ptr<const WorkerMemory> worker_memory_;
  const bool whole_image_;  // A reader without a planner: decode everything.
  // Per thread (Process runs concurrently): the views' plans, without allocating.
  static thread_local std::vector<augment::CropPlan> request_scratch_;
};

thread_local std::vector<augment::CropPlan> DecodeStage::request_scratch_;

// FusedOpName is the torchvision ops the fused pass does, as the `op` label a transforms
// stage gives the same fused head: train random_resized_crop+random_horizontal_flip
// (+normalize for float_chw), eval resize+center_crop(+normalize).
std::string FusedOpName(const augment::TransformOptions& o) {
  std::string name = o.mode == augment::Mode::kTrain
                         ? "random_resized_crop+random_horizontal_flip"
                         : "resize+center_crop";
  if (o.layout == augment::Layout::kFloatCHW) name += "+normalize";
  return name;
}

// FusedCost is the fused pass's op row's counters (OpCostRow), summed over threads.
struct FusedCost {
  std::atomic<int64_t> busy_ns{0};
  std::atomic<int64_t> runs{0};
};

int64_t MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// AugmentStage writes one view per batch tensor it is bound to, each with its own
// random crop and flip (stream ViewStream(view)).
class AugmentStage : public SampleStage {
 public:
  AugmentStage(std::shared_ptr<const augment::Transform> transform, std::vector<int> views,
               bool frees_image)
      : transform_(std::move(transform)), views_(std::move(views)), frees_image_(frees_image),
        cost_(std::make_shared<FusedCost>()) {}

  absl::Status Process(SampleContext& sample) const override {
    absl::Status status;
    const int64_t start = MonotonicNanos();
    for (int view : views_) {
      status = ApplyView(sample, view);
      if (!status.ok()) break;
      cost_->runs.fetch_add(1, std::memory_order_relaxed);
    }
    cost_->busy_ns.fetch_add(MonotonicNanos() - start, std::memory_order_relaxed);
    if (frees_image_) GiveBack(sample.decoded.image.pixels);  // Pixels are in the batch now.
    return status;
  }

  // OpCosts: the fused pass as one op row, named by the ops it does, so that the per-op
  // metrics and panels answer for the default graph as for a transforms stage.
  std::vector<OpCostRow> OpCosts() const override {
    return {{FusedOpName(transform_->options()),
             std::shared_ptr<const std::atomic<int64_t>>(cost_, &cost_->busy_ns),
             std::shared_ptr<const std::atomic<int64_t>>(cost_, &cost_->runs)}};
  }
  size_t BytesProduced(const SampleContext& sample) const override {
    size_t bytes = 0;
    for (int view : views_) bytes += sample.outputs[view].bytes;
    return bytes;
  }

 private:
  absl::Status ApplyView(SampleContext& sample, int view) const {
    if (!sample.planned[view]) {
      // Decoded without a plan (a user stage decoded it): plan on the full image.
      SampleRng rng = sample.Rng(ViewStream(view));
      sample.decoded.covered = RectF{0, 0, static_cast<double>(sample.decoded.image.width),
                                     static_cast<double>(sample.decoded.image.height)};
      sample.plans[view] =
          transform_->Plan(sample.decoded.image.width, sample.decoded.image.height, rng);
      sample.planned[view] = 1;
    }
    return transform_->Apply(sample.decoded, sample.plans[view], sample.outputs[view].data);
  }

  std::shared_ptr<const augment::Transform> transform_;
  const std::vector<int> views_;
  const bool frees_image_;
  const std::shared_ptr<FusedCost> cost_;  // Shared with the op row's counters.
};

absl::StatusOr<std::array<float, 3>> ParseTriple(const std::string& option,
                                                 const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ',');
  std::array<float, 3> out{};
  if (parts.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("augment option ", option, " needs 3 comma-separated numbers, got '",
                     text, "'"));
  }
  for (int i = 0; i < 3; ++i) {
    if (!absl::SimpleAtof(parts[i], &out[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("augment option ", option, ": '", parts[i], "' is not a number"));
    }
  }
  return out;
}

// Int option bounds: an int field's range, and the largest image side (transform.h's).
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kMaxSide = 1 << 14;

// kSeekIndexBytesPerFile is what the seek index plans per file: 16 seek points of 12 B
// per MCU row, so about 12 B a pixel row at 4:2:0 (a 451×379 photo takes ~4.6 KB); 8 KiB
// covers files up to ~680 rows. Taller files are indexed while the budget lasts.
constexpr int64_t kSeekIndexBytesPerFile = 8 << 10;

// SeekIndexFiles is how many files decode may index: the dataset's samples (1 without a
// dataset, as in a stage built alone).
int64_t SeekIndexFiles(const StageEnv& env) {
  return env.dataset != nullptr ? std::max<int64_t>(env.dataset->size(), 1) : 1;
}

// DeclareDecodeMemory adds what a decode stage keeps to the pipeline's memory plan: the
// seek index cache at its budget, and per worker the decoded-pixel buffer each thread
// keeps (ThreadSpare). A region decode at DCT scale k/8 comes out at most twice the
// output's side (unless the crop is over 16 times larger), hence 2×2 output pixels × 3
// bytes a worker. With several views the decode covers the union of their crops at the
// finest scale: counted as each view's bound times the number of views (an estimate: the
// box between the crops is decoded too). Without a crop planner (full decodes) the size
// depends on the images, so nothing is counted for them. Each thread also keeps, between
// samples, the largest file-bytes buffer up to kKeptFileBytes and a JPEG's scan copy up
// to decode::kKeptScanBytes: counted at those bounds, once per worker.
void DeclareDecodeMemory(const decode::DecoderOptions& o, int64_t seek_index_mb,
                         const std::vector<ViewPlanner>& planners, StageEnv& env) {
  if (o.seek_index_bytes > 0) {
    const int64_t files = SeekIndexFiles(env);
    env.memory.push_back(
        {"seek index", "seek_index", o.seek_index_bytes,
         o.seek_index_bytes < (seek_index_mb << 20)
             ? absl::StrCat(files, " files × ", FormatBytes(kSeekIndexBytesPerFile),
                            ", within decode seek_index_mb ", seek_index_mb)
             : absl::StrCat("decode seek_index_mb ", seek_index_mb),
         {"seek_index_mb"}});
  }
  // What a codec may hold beyond the output (max_decode_mb), once per worker: bounded
  // per file from its header, so a worker never holds more.
  env.memory.push_back(
      {"codec memory", "decode_codec", int64_t{env.num_workers} * o.max_decode_bytes,
       absl::StrCat("num_workers ", env.num_workers, " × decode max_decode_mb ",
                    o.max_decode_bytes >> 20,
                    " (progressive JPEG coefficients, lossless WebP ARGB)"),
       {"max_decode_mb", "num_workers"}});
  const int64_t file_bytes = static_cast<int64_t>(kKeptFileBytes);
  const int64_t kept = file_bytes + decode::kKeptScanBytes;
  env.memory.push_back(
      {"decode buffers", "decode_kept", int64_t{env.num_workers} * kept,
       absl::StrCat("num_workers ", env.num_workers, " × ", FormatBytes(kept),
                    " kept by a thread (file bytes up to ", FormatBytes(file_bytes),
                    ", JPEG scan copy up to ", FormatBytes(decode::kKeptScanBytes), ")"),
       {"num_workers"}});
  if (planners.empty()) return;
  int64_t output_pixels = 0;
  // The knobs: num_workers, then the options that set the views' crop sizes (image_size,
  // or the op a list's head is: "random_resized_crop size").
  std::vector<std::string> knobs = {"num_workers"};
  for (const ViewPlanner& p : planners) {
    if (p.planner == nullptr) return;  // A whole-image decode: its size is the images'.
    const std::string knob = p.size_knob.empty() ? "image_size" : p.size_knob;
    if (std::find(knobs.begin(), knobs.end(), knob) == knobs.end()) knobs.push_back(knob);
    const std::array<int, 3> shape = p.planner->OutputShape();  // 3 channels.
    output_pixels += int64_t{shape[0]} * shape[1] * shape[2] / 3;
  }
  const int64_t views = static_cast<int64_t>(planners.size());
  const int64_t per_worker = 2 * 2 * output_pixels * 3 * views;
  env.memory.push_back({"decode scratch", "decode_scratch", per_worker * env.num_workers,
                        absl::StrCat("num_workers ", env.num_workers, " × ",
                                     FormatBytes(per_worker), " decoded pixels",
                                     views > 1 ? absl::StrCat(" (", views, " views)") : ""),
                        std::move(knobs)});
}

// PlannersFor are the crop planners of the branches reading decode's image `field`; a
// factory called outside a planned graph (no bound names) gets StageEnv::crop_planner
// as view 0.
std::vector<ViewPlanner> PlannersFor(const StageEnv& env) {
  const std::string field = env.outputs.empty() ? kImageField : env.outputs.front();
  auto it = env.view_planners.find(field);
  if (it != env.view_planners.end()) return it->second;
  if (env.outputs.empty() && env.crop_planner != nullptr) return {{env.crop_planner, 0}};
  return {};
}

StageSchema ReadSchema() {
  StageSchema schema{
      "read",
      "reads each sample's file, retrying transient I/O errors with backoff",
      {{"max_retries", OptionType::kInt, "3", "retries of a transient read error (EIO)", {},
        0, kIntMax},
       {"backoff_ms", OptionType::kFloat, "2", "wait before the first retry, doubled each time"},
       {"max_file_bytes", OptionType::kInt, "1073741824", "larger files are skipped unread"}},
      0,
      {{kPathField, FieldKind::kMetadata}},
      {{kBytesField, FieldKind::kBytes}}};
  schema.kind = StageKind::kStorage;
  return schema;
}

StageSchema DecodeSchema() {
  return StageSchema{
      "decode",
      "decodes JPEG (libjpeg-turbo; only the region the crop needs, DCT-scaled) and PNG to RGB "
      "(or, for augment, to YCbCr planes)",
      {{"max_pixels", OptionType::kInt, "178956970",
        "images with more pixels are refused before allocating (decompression bombs)"},
       {"fast_idct", OptionType::kBool, "false", "libjpeg's fast integer IDCT"},
       {"fancy_upsampling", OptionType::kBool, "true",
        "triangle-filtered chroma (as PIL); false = libjpeg-turbo's faster merged path"},
       {"dct_scaling", OptionType::kBool, "true",
        "decode JPEGs at k/8 scale when the crop is resized down anyway"},
       {"fast_huffman", OptionType::kBool, "true",
        "flowloader's own baseline-JPEG Huffman decoder (same pixels, faster); false = "
        "libjpeg-turbo's"},
       {"planar_ycc", OptionType::kBool, "true",
        "hand crops to augment as JPEG's own Y, Cb, Cr planes (chroma resized from its "
        "stored resolution, colour converted at the output size) where that is faster "
        "(AVX-512); false = always RGB"},
       {"max_decode_mb", OptionType::kInt, "8",
        "working memory one decode may hold beyond its output, read from the header (a "
        "progressive or multi-scan JPEG's coefficients, ~3 B a pixel at 4:2:0; a lossless "
        "WebP's ARGB image, 4 B a pixel); a file over it is skipped as decode_memory; "
        "counted per worker in the memory plan; >= 1"},
       {"seek_index_mb", OptionType::kInt, "256",
        "memory for per-file seek indexes, so later epochs start decoding near the crop "
        "(about 2.4 KB per ImageNet-sized file); 0 = off"}},
      0,
      {{kBytesField, FieldKind::kBytes}},
      {{kImageField, FieldKind::kImage}},
      {kBytesField}};
}

StageSchema AugmentSchema() {
  return StageSchema{
      "augment",
      "torchvision transforms in one pass into the batch slot: train = RandomResizedCrop + "
      "RandomHorizontalFlip + Normalize; eval = Resize + CenterCrop + Normalize. `outputs: "
      "[a, b]` writes an independent random view into each",
      {{"mode", OptionType::kString, augment::ModeName(augment::Mode::kTrain),
        absl::StrJoin(augment::ModeNames(), " or "), augment::ModeNames()},
       {"image_size", OptionType::kInt, "224", "output side in pixels", {}, 1, kMaxSide},
       {"resize_size", OptionType::kInt, "0",
        "eval: shorter side before the center crop; 0 = image_size*256/224", {}, 0, kMaxSide},
       {"scale_min", OptionType::kFloat, "0.08", "train: smallest crop area fraction"},
       {"scale_max", OptionType::kFloat, "1.0", "train: largest crop area fraction"},
       {"ratio_min", OptionType::kFloat, "0.75", "train: smallest crop aspect ratio"},
       {"ratio_max", OptionType::kFloat, "1.3333333333333333",
        "train: largest crop aspect ratio"},
       {"flip_p", OptionType::kFloat, "0.5", "train: horizontal flip probability"},
       {"mean", OptionType::kString, "0.485,0.456,0.406", "Normalize mean (RGB, 0..1 scale)"},
       {"std", OptionType::kString, "0.229,0.224,0.225", "Normalize std (RGB, 0..1 scale)"},
       {"layout", OptionType::kString, augment::LayoutName(augment::Layout::kFloatCHW),
        "float_chw (normalized float32 [3,H,W]) or uint8_hwc (raw [H,W,3])",
        augment::LayoutNames()}},
      0,
      {{kImageField, FieldKind::kImage}},
      {{kOutputField, FieldKind::kTensor}},
      {kImageField},
      /*output_repeats=*/true};
}

}  // namespace

namespace graph_internal {

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool MayFree(const StageEnv& env, size_t port) {
  if (env.inputs.empty()) return true;
  return port < env.inputs.size() && Contains(env.may_free, env.inputs[port]);
}

std::vector<int> DeclareViews(const augment::Transform* transform, const OutputSpec& spec,
                              StageEnv& env, const std::string& size_knob) {
  std::vector<int> views;
  const std::vector<std::string> names =
      env.outputs.empty() ? std::vector<std::string>{kOutputField} : env.outputs;
  for (const std::string& name : names) {
    int view = env.DeclareOutput(name, spec);
    if (view < 0) view = 0;  // Outside a planned graph (flowloader graph's shape query).
    views.push_back(view);
  }
  const std::string image = env.inputs.empty() ? kImageField : env.inputs.front();
  for (int view : views) env.view_planners[image].push_back({transform, view, size_knob});
  if (transform != nullptr) env.crop_planner = transform;
  return views;
}

}  // namespace graph_internal

void RegisterBuiltinStages(StageRegistry& registry) {
  (void)registry.Register(
      ReadSchema(),
      MakeReadStage);

  (void)registry.Register(
      DecodeSchema(),
      [](const StageArgs& args, StageEnv& env) -> absl::StatusOr<std::unique_ptr<SampleStage>> {
        decode::DecoderOptions o;
        o.max_pixels = args.GetInt("max_pixels");
        // Below 1 stays non-positive (Decoder::Create refuses it); huge is capped at 1 PiB.
        o.max_decode_bytes =
            std::min<int64_t>(args.GetInt("max_decode_mb"), int64_t{1} << 30) * (int64_t{1} << 20);
        o.fast_idct = args.GetBool("fast_idct");
        o.fancy_upsampling = args.GetBool("fancy_upsampling");
        o.dct_scaling = args.GetBool("dct_scaling");
        o.fast_huffman = args.GetBool("fast_huffman");
        o.planar_ycc = args.GetBool("planar_ycc");
        // Negative stays negative (Decoder::Create refuses it); huge is capped at 1 PiB.
        o.seek_index_bytes =
            std::min<int64_t>(args.GetInt("seek_index_mb"), int64_t{1} << 30) * (int64_t{1} << 20);
        // A dataset can only fill so much of it: the budget is what its files can use
        // (the cache never grows past it, so the plan stays an upper bound).
        if (o.seek_index_bytes > 0) {
          o.seek_index_bytes =
              std::min(o.seek_index_bytes, SeekIndexFiles(env) * kSeekIndexBytesPerFile);
        }
        absl::StatusOr<std::unique_ptr<decode::Decoder>> decoder = decode::Decoder::Create(o);
        if (!decoder.ok()) return decoder.status();
        std::vector<ViewPlanner> planners = PlannersFor(env);
        DeclareDecodeMemory(o, args.GetInt("seek_index_mb"), planners, env);
        return std::unique_ptr<SampleStage>(
            new DecodeStage(std::move(*decoder), std::move(planners),
                            graph_internal::MayFree(env, 0), env.worker_memory));
      });

  (void)registry.Register(
      AugmentSchema(),
      [](const StageArgs& args, StageEnv& env) -> absl::StatusOr<std::unique_ptr<SampleStage>> {
        augment::TransformOptions o;
        absl::StatusOr<augment::Mode> mode =
            augment::ParseMode(args.GetString("mode"), "augment mode");
        if (!mode.ok()) return mode.status();
        o.mode = *mode;
        o.image_size = static_cast<int>(args.GetInt("image_size"));
        o.resize_size = static_cast<int>(args.GetInt("resize_size"));
        o.scale_min = args.GetFloat("scale_min");
        o.scale_max = args.GetFloat("scale_max");
        o.ratio_min = args.GetFloat("ratio_min");
        o.ratio_max = args.GetFloat("ratio_max");
        o.flip_p = args.GetFloat("flip_p");
        absl::StatusOr<std::array<float, 3>> mean = ParseTriple("mean", args.GetString("mean"));
        if (!mean.ok()) return mean.status();
        absl::StatusOr<std::array<float, 3>> stddev = ParseTriple("std", args.GetString("std"));
        if (!stddev.ok()) return stddev.status();
        o.mean = *mean;
        o.std = *stddev;
        absl::StatusOr<augment::Layout> layout =
            augment::ParseLayout(args.GetString("layout"), "augment layout");
        if (!layout.ok()) return layout.status();
        o.layout = *layout;
        if (!env.carried.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "augment cannot move the ", env.carried.front(),
              " the sample carries (written by an earlier stage): use a transforms stage, "
              "whose ops move boxes and masks with the pixels"));
        }
        absl::StatusOr<std::unique_ptr<augment::Transform>> t = augment::Transform::Create(o);
        if (!t.ok()) return t.status();
        std::shared_ptr<const augment::Transform> transform = std::move(*t);
        const std::array<int, 3> shape = transform->OutputShape();
        const OutputSpec spec{{shape[0], shape[1], shape[2]},
                              o.layout == augment::Layout::kFloatCHW,
                              transform->OutputBytes()};
        std::vector<int> views = graph_internal::DeclareViews(transform.get(), spec, env);
        return std::unique_ptr<SampleStage>(
            new AugmentStage(std::move(transform), std::move(views), graph_internal::MayFree(env, 0)));
      });
  RegisterTransformsStage(registry);
  RegisterDetectionStages(registry);
  RegisterSegmentationStages(registry);
}

}  // namespace flowloader
