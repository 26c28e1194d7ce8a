// builtin_batch_stages.cc: the built-in batch stages: mixup_cutmix (timm's Mixup) and
// label_smoothing, over stages/mix/'s kernels; and DataClasses.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/batch_stage.h"
#include "stages/mix/mixup.h"

namespace flowloader {
namespace {

absl::Status OptionError(const std::string& option, const std::string& rule, double got) {
  return absl::InvalidArgumentError(
      absl::StrCat("option '", option, "' must be ", rule, ", got ", got));
}

// InRange checks a float option against [lo, hi] (hi_open: [lo, hi)).
absl::Status InRange(const StageArgs& args, const std::string& name, double lo, double hi,
                     bool hi_open = false) {
  const double v = args.GetFloat(name);
  if (!(v >= lo) || (hi_open ? !(v < hi) : !(v <= hi))) {
    return OptionError(name, absl::StrCat("in [", lo, ", ", hi, hi_open ? ")" : "]"), v);
  }
  return absl::OkStatus();
}

// ParseMinmax reads cutmix_minmax: "" (off) or "LO,HI" with 0 <= LO < HI <= 1.
absl::Status ParseMinmax(const std::string& text, mix::MixupOptions* o) {
  if (text.empty()) return absl::OkStatus();
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  double lo = 0, hi = 0;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &lo) || !absl::SimpleAtod(parts[1], &hi) ||
      !(lo >= 0.0) || !(hi <= 1.0) || !(lo < hi)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option 'cutmix_minmax' must be empty or \"LO,HI\" with 0 <= LO < HI <= 1, got '", text,
        "'"));
  }
  o->has_minmax = true;
  o->minmax_lo = lo;
  o->minmax_hi = hi;
  return absl::OkStatus();
}

// kMaxClasses is the most columns soft targets can have (LabelSpec::num_classes is an
// int); below it, the memory plan judges whether prefetch × batch × columns fits.
constexpr int64_t kMaxClasses = std::numeric_limits<int>::max();

// SoftTargetsText is what `classes` columns of float32 soft targets take: "8.0 GiB a row,
// 512.0 GiB a batch of 64".
std::string SoftTargetsText(int64_t classes, int batch_size) {
  // (Both at most 2^62 and 2^31: no overflow in the doubles' range.)
  const double row = 4.0 * static_cast<double>(classes);
  auto bytes = [](double b) {
    return b < 9e18 ? FormatBytes(static_cast<int64_t>(b)) : absl::StrCat(b, " B");
  };
  return absl::StrCat(bytes(row), " a row, ", bytes(row * std::max(batch_size, 1)),
                      " a batch of ", std::max(batch_size, 1));
}

// ResolveClasses sets the targets' columns: the option, else the data's classes; and
// records them as the pipeline's soft-label width (two stages must agree). Both are
// range-checked as int64 before they become the int width.
absl::Status ResolveClasses(const StageArgs& args, BatchStageEnv& env, int* classes) {
  const int64_t given = args.GetInt("num_classes");
  if (given < 0 || (args.IsSet("num_classes") && given == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option 'num_classes' must be >= 1 (leave it out to take the data's), got ", given));
  }
  if (given > kMaxClasses) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option 'num_classes' must be at most ", kMaxClasses, " (soft targets' columns), got ",
        given, "; its soft targets would take ", SoftTargetsText(given, env.batch_size)));
  }
  const int64_t wanted = given > 0 ? given : env.data_classes;
  if (wanted < 1) {
    return absl::InvalidArgumentError(
        "the data has no labels to count classes from: set option 'num_classes'");
  }
  if (wanted > kMaxClasses) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the data's largest label is ", wanted - 1, ", so its soft targets would need ", wanted,
        " columns (", SoftTargetsText(wanted, env.batch_size), "), more than ", kMaxClasses,
        ": set option 'num_classes' to the real class count (larger labels are skipped as "
        "label_out_of_range)"));
  }
  *classes = static_cast<int>(wanted);
  if (env.label.soft() && env.label.num_classes != *classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_classes ", *classes, " differs from an earlier batch op's ",
        env.label.num_classes, ": soft targets have one width"));
  }
  env.label.num_classes = *classes;
  return absl::OkStatus();
}

// FloatChw checks that every batch tensor is float32 [C, H, W]: mixing is defined on
// normalized float images (timm and torchvision mix float tensors; blending uint8 would
// need a rounding rule of its own).
absl::Status FloatChw(const BatchStageEnv& env) {
  for (const OutputSpec& o : env.outputs) {
    if (!o.is_float || o.sample_shape.size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mixes float32 [C, H, W] batch tensors (layout float_chw); tensor '", o.name,
          "' is ", DTypeName(o.dtype()), " [", absl::StrJoin(o.sample_shape, ", "), "]"));
    }
  }
  return absl::OkStatus();
}

class MixupCutmixStage : public BatchStage {
 public:
  explicit MixupCutmixStage(mix::MixupOptions options) : o_(options) {}

  absl::Status Process(BatchContext& ctx) const override {
    const Batch& batch = *ctx.batch;
    const int64_t n = ctx.rows();
    if (n == 0) return absl::OkStatus();
    // The draw is made on the first view's size; other views get the box scaled to
    // theirs and the same λ (mixup.h ScaleBox).
    const std::vector<int64_t>& ref = batch.tensors.front().shape;
    const int ref_h = static_cast<int>(ref[2]), ref_w = static_cast<int>(ref[3]);
    SampleRng rng = ctx.Rng();
    const std::vector<mix::RowMix> rows = mix::DrawMix(o_, n, ref_h, ref_w, rng);
    for (size_t k = 0; k < batch.tensors.size(); ++k) {
      const std::vector<int64_t>& s = batch.tensors[k].shape;
      mix::MixImages(rows, ref_h, ref_w, static_cast<float*>(ctx.data[k]), n,
                     static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3]));
    }
    mix::MixTargets(rows, batch.labels.data(), n, o_.num_classes, o_.label_smoothing,
                    static_cast<float*>(ctx.label_data));
    return absl::OkStatus();
  }

 private:
  const mix::MixupOptions o_;
};

absl::StatusOr<std::unique_ptr<BatchStage>> MakeMixupCutmix(const StageArgs& args,
                                                            BatchStageEnv& env) {
  mix::MixupOptions o;
  o.mixup_alpha = args.GetFloat("mixup_alpha");
  o.cutmix_alpha = args.GetFloat("cutmix_alpha");
  if (!(o.mixup_alpha >= 0.0)) return OptionError("mixup_alpha", ">= 0", o.mixup_alpha);
  if (!(o.cutmix_alpha >= 0.0)) return OptionError("cutmix_alpha", ">= 0", o.cutmix_alpha);
  if (absl::Status s = ParseMinmax(args.GetString("cutmix_minmax"), &o); !s.ok()) return s;
  if (o.mixup_alpha == 0.0 && o.effective_cutmix_alpha() == 0.0) {
    return absl::InvalidArgumentError(
        "mixes nothing: set mixup_alpha or cutmix_alpha > 0, or cutmix_minmax (label "
        "smoothing alone is the label_smoothing batch op)");
  }
  for (const char* p : {"prob", "switch_prob"}) {
    if (absl::Status s = InRange(args, p, 0.0, 1.0); !s.ok()) return s;
  }
  if (absl::Status s = InRange(args, "label_smoothing", 0.0, 1.0, true); !s.ok()) return s;
  o.prob = args.GetFloat("prob");
  o.switch_prob = args.GetFloat("switch_prob");
  o.correct_lam = args.GetBool("correct_lam");
  o.label_smoothing = args.GetFloat("label_smoothing");
  (void)mix::ParseMode(args.GetString("mode"), &o.mode);  // The schema's choices.
  if (o.mode == mix::MixMode::kPair && env.batch_size % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mode 'pair' mixes rows in pairs and needs an even batch_size, got ", env.batch_size,
        " (timm asserts it; a partial or skipped-short batch leaves its middle row alone)"));
  }
  if (absl::Status s = FloatChw(env); !s.ok()) return s;
  if (absl::Status s = ResolveClasses(args, env, &o.num_classes); !s.ok()) return s;
  return std::unique_ptr<BatchStage>(new MixupCutmixStage(o));
}

class LabelSmoothingStage : public BatchStage {
 public:
  LabelSmoothingStage(double smoothing, int classes) : smoothing_(smoothing), classes_(classes) {}

  absl::Status Process(BatchContext& ctx) const override {
    const int64_t n = ctx.rows();
    mix::MixTargets(std::vector<mix::RowMix>(static_cast<size_t>(n)), ctx.batch->labels.data(),
                    n, classes_, smoothing_, static_cast<float*>(ctx.label_data));
    return absl::OkStatus();
  }

 private:
  const double smoothing_;
  const int classes_;
};

absl::StatusOr<std::unique_ptr<BatchStage>> MakeLabelSmoothing(const StageArgs& args,
                                                              BatchStageEnv& env) {
  if (absl::Status s = InRange(args, "smoothing", 0.0, 1.0, true); !s.ok()) return s;
  int classes = 0;
  if (absl::Status s = ResolveClasses(args, env, &classes); !s.ok()) return s;
  return std::unique_ptr<BatchStage>(new LabelSmoothingStage(args.GetFloat("smoothing"), classes));
}

OptionSchema Float(const std::string& name, const std::string& value, const std::string& doc) {
  return OptionSchema{name, OptionType::kFloat, value, doc, {}};
}

const char kClassesDoc[] =
    "columns of the soft targets; 0 = the data's (ImageFolder classes, else the largest "
    "label + 1); a label outside is skipped as label_out_of_range";

}  // namespace

int64_t DataClasses(const Dataset& dataset) {
  if (!dataset.class_names().empty()) return static_cast<int64_t>(dataset.class_names().size());
  int64_t largest = -1;
  for (int64_t i = 0; i < dataset.size(); ++i) largest = std::max(largest, dataset.label(i));
  // (A label of INT64_MAX still counts: the caller refuses it by its size.)
  return largest == std::numeric_limits<int64_t>::max() ? largest : largest + 1;
}

void RegisterBuiltinBatchStages(StageRegistry& registry) {
  StageSchema mixup;
  mixup.type = "mixup_cutmix";
  mixup.doc =
      "MixUp/CutMix with timm's Mixup arguments, in place: row i mixed with row N-1-i, "
      "on every view (the box scaled to each); makes float32 [N, num_classes] targets";
  mixup.options = {
      Float("mixup_alpha", "1", "Beta(a, a) of mixup's lambda; mixup is on when > 0"),
      Float("cutmix_alpha", "0", "Beta(a, a) of cutmix's lambda; cutmix is on when > 0"),
      OptionSchema{"cutmix_minmax", OptionType::kString, "",
                   "\"LO,HI\": box sides drawn as that share of the image's (forces cutmix)",
                   {}},
      Float("prob", "1", "probability a batch (pair, row) is mixed, in [0, 1]"),
      Float("switch_prob", "0.5", "with both on, probability of cutmix over mixup"),
      OptionSchema{"mode", OptionType::kString, "batch",
                   "one draw per batch, per pair (i, N-1-i; even batch_size) or per row",
                   {"batch", "pair", "elem"}},
      OptionSchema{"correct_lam", OptionType::kBool, "true",
                   "lambda from the clipped box's area", {}},
      Float("label_smoothing", "0", "targets' smoothing s: 1-s+s/C on the class, s/C off it"),
      OptionSchema{"num_classes", OptionType::kInt, "0", kClassesDoc, {}},
  };
  (void)registry.RegisterBatch(std::move(mixup), MakeMixupCutmix);

  StageSchema smoothing;
  smoothing.type = "label_smoothing";
  smoothing.doc = "one-hot float32 [N, num_classes] targets, smoothed (no mixing)";
  smoothing.options = {
      Float("smoothing", "0.1", "s in [0, 1): 1-s+s/C on the class, s/C elsewhere"),
      OptionSchema{"num_classes", OptionType::kInt, "0", kClassesDoc, {}},
  };
  (void)registry.RegisterBatch(std::move(smoothing), MakeLabelSmoothing);
  RegisterMultiSampleBatchStages(registry);
}

}  // namespace flowloader
