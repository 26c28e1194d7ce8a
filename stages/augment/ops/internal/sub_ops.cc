// sub_ops.cc: making, sizing and running the sub-ops of compose, random_choice and
// random_order.
#include "stages/augment/ops/internal/sub_ops.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/op_memory.h"
#include "stages/augment/ops/internal/op_place.h"
#include "stages/augment/ops/view_program.h"
#include "stages/core/sample_error.h"
#include "stages/core/worker_memory.h"

namespace flowloader::augment::internal {
namespace {

// The stream sub-op i draws from, beside the sample's other streams.
constexpr uint64_t kSubOpStream = 0x5355424F50ULL;  // "SUBOP".
constexpr double kSeedLimit = 4503599627370496.0;    // 2^52.

}  // namespace

ArgSchema SubOpsArg() {
  return {"transforms", "[]", "an op list [op(...); op(...)], at most 8 uint8 pixel ops",
          "the ops (torchvision's transforms), each with its own p"};
}

absl::StatusOr<SubOps> SubOps::Create(const std::string& op, const OpArgs& args,
                                      const std::string& arg) {
  const OpValue& value = args.Get(arg);
  const std::string where = absl::StrCat(op, ": ", arg, ": ");
  if (!value.is_list || !value.numbers.empty()) {
    return ArgError(op, arg, "an op list [op(...); op(...)]", value);
  }
  SubOps out;
  if (value.ops.empty()) return out;  // [] (torchvision's empty list leaves the image).
  // The lists being made on this thread, outermost first: Create recurses through them.
  thread_local int depth = 0;
  if (depth >= kMaxNesting) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "op lists nest more than ", kMaxNesting,
        " deep (compose, random_choice and random_order inside each other): flatten them"));
  }
  struct Nested {
    Nested() { ++depth; }
    ~Nested() { --depth; }
  } nested;
  absl::StatusOr<std::vector<OpText>> texts = ParseOpListText(value.ops);
  if (!texts.ok()) return absl::InvalidArgumentError(absl::StrCat(where, texts.status().message()));
  if (texts->size() > kMaxSubOps) {
    return absl::InvalidArgumentError(absl::StrCat(where, "at most ", kMaxSubOps,
                                                   " ops, got ", texts->size()));
  }
  for (size_t i = 0; i < texts->size(); ++i) {
    const OpText& t = (*texts)[i];
    // "WHERE op N (NAME): why", the op named once (OpPlace).
    auto refuse = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(where, OpPlace(i, t.name, why)));
    };
    if (t.name == "python_lambda") {
      return refuse(
          absl::StrCat("a Python Lambda cannot run inside ", op, ": put it in the view's list"));
    }
    if (t.name == "random_iou_crop") {
      return refuse(
          absl::StrCat("its draw reads the sample's boxes, which sub-ops do not see: put it in the "
                       "view's list"));
    }
    if (t.name == "five_crop" || t.name == "ten_crop") {
      return refuse(
          absl::StrCat("it makes several crops, which a sub-op cannot (every sample's view has one "
                       "crop count): put it in the view's list"));
    }
    if (t.name == "grayscale" && t.args.count("num_output_channels") > 0 &&
        t.args.at("num_output_channels") == "1") {
      return refuse(
          absl::StrCat("num_output_channels=1 changes the view's channels, which a sub-op cannot "
                       "(every sample's view has one channel count): put it in the view's list, or "
                       "write num_output_channels=3"));
    }
    absl::StatusOr<std::unique_ptr<Op>> made = OpRegistry::Global().Create(t.name, t.args);
    if (!made.ok()) return refuse(made.status().message());
    if ((*made)->Input() != PixelForm::kUint8HWC || (*made)->Output() != PixelForm::kUint8HWC) {
      return refuse(absl::StrCat("works on the float tensor; ", op,
                                 " holds uint8 pixel ops only (put ", t.name, " after it)"));
    }
    out.ops_.push_back(std::shared_ptr<const Op>(std::move(*made)));
  }
  return out;
}

std::vector<const Op*> SubOps::List() const {
  std::vector<const Op*> list;
  for (const auto& op : ops_) list.push_back(op.get());
  return list;
}

OpSize SubOps::SizeAfter(const std::vector<size_t>& order, OpSize in) const {
  OpSize size = in;
  for (size_t i : order) {
    const Op& op = *ops_[i];
    OpSize next = op.OutputSize(size);
    if (op.p() < 1 && !op.OwnsP() && !(next == size)) next = OpSize{};  // Applied or not.
    size = next;
  }
  return size;
}

double SubOps::Seed(SampleRng& rng) {
  return static_cast<double>(rng.UniformInt(0, static_cast<int64_t>(kSeedLimit)));
}

absl::Status SubOps::ReadSeed(double value, uint64_t* seed) {
  if (!(value >= 0 && value < kSeedLimit) || value != std::floor(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sub-ops' seed must be an integer in [0, 2^52), got ", value));
  }
  *seed = static_cast<uint64_t>(value);
  return absl::OkStatus();
}

bool SubOps::Draw(size_t i, uint64_t seed, int width, int height, OpParams* params) const {
  SampleRng rng(seed, 0, i, kSubOpStream);
  if (!ShouldApply(*ops_[i], rng)) return false;
  ops_[i]->Draw(width, height, rng, params);
  return true;
}

absl::Status SubOps::Run(size_t i, uint64_t seed, OpImage& image) const {
  OpParams params;
  const int w = image.rgb->width, h = image.rgb->height;
  const Op& op = *ops_[i];
  // What one worker may hold, checked before the sub-op allocates, as the view's own ops
  // are (ViewProgram::CheckOpMemory): a resize to 16384² picked by random_choice went
  // past memory_limit_mb (1.6 GB under 1024 MiB). Once before the draw, which may itself
  // allocate by the image's size (BeforeDraw), and once with the drawn parameters.
  const auto check = [&](const OpWorking& working) {
    if (image.memory == nullptr) return absl::OkStatus();
    return image.memory->Check(
        image.held + working.bytes, reason::kOpMemory,
        absl::StrCat(op.name(), " (inside an op list) making ", working.out.width, "x",
                     working.out.height, " from ", w, "x", h));
  };
  SampleRng rng(seed, 0, i, kSubOpStream);
  if (!ShouldApply(op, rng)) return absl::OkStatus();
  if (absl::Status s = check(BeforeDraw(op, w, h)); !s.ok()) return s;
  op.Draw(w, h, rng, &params);
  if (absl::Status s = check(WorkingOf(op, params, w, h)); !s.ok()) return s;
  if (absl::Status s = ops_[i]->Apply(params, image); !s.ok()) {
    // A nested list's memory refusal stays op_memory (it was counted invalid_argument).
    if (ErrorReason(s) == reason::kOpMemory) return WithContext(s, ops_[i]->name());
    return absl::InvalidArgumentError(absl::StrCat(ops_[i]->name(), ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status SubOps::MoveTargets(size_t i, uint64_t seed, detection::Targets* targets) const {
  OpParams params;
  if (!Draw(i, seed, targets->canvas_width, targets->canvas_height, &params)) {
    return absl::OkStatus();
  }
  return ops_[i]->MoveTargets(params, targets);
}

absl::Status SubOps::MoveLabels(size_t i, uint64_t seed, LabelPlane& plane) const {
  OpParams params;
  if (!ops_[i]->MovesLabels() ||
      !Draw(i, seed, plane.labels->width, plane.labels->height, &params)) {
    return absl::OkStatus();
  }
  return ops_[i]->MoveLabels(params, plane);
}

absl::Status SubOpsOp::Apply(const OpParams& params, OpImage& image) const {
  std::vector<size_t> order;
  uint64_t seed = 0;
  if (absl::Status s = Order(params, &order, &seed); !s.ok()) return s;
  for (size_t i : order) {
    if (absl::Status s = subs_.Run(i, seed, image); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SubOpsOp::MoveTargets(const OpParams& params, detection::Targets* targets) const {
  std::vector<size_t> order;
  uint64_t seed = 0;
  if (absl::Status s = Order(params, &order, &seed); !s.ok()) return s;
  for (size_t i : order) {
    if (absl::Status s = subs_.MoveTargets(i, seed, targets); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SubOpsOp::MoveLabels(const OpParams& params, LabelPlane& plane) const {
  std::vector<size_t> order;
  uint64_t seed = 0;
  if (absl::Status s = Order(params, &order, &seed); !s.ok()) return s;
  for (size_t i : order) {
    if (absl::Status s = subs_.MoveLabels(i, seed, plane); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace flowloader::augment::internal
