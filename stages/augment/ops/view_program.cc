// view_program.cc: parsing a list's text, checking it, and running it per sample.
#include "stages/augment/ops/view_program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "stages/augment/ops/internal/geometry_chain.h"
#include "stages/augment/ops/internal/multi_crop.h"
#include "stages/augment/ops/internal/op_memory.h"
#include "stages/augment/ops/internal/op_place.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/core/memory_plan.h"
#include "stages/core/sample_error.h"

namespace flowloader::augment {

// Thread-local working images of the pixel passes: capacity kept across samples.
struct WorkingImages {
  Image rgb;
  Image spare;
  Image crops_source;  // What five_crop / ten_crop crop from, kept across the crops.
};

namespace {

// SplitTopLevel splits `text` at `sep` outside brackets and parentheses.
std::vector<std::string> SplitTopLevel(absl::string_view text, char sep) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == sep && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  parts.push_back(current);
  return parts;
}

absl::StatusOr<OpText> ParseOneOp(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  OpText op;
  const size_t open = text.find('(');
  if (open == absl::string_view::npos) {
    op.name = std::string(text);
    return op;
  }
  if (text.back() != ')') {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' lacks its closing ')'"));
  }
  op.name = std::string(absl::StripAsciiWhitespace(text.substr(0, open)));
  const absl::string_view inner = text.substr(open + 1, text.size() - open - 2);
  if (absl::StripAsciiWhitespace(inner).empty()) return op;
  for (const std::string& arg : SplitTopLevel(inner, ',')) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(op.name, ": '", absl::StripAsciiWhitespace(arg), "' is not name=value"));
    }
    const std::string name(absl::StripAsciiWhitespace(absl::string_view(arg).substr(0, eq)));
    op.args[name] = std::string(absl::StripAsciiWhitespace(absl::string_view(arg).substr(eq + 1)));
  }
  return op;
}

bool IsIdentifier(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}


// kKeptWorkingBytes is what a thread's working images may keep between samples besides
// the planned scratch (a list without a fixed size works on the images' own sizes).
constexpr size_t kKeptWorkingBytes = size_t{16} << 20;

// ThreadWorkingImages: a pair per head size (a list's ops mostly keep its head's size),
// so that a thread running views of different sizes (DINO's 224² and 96²) does not grow
// and zero-fill one pair again at every switch.
WorkingImages& ThreadWorkingImages(int head_size) {
  thread_local SizedSlots<WorkingImages> images;
  return images.For(head_size, head_size);
}

// CopyWholeImage copies a full RGB decode into the working image.
absl::Status CopyWholeImage(const decode::DecodedImage& decoded, Image* out) {
  const Image& in = decoded.image;
  if (decoded.format != decode::PixelFormat::kRgb || in.channels != 3 || in.width <= 0 ||
      in.height <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transforms: a list without a crop-and-resize head needs the whole RGB image, got ",
        in.width, "x", in.height, "x", in.channels));
  }
  out->Resize(in.width, in.height, 3);
  std::memcpy(out->pixels.data(), in.pixels.data(), out->pixels.size());
  return absl::OkStatus();
}

// CropStream is crop c's stream in a view whose stream is view_stream: the ops after a
// multi-crop op draw from it, so each crop is an independent random view.
uint64_t CropStream(uint64_t view_stream, int c) {
  return Mix64(Mix64(view_stream) ^ (0x6372ULL << 48) ^ static_cast<uint64_t>(c));
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// MoveLabelsThroughHead moves a label map as the head moved the pixels: the train head
// is F.resized_crop of plan.region to n × n, the eval head F.resize to the resized size
// then F.center_crop's box, then the absorbed flip; nearest neighbour as PIL resizes a
// mask (kernels/label_plane.h).
void MoveLabelsThroughHead(const CropPlan& plan, int n, LabelPlane* plane) {
  const Image& src = *plane->labels;
  if (plan.resized_width > 0) {
    kernels::LabelResizedCrop(src, 0, 0, src.height, src.width, plan.resized_height,
                              plan.resized_width, plane->fill, plane->spare);
    std::swap(*plane->labels, *plane->spare);
    thread_local std::vector<int> map_x, map_y;
    map_x.resize(static_cast<size_t>(n));
    map_y.resize(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      const int x = plan.crop_left + k, y = plan.crop_top + k;
      map_x[k] = x >= 0 && x < plan.resized_width ? x : -1;
      map_y[k] = y >= 0 && y < plan.resized_height ? y : -1;
    }
    // The absorbed flip, in the gather (a separate flip pass was 2.3% of the 512 px
    // segmentation recipe under perf).
    if (plan.flip) std::reverse(map_x.begin(), map_x.end());
    kernels::LabelGather(*plane->labels, map_x, map_y, plane->fill, plane->spare);
  } else {
    kernels::LabelResizedCrop(src, static_cast<int>(std::lround(plan.region.y)),
                              static_cast<int>(std::lround(plan.region.x)),
                              static_cast<int>(std::lround(plan.region.h)),
                              static_cast<int>(std::lround(plan.region.w)), n, n, plane->fill,
                              plane->spare, /*mirror=*/plan.flip);
  }
  std::swap(*plane->labels, *plane->spare);
}

}  // namespace

uint64_t OpStream(uint64_t view_stream, size_t op) {
  return Mix64(Mix64(view_stream) ^ (0x6F70ULL << 48) ^ static_cast<uint64_t>(op));
}

bool ShouldApply(const Op& op, SampleRng& rng) {
  // RandomApply and the Random* classes: applied when a uniform draw falls below p.
  return op.p() >= 1 || op.OwnsP() || rng.Uniform(0, 1) < op.p();
}

absl::StatusOr<std::vector<OpText>> ParseOpListText(const std::string& text) {
  std::vector<OpText> ops;
  for (const std::string& part : SplitTopLevel(text, ';')) {
    if (absl::StripAsciiWhitespace(part).empty()) continue;
    absl::StatusOr<OpText> op = ParseOneOp(part);
    if (!op.ok()) return op.status();
    if (!IsIdentifier(op->name)) {
      return absl::InvalidArgumentError(absl::StrCat("'", op->name, "' is not an op name"));
    }
    ops.push_back(*std::move(op));
  }
  return ops;
}

std::string OpListText(const std::vector<OpText>& ops) {
  std::vector<std::string> parts;
  for (const OpText& op : ops) {
    std::vector<std::string> args;
    for (const auto& [name, value] : op.args) args.push_back(absl::StrCat(name, "=", value));
    parts.push_back(absl::StrCat(op.name, "(", absl::StrJoin(args, ", "), ")"));
  }
  return absl::StrJoin(parts, "; ");
}

namespace {

// Larger is each side's larger of two bounds (either unknown: unknown).
OpSize Larger(OpSize a, OpSize b) {
  if (!a.Known() || !b.Known()) return {};
  return {std::max(a.width, b.width), std::max(a.height, b.height)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<ViewProgram>> ViewProgram::Create(
    const std::vector<OpText>& ops, int* failed_op, bool bounded) {
  if (failed_op != nullptr) *failed_op = -1;
  auto fail = [&](size_t i, const std::string& message) {
    if (failed_op != nullptr) *failed_op = static_cast<int>(i);
    return absl::InvalidArgumentError(internal::OpPlace(i, ops[i].name, message));
  };
  if (ops.empty()) {
    return absl::InvalidArgumentError(
        "a view needs at least one op (e.g. random_resized_crop(size=224); normalize())");
  }
  std::unique_ptr<ViewProgram> program(new ViewProgram);
  program->text_ = OpListText(ops);
  for (size_t i = 0; i < ops.size(); ++i) {
    absl::StatusOr<std::unique_ptr<Op>> op = OpRegistry::Global().Create(ops[i].name, ops[i].args);
    if (!op.ok()) return fail(i, std::string(op.status().message()));
    program->ops_.push_back(*std::move(op));
  }
  program->costs_.reset(new OpCost[ops.size()]);

  // Forms and sizes, in order.
  OpSize size;  // Unknown: the decoded image's.
  // An upper bound on each side (for padded batches): unknown at the decoded image; an
  // op that cannot bound its output even from a bounded input is the one to name.
  OpSize bound;
  int unbounded_op = -1;
  size_t largest_pixels = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = *program->ops_[i];
    const bool after_normalize = program->normalize_index_ >= 0;
    if (op.Input() == PixelForm::kUint8HWC && after_normalize) {
      return fail(i, absl::StrCat("works on uint8 pixels, so it must come before normalize (op ",
                                  program->normalize_index_ + 1, ")"));
    }
    if (op.Input() == PixelForm::kFloatCHW && !after_normalize) {
      return fail(i, "works on the normalized tensor, so it must come after normalize");
    }
    if (op.Output() == PixelForm::kFloatCHW && op.Input() == PixelForm::kUint8HWC) {
      if (op.p() < 1) return fail(i, "normalize cannot be random (p must be 1)");
      program->normalize_index_ = static_cast<int>(i);
    }
    if (const auto* multi = dynamic_cast<const internal::MultiCrop*>(&op); multi != nullptr) {
      if (program->crop_index_ >= 0) {
        return fail(i, absl::StrCat("a view holds one five_crop or ten_crop (op ",
                                    program->crop_index_ + 1, " is one): crops of crops have "
                                    "no batch shape"));
      }
      if (op.p() < 1) {
        return fail(i, "must apply to every sample (p=1): a batch has one crop count");
      }
      program->crop_index_ = static_cast<int>(i);
      program->crops_ = multi->crops();
      // Its input is kept while the crops run: a third image, where its size is known.
      if (size.Known()) {
        program->crops_source_bytes_ = 3 * static_cast<size_t>(size.width) * size.height;
      }
    }
    OpSize next = op.OutputSize(size);
    if (op.p() < 1 && !(next == size)) next = OpSize{};  // Applied or not: either size.
    size = next;
    OpSize next_bound = op.OutputBound(bound);
    if (op.p() < 1 && !(next_bound == bound)) next_bound = Larger(next_bound, bound);
    if (!op.OutputBound(OpSize{1024, 1024}).Known()) unbounded_op = static_cast<int>(i);
    bound = size.Known() ? size : next_bound;
    if (size.Known() && op.Input() == PixelForm::kUint8HWC &&
        static_cast<size_t>(size.width) * size.height > largest_pixels) {
      largest_pixels = static_cast<size_t>(size.width) * size.height;
      program->largest_op_ = static_cast<int>(i);
    }
  }
  // The refusals stay short (one line of at most ~300 characters with the op's place and
  // the spec's file:line before them): what is wrong, then the two ways out.
  constexpr char kFixed[] =
      "end with a fixed size (a crop, fixed_size_crop or resize to [h, w])";
  if (!size.Known() && !bound.Known()) {
    // Neither fixed nor bounded: name the op that loses the bound (resize without
    // max_size), or the decoded image's size that no op bounds.
    if (unbounded_op >= 0) {
      return fail(static_cast<size_t>(unbounded_op),
                  absl::StrCat("the view's output size depends on the image, with no upper "
                               "bound: ", kFixed, ", or give resize a max_size and set "
                               "size_divisibility"));
    }
    return fail(ops.size() - 1,
                absl::StrCat("the view's output size depends on the image (the decoded one, "
                             "no upper bound): ", kFixed, ", or start with resize(size=N, "
                             "max_size=M) and set size_divisibility"));
  }
  if (!size.Known() && !bounded) {
    return fail(ops.size() - 1,
                absl::StrCat("the view's output size depends on the image: ", kFixed,
                             ", or pad the batch's images (up to ", bound.width, "x",
                             bound.height, ") with size_divisibility (e.g. 32)"));
  }
  program->variable_ = !size.Known();
  program->output_size_ = size.Known() ? size : bound;
  if (absl::Status s = program->PlanChannels(ops, fail); !s.ok()) return s;

  // The head: planned from the header, before decoding.
  TransformOptions head;
  bool absorbed = false;
  const Op* first = program->ops_[0].get();
  const Op* second = ops.size() > 1 ? program->ops_[1].get() : nullptr;
  if (first->p() == 1 &&
      first->PlanHead(second, second != nullptr ? second->p() : 0, &head, &absorbed)) {
    program->head_ops_ = absorbed ? 2 : 1;
    std::array<float, 3> mean{}, stddev{};
    const size_t after = program->head_ops_;
    program->fused_ = after < ops.size() && head.interpolation == Interpolation::kBilinear &&
                      static_cast<int>(after) == program->normalize_index_ &&
                      program->ops_[after]->Normalization(&mean, &stddev);
    if (program->fused_) {
      head.layout = Layout::kFloatCHW;
      head.mean = mean;
      head.std = stddev;
    } else {
      head.layout = Layout::kUint8HWC;
    }
    absl::StatusOr<std::unique_ptr<Transform>> t = Transform::Create(head);
    // (The head's image_size is the op's size argument.)
    if (!t.ok()) return fail(0, absl::StrCat("size ", head.image_size, ": ", t.status().message()));
    program->head_ = *std::move(t);
  }
  const bool has_pixel_ops =
      !program->fused_ &&
      (program->normalize_index_ < 0 ? ops.size() : static_cast<size_t>(program->normalize_index_)) >
          program->head_ops_;
  // Without a head the list always works in the two images (the decoded one copied in):
  // the sizes its ops make are known from their arguments, the decoded one is not.
  program->scratch_bytes_ = program->head_ == nullptr || has_pixel_ops || !program->fused_
                                ? 2 * 3 * largest_pixels + program->crops_source_bytes_
                                : 0;
  if (program->scratch_bytes_ == 0) program->largest_op_ = -1;
  return program;
}

absl::Status ViewProgram::PlanChannels(
    const std::vector<OpText>& ops,
    const std::function<absl::Status(size_t, const std::string&)>& fail) {
  // How many values an argument has (its default's count where not written).
  const auto count = [](const OpText& op, const std::string& arg, size_t fallback) {
    auto it = op.args.find(arg);
    if (it == op.args.end()) return fallback;
    absl::StatusOr<OpValue> v = ParseOpValue(it->second);
    return v.ok() ? v->numbers.size() : fallback;
  };
  const auto one = [](const OpText& op) {
    auto it = op.args.find("num_output_channels");
    if (it == op.args.end()) return false;
    absl::StatusOr<OpValue> v = ParseOpValue(it->second);
    return v.ok() && v->IsNumber() && v->numbers[0] == 1;
  };
  bool one_channel = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name != "grayscale" || !one(ops[i])) continue;
    if (ops_[i]->p() < 1) {
      return fail(i, "num_output_channels=1 must apply to every sample (p=1): a batch has "
                     "one channel count (random_grayscale keeps three)");
    }
    one_channel = true;
  }
  // torch broadcasts a 3-value mean or std over a one-channel tensor: 3 channels again.
  if (one_channel && normalize_index_ >= 0) {
    const OpText& n = ops[static_cast<size_t>(normalize_index_)];
    one_channel = count(n, "mean", 3) == 1 && count(n, "std", 3) == 1;
  }
  channels_ = one_channel ? 1 : 3;
  if (channels_ == 1 && is_float()) {  // The three planes normalize writes, then one kept.
    scratch_bytes_ += 3 * sizeof(float) * static_cast<size_t>(output_size_.width) *
                      static_cast<size_t>(output_size_.height);
  }
  return absl::OkStatus();
}

std::array<int64_t, 3> ViewProgram::shape() const {
  if (is_float()) return {channels_, output_size_.height, output_size_.width};
  return {output_size_.height, output_size_.width, channels_};
}

size_t ViewProgram::output_bytes() const {
  return CropBytes() * static_cast<size_t>(crops());
}

size_t ViewProgram::CropBytes() const {
  return static_cast<size_t>(output_size_.width) * output_size_.height *
         static_cast<size_t>(channels_) * (is_float() ? sizeof(float) : 1);
}

absl::Status ViewProgram::CheckMemory(int64_t held, int64_t need,
                                      const std::string& what) const {
  if (worker_memory_ == nullptr || worker_memory_->bytes() <= 0) return absl::OkStatus();
  return worker_memory_->Check(held + need, reason::kOpMemory, what);
}

absl::Status ViewProgram::CheckOpMemory(size_t i, const OpParams& params, int w, int h,
                                        int64_t held, const detection::Targets* targets,
                                        const LabelPlane* labels) const {
  if (worker_memory_ == nullptr) return absl::OkStatus();
  const Op& op = *ops_[i];
  const internal::OpWorking working = internal::WorkingOf(op, params, w, h);
  int64_t need = working.bytes;
  if (targets != nullptr && op.Targets() == Op::TargetEffect::kMoves) {
    need += MaskBytesPastPlan(targets, w, h, working.out.width, working.out.height);
  }
  if (labels != nullptr && labels->labels != nullptr && op.MovesLabels()) {
    // One byte a pixel, the map's plane and the one it moves into (the spare).
    need += int64_t{labels->labels->width} * labels->labels->height +
            int64_t{working.out.width} * working.out.height;
  }
  const int64_t limit = worker_memory_->bytes();
  if (limit <= 0 || held + need <= limit) return absl::OkStatus();
  return CheckMemory(held, need,
                     absl::StrCat(op.name(), " (op ", i + 1, ") making ", working.out.width,
                                  "x", working.out.height, " from ", w, "x", h));
}

int64_t ViewProgram::MaskBytesPastPlan(const detection::Targets* targets, int w, int h,
                                       int out_w, int out_h) const {
  if (targets == nullptr || !targets->has_masks) return 0;
  // The masks' planes before and after the move, past what the plan holds for them: a
  // 4x zoom-out's canvas under 60 instance masks is 2.9 GB.
  const int64_t planes =
      targets->size() * (int64_t{w} * h + int64_t{out_w} * out_h);
  return std::max<int64_t>(0, planes - planned_mask_bytes_);
}

absl::Status ViewProgram::CheckMaskMemory(const detection::Targets* targets, int w, int h,
                                          int out_w, int out_h, int64_t held) const {
  if (worker_memory_ == nullptr) return absl::OkStatus();
  const int64_t need = MaskBytesPastPlan(targets, w, h, out_w, out_h);
  const int64_t limit = worker_memory_->bytes();
  if (need == 0 || limit <= 0 || held + need <= limit) return absl::OkStatus();
  return CheckMemory(held, need,
                     absl::StrCat(targets->size(), " instance masks moved from ", w, "x", h,
                                  " to ", out_w, "x", out_h, " (past the planned ",
                                  FormatBytes(planned_mask_bytes_), ")"));
}

absl::Status ViewProgram::CheckDrawMemory(size_t i, int w, int h, int64_t held) const {
  if (worker_memory_ == nullptr) return absl::OkStatus();
  const Op& op = *ops_[i];
  const internal::OpWorking before = internal::BeforeDraw(op, w, h);
  // The message only for a refusal: this runs for each op of each sample.
  const int64_t limit = worker_memory_->bytes();
  if (limit <= 0 || held + before.bytes <= limit) return absl::OkStatus();
  return CheckMemory(held, before.bytes,
                     absl::StrCat(op.name(), " (op ", i + 1, ") making ", w, "x", h, " from ",
                                  w, "x", h));
}

absl::Status ViewProgram::RunPixelOps(const SampleKey& key, uint64_t view_stream, size_t begin,
                                      size_t end, OpImage& image, int64_t held,
                                      const OpObserver* observer,
                                      detection::Targets* targets,
                                      LabelPlane* labels) const {
  // Draws op j as the loop below does (geometry chains draw ahead with it).
  const internal::DrawOp draw = [&](size_t j, int w, int h, const detection::Targets* t,
                                    OpParams* params) {
    SampleRng rng(key.seed, key.epoch, key.index, OpStream(view_stream, j));
    if (!ShouldApply(*ops_[j], rng)) return false;
    if (t != nullptr) {
      ops_[j]->DrawWithTargets(w, h, *t, rng, params);
    } else {
      ops_[j]->Draw(w, h, rng, params);
    }
    return true;
  };
  const internal::CheckDraw check_draw = [&](size_t j, int w, int h) {
    return CheckDrawMemory(j, w, h, held);
  };
  // A chain's steps check their images; its masks move once, from its input to its output.
  const internal::CheckStep check = [&](size_t j, const OpParams& params, int w, int h) {
    return CheckOpMemory(j, params, w, h, held);
  };
  const internal::CheckMasks check_masks = [&](int w, int h, int out_w, int out_h) {
    return CheckMaskMemory(targets, w, h, out_w, out_h, held);
  };
  std::vector<size_t> chained;
  for (size_t i = begin; i < end; ++i) {
    const Op& op = *ops_[i];
    const int64_t start = NowNanos();
    if (labels == nullptr) {
      // Geometric ops from here as one pass (internal/geometry_chain.h). Each op that
      // applied counts a run and an equal share of the pass's time, as consecutive spans,
      // so every op keeps its own row and trace span.
      absl::StatusOr<size_t> chain =
          internal::RunGeometryChain(ops_, i, end, draw, check_draw, check, check_masks,
                                     image, targets, &chained);
      if (!chain.ok()) return chain.status();
      if (*chain > 0) {
        const int64_t share = (NowNanos() - start) / static_cast<int64_t>(chained.size());
        for (size_t k = 0; k < chained.size(); ++k) {
          const size_t j = chained[k];
          costs_[j].runs.fetch_add(1, std::memory_order_relaxed);
          costs_[j].busy_ns.fetch_add(share, std::memory_order_relaxed);
          if (observer != nullptr) {
            observer->OpRan(j, start + static_cast<int64_t>(k) * share, share);
          }
        }
        i += *chain - 1;
        continue;
      }
    }
    SampleRng rng(key.seed, key.epoch, key.index, OpStream(view_stream, i));
    const int w = image.rgb != nullptr && op.Input() == PixelForm::kUint8HWC ? image.rgb->width
                                                                              : image.width;
    const int h = image.rgb != nullptr && op.Input() == PixelForm::kUint8HWC ? image.rgb->height
                                                                              : image.height;
    if (ShouldApply(op, rng)) {
      OpParams params;
      // Before the draw too, which may allocate by the image's size (BeforeDraw).
      if (op.Input() == PixelForm::kUint8HWC) {
        if (absl::Status s = CheckDrawMemory(i, w, h, held); !s.ok()) return s;
      }
      if (targets != nullptr) {
        op.DrawWithTargets(w, h, *targets, rng, &params);
      } else {
        op.Draw(w, h, rng, &params);
      }
      if (op.Input() == PixelForm::kUint8HWC) {
        if (absl::Status s = CheckOpMemory(i, params, w, h, held, targets, labels); !s.ok()) {
          return s;
        }
      }
      absl::Status s = op.Apply(params, image);
      // The targets move with the pixels (after Apply, which checked the parameters).
      if (s.ok() && targets != nullptr) s = op.MoveTargets(params, targets);
      if (!s.ok()) {
        // The op's reason payload (python_error from a Lambda) stays, for the skip count.
        absl::Status out = absl::InvalidArgumentError(absl::StrCat(op.name(), ": ", s.message()));
        s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
          out.SetPayload(url, payload);
        });
        return out;
      }
      if (labels != nullptr && op.MovesLabels()) {
        if (absl::Status s = op.MoveLabels(params, *labels); !s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(op.name(), ": ", s.message()));
        }
      }
      costs_[i].runs.fetch_add(1, std::memory_order_relaxed);
      const int64_t took = NowNanos() - start;
      costs_[i].busy_ns.fetch_add(took, std::memory_order_relaxed);
      if (observer != nullptr) observer->OpRan(i, start, took);
      continue;
    }
    costs_[i].busy_ns.fetch_add(NowNanos() - start, std::memory_order_relaxed);
  }
  return absl::OkStatus();
}

absl::Status ViewProgram::Run(const decode::DecodedImage& decoded, const CropPlan* plan,
                              const SampleKey& key, uint64_t view_stream, void* dst,
                              const OpObserver* observer, detection::Targets* targets,
                              LabelPlane* labels, OpSize* made) const {
  const int head_size = head_ != nullptr ? head_->options().image_size : 0;
  WorkingImages& work = ThreadWorkingImages(head_size);
  OpSize written = output_size_;
  absl::Status status = RunIn(work, decoded, plan, key, view_stream, dst, observer, targets,
                              labels, variable_ ? &written : nullptr);
  if (made != nullptr) *made = written;
  // A thread keeps its working images for the next sample, up to what the plan counts
  // for them (or 16 MiB): larger ones, made for one large image, go back at once, so a
  // thread never keeps what only one sample needed.
  const size_t keep = std::max(scratch_bytes_, kKeptWorkingBytes);
  if (work.rgb.pixels.capacity() + work.spare.pixels.capacity() +
          work.crops_source.pixels.capacity() >
      keep) {
    work.rgb = Image();
    work.spare = Image();
    work.crops_source = Image();
  }
  return status;
}

absl::Status ViewProgram::RunIn(WorkingImages& work, const decode::DecodedImage& decoded,
                                const CropPlan* plan, const SampleKey& key,
                                uint64_t view_stream, void* dst,
                                const OpObserver* observer, detection::Targets* targets,
                                LabelPlane* labels, OpSize* made) const {
  // The sample's decoded pixels stay allocated while the ops run.
  const int64_t held = static_cast<int64_t>(decoded.image.pixels.size());
  OpImage image;
  image.rgb = &work.rgb;
  image.spare = &work.spare;
  if (worker_memory_ != nullptr && worker_memory_->bytes() > 0) {
    image.memory = worker_memory_.get();
    image.held = held;
  }
  size_t next = 0;
  if (head_ != nullptr) {
    const int64_t start = NowNanos();
    CropPlan local;
    if (plan == nullptr) {  // Decoded without a plan: plan on the whole image.
      SampleRng rng(key.seed, key.epoch, key.index, view_stream);
      local = head_->Plan(decoded.image.width, decoded.image.height, rng);
      plan = &local;
    }
    const int n = head_->options().image_size;
    void* head_dst = dst;
    if (!fused_) {
      work.rgb.Resize(n, n, 3);
      head_dst = work.rgb.pixels.data();
    }
    if (absl::Status s = head_->Apply(decoded, *plan, head_dst); !s.ok()) return s;
    if (labels != nullptr) MoveLabelsThroughHead(*plan, n, labels);
    next = head_ops_ + (fused_ ? 1 : 0);
    const int64_t took = NowNanos() - start;
    costs_[0].busy_ns.fetch_add(took, std::memory_order_relaxed);
    costs_[0].runs.fetch_add(1, std::memory_order_relaxed);
    if (observer != nullptr) observer->OpRan(0, start, took);
  } else {
    // The whole decoded image is copied in, beside the sample's own.
    const Image& in = decoded.image;
    if (absl::Status s = CheckMemory(
            held, 3 * int64_t{in.width} * in.height,
            absl::StrCat("the op list's copy of the whole ", in.width, "x", in.height, " image"));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CopyWholeImage(decoded, &work.rgb); !s.ok()) return s;
  }

  if (crop_index_ >= 0) {
    return RunCrops(work, key, view_stream, next, image, held, dst, observer);
  }
  return RunTail(work, key, view_stream, next, image, held, dst, observer, targets, labels,
                 made);
}

absl::Status ViewProgram::RunCrops(WorkingImages& work, const SampleKey& key,
                                   uint64_t view_stream, size_t begin, OpImage& image,
                                   int64_t held, void* dst, const OpObserver* observer) const {
  const size_t at = static_cast<size_t>(crop_index_);
  if (absl::Status s = RunPixelOps(key, view_stream, begin, at, image, held, observer,
                                   /*targets=*/nullptr, /*labels=*/nullptr);
      !s.ok()) {
    return s;
  }
  const Op& op = *ops_[at];
  // The image the crops come from stays in crops_source; each crop is written from it
  // into work.rgb (Apply writes spare and swaps), then runs the ops after the crop.
  std::swap(work.crops_source, work.rgb);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int c = 0; c < crops_; ++c) {
    const int64_t start = NowNanos();
    OpParams params;
    params.Push(c);
    OpImage crop;
    crop.rgb = &work.crops_source;
    crop.spare = &work.rgb;
    absl::Status s = op.Apply(params, crop);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(op.name(), ": ", s.message()));
    std::swap(work.crops_source, work.rgb);  // Back: the source, and the crop in rgb.
    const int64_t took = NowNanos() - start;
    costs_[at].busy_ns.fetch_add(took, std::memory_order_relaxed);
    costs_[at].runs.fetch_add(1, std::memory_order_relaxed);
    if (observer != nullptr) observer->OpRan(at, start, took);
    s = RunTail(work, key, CropStream(view_stream, c), at + 1, image, held,
                out + static_cast<size_t>(c) * CropBytes(), observer, nullptr, nullptr,
                /*made=*/nullptr);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ViewProgram::RunTail(WorkingImages& work, const SampleKey& key,
                                  uint64_t view_stream, size_t next, OpImage& image,
                                  int64_t held, void* dst, const OpObserver* observer,
                                  detection::Targets* targets, LabelPlane* labels,
                                  OpSize* made) const {
  image.chw = static_cast<float*>(dst);
  image.width = output_size_.width;
  image.height = output_size_.height;
  // A one-channel float view: the ops write three (equal) planes here, the slot gets one.
  const size_t plane = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  thread_local std::vector<float> planes;
  if (channels_ == 1 && is_float()) {
    planes.resize(3 * plane);
    image.chw = planes.data();
  }
  if (!fused_) {
    const size_t pixel_end = normalize_index_ >= 0 ? static_cast<size_t>(normalize_index_) + 1
                                                   : ops_.size();
    // A list whose size depends on the image (made != null) learns the tensor's size
    // from the pixels just before normalize writes it, compactly at the slot's start.
    const size_t uint8_end =
        made != nullptr && normalize_index_ >= 0 ? pixel_end - 1 : pixel_end;
    absl::Status s = RunPixelOps(key, view_stream, next, uint8_end, image, held, observer,
                                 targets, labels);
    if (!s.ok()) return s;
    if (made != nullptr) {
      if (work.rgb.width > output_size_.width || work.rgb.height > output_size_.height) {
        return absl::InternalError(absl::StrCat("transforms: the list made ", work.rgb.width,
                                                "x", work.rgb.height, ", past its bound ",
                                                output_size_.width, "x", output_size_.height));
      }
      *made = OpSize{work.rgb.width, work.rgb.height};
      image.width = made->width;
      image.height = made->height;
    }
    if (uint8_end < pixel_end) {
      s = RunPixelOps(key, view_stream, uint8_end, pixel_end, image, held, observer, targets,
                      labels);
      if (!s.ok()) return s;
    }
    next = pixel_end;
    if (normalize_index_ < 0) {  // A uint8 view: its pixels are the batch tensor.
      if (made == nullptr &&
          (work.rgb.width != output_size_.width || work.rgb.height != output_size_.height)) {
        return absl::InternalError(absl::StrCat("transforms: the list made ", work.rgb.width,
                                                "x", work.rgb.height, ", planned ",
                                                output_size_.width, "x", output_size_.height));
      }
      const size_t pixels = static_cast<size_t>(work.rgb.width) * work.rgb.height;
      if (channels_ == 1) {  // Grayscale(1): the (equal) channels' first.
        uint8_t* out = static_cast<uint8_t*>(dst);
        for (size_t k = 0; k < pixels; ++k) out[k] = work.rgb.pixels[3 * k];
      } else {
        std::memcpy(dst, work.rgb.pixels.data(), 3 * pixels);
      }
      return absl::OkStatus();
    }
  }
  absl::Status s = RunPixelOps(key, view_stream, next, ops_.size(), image, held, observer,
                               targets, labels);
  const size_t made_plane =
      static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  if (s.ok() && channels_ == 1) std::memcpy(dst, planes.data(), made_plane * sizeof(float));
  return s;
}

}  // namespace flowloader::augment
