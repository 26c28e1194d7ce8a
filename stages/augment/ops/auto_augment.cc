// auto_augment.cc: torchvision's AutoAugment(policy=IMAGENET, interpolation=nearest,
// fill=None), with its IMAGENET, CIFAR10 and SVHN policies: one of 25 sub-policies,
// uniformly, each of its two sub-ops applied with the sub-policy's probability at its
// magnitude bin (of 10), with a random sign where the sub-op is signed.
//
// Params: AutoAugment.get_params in its order: policy_id, probs[0], probs[1], signs[0],
// signs[1] (a sub-op applies when probs[i] <= its probability; sign 0 negates).
#include <string>

#include "stages/augment/ops/kernels/policy_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using policy::Space;
using policy::SubOp;

constexpr char kName[] = "auto_augment";
constexpr int kBins = 10;  // forward(): self._augmentation_space(10, (height, width)).

// AutoAugment._augmentation_space, by sub-op: policy_ops.h's kTorchvisionSpace.
constexpr const Space* kSpace = policy::kTorchvisionSpace;

// Step is one (op_name, p, magnitude_id) of a sub-policy; magnitude -1 is None.
struct Step {
  SubOp op;
  double p;
  int magnitude;
};
using SubPolicy = Step[2];

// Short names for the tables, which are torchvision's _get_policies line for line.
constexpr SubOp kPost = SubOp::kPosterize, kRot = SubOp::kRotate, kSol = SubOp::kSolarize,
                kAuto = SubOp::kAutoContrast, kEq = SubOp::kEqualize, kCol = SubOp::kColor,
                kInv = SubOp::kInvert, kCon = SubOp::kContrast, kSha = SubOp::kSharpness,
                kShX = SubOp::kShearX, kShY = SubOp::kShearY, kTrX = SubOp::kTranslateX,
                kTrY = SubOp::kTranslateY, kBri = SubOp::kBrightness;
constexpr int kNone = -1;

constexpr SubPolicy kImageNet[25] = {
    {{kPost, 0.4, 8}, {kRot, 0.6, 9}},     {{kSol, 0.6, 5}, {kAuto, 0.6, kNone}},
    {{kEq, 0.8, kNone}, {kEq, 0.6, kNone}}, {{kPost, 0.6, 7}, {kPost, 0.6, 6}},
    {{kEq, 0.4, kNone}, {kSol, 0.2, 4}},   {{kEq, 0.4, kNone}, {kRot, 0.8, 8}},
    {{kSol, 0.6, 3}, {kEq, 0.6, kNone}},   {{kPost, 0.8, 5}, {kEq, 1.0, kNone}},
    {{kRot, 0.2, 3}, {kSol, 0.6, 8}},      {{kEq, 0.6, kNone}, {kPost, 0.4, 6}},
    {{kRot, 0.8, 8}, {kCol, 0.4, 0}},      {{kRot, 0.4, 9}, {kEq, 0.6, kNone}},
    {{kEq, 0.0, kNone}, {kEq, 0.8, kNone}}, {{kInv, 0.6, kNone}, {kEq, 1.0, kNone}},
    {{kCol, 0.6, 4}, {kCon, 1.0, 8}},      {{kRot, 0.8, 8}, {kCol, 1.0, 2}},
    {{kCol, 0.8, 8}, {kSol, 0.8, 7}},      {{kSha, 0.4, 7}, {kInv, 0.6, kNone}},
    {{kShX, 0.6, 5}, {kEq, 1.0, kNone}},   {{kCol, 0.4, 0}, {kEq, 0.6, kNone}},
    {{kEq, 0.4, kNone}, {kSol, 0.2, 4}},   {{kSol, 0.6, 5}, {kAuto, 0.6, kNone}},
    {{kInv, 0.6, kNone}, {kEq, 1.0, kNone}}, {{kCol, 0.6, 4}, {kCon, 1.0, 8}},
    {{kEq, 0.8, kNone}, {kEq, 0.6, kNone}},
};

constexpr SubPolicy kCifar10[25] = {
    {{kInv, 0.1, kNone}, {kCon, 0.2, 6}},  {{kRot, 0.7, 2}, {kTrX, 0.3, 9}},
    {{kSha, 0.8, 1}, {kSha, 0.9, 3}},      {{kShY, 0.5, 8}, {kTrY, 0.7, 9}},
    {{kAuto, 0.5, kNone}, {kEq, 0.9, kNone}}, {{kShY, 0.2, 7}, {kPost, 0.3, 7}},
    {{kCol, 0.4, 3}, {kBri, 0.6, 7}},      {{kSha, 0.3, 9}, {kBri, 0.7, 9}},
    {{kEq, 0.6, kNone}, {kEq, 0.5, kNone}}, {{kCon, 0.6, 7}, {kSha, 0.6, 5}},
    {{kCol, 0.7, 7}, {kTrX, 0.5, 8}},      {{kEq, 0.3, kNone}, {kAuto, 0.4, kNone}},
    {{kTrY, 0.4, 3}, {kSha, 0.2, 6}},      {{kBri, 0.9, 6}, {kCol, 0.2, 8}},
    {{kSol, 0.5, 2}, {kInv, 0.0, kNone}},  {{kEq, 0.2, kNone}, {kAuto, 0.6, kNone}},
    {{kEq, 0.2, kNone}, {kEq, 0.6, kNone}}, {{kCol, 0.9, 9}, {kEq, 0.6, kNone}},
    {{kAuto, 0.8, kNone}, {kSol, 0.2, 8}}, {{kBri, 0.1, 3}, {kCol, 0.7, 0}},
    {{kSol, 0.4, 5}, {kAuto, 0.9, kNone}}, {{kTrY, 0.9, 9}, {kTrY, 0.7, 9}},
    {{kAuto, 0.9, kNone}, {kSol, 0.8, 3}}, {{kEq, 0.8, kNone}, {kInv, 0.1, kNone}},
    {{kTrY, 0.7, 9}, {kAuto, 0.9, kNone}},
};

constexpr SubPolicy kSvhn[25] = {
    {{kShX, 0.9, 4}, {kInv, 0.2, kNone}},  {{kShY, 0.9, 8}, {kInv, 0.7, kNone}},
    {{kEq, 0.6, kNone}, {kSol, 0.6, 6}},   {{kInv, 0.9, kNone}, {kEq, 0.6, kNone}},
    {{kEq, 0.6, kNone}, {kRot, 0.9, 3}},   {{kShX, 0.9, 4}, {kAuto, 0.8, kNone}},
    {{kShY, 0.9, 8}, {kInv, 0.4, kNone}},  {{kShY, 0.9, 5}, {kSol, 0.2, 6}},
    {{kInv, 0.9, kNone}, {kAuto, 0.8, kNone}}, {{kEq, 0.6, kNone}, {kRot, 0.9, 3}},
    {{kShX, 0.9, 4}, {kSol, 0.3, 3}},      {{kShY, 0.8, 8}, {kInv, 0.7, kNone}},
    {{kEq, 0.9, kNone}, {kTrY, 0.6, 6}},   {{kInv, 0.9, kNone}, {kEq, 0.6, kNone}},
    {{kCon, 0.3, 3}, {kRot, 0.8, 4}},      {{kInv, 0.8, kNone}, {kTrY, 0.0, 2}},
    {{kShY, 0.7, 6}, {kSol, 0.4, 8}},      {{kInv, 0.6, kNone}, {kRot, 0.8, 4}},
    {{kShY, 0.3, 7}, {kTrX, 0.9, 3}},      {{kShX, 0.1, 6}, {kInv, 0.6, kNone}},
    {{kSol, 0.7, 2}, {kTrY, 0.6, 7}},      {{kShY, 0.8, 4}, {kInv, 0.8, kNone}},
    {{kShX, 0.7, 9}, {kTrY, 0.8, 3}},      {{kShY, 0.8, 5}, {kAuto, 0.7, kNone}},
    {{kShX, 0.7, 2}, {kInv, 0.1, kNone}},
};

class AutoAugment : public Op {
 public:
  AutoAugment(const SubPolicy* policies, policy::Geometry geometry)
      : policies_(policies), geometry_(geometry) {}

  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    // get_params(transform_num): policy_id, probs = torch.rand((2,)), signs =
    // torch.randint(2, (2,)).
    params->Push(static_cast<double>(rng.UniformInt(0, 25)));
    params->Push(rng.Uniform(0, 1));
    params->Push(rng.Uniform(0, 1));
    params->Push(static_cast<double>(rng.UniformInt(0, 2)));
    params->Push(static_cast<double>(rng.UniformInt(0, 2)));
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    const int id = static_cast<int>(p.v[0]);
    if (p.n != 5 || id < 0 || id >= 25) {
      return absl::InvalidArgumentError(
          "auto_augment: params are policy_id, probs[0], probs[1], signs[0], signs[1]");
    }
    for (int i = 0; i < 2; ++i) {
      const Step& step = policies_[id][i];
      if (!(p.v[1 + i] <= step.p)) continue;
      const Space& space = kSpace[static_cast<int>(step.op)];
      double magnitude =
          step.magnitude == kNone
              ? 0.0
              : policy::SpaceMagnitude(space, kBins, step.magnitude, image.rgb->width,
                                       image.rgb->height);
      if (space.is_signed && p.v[3 + i] == 0) magnitude = -magnitude;
      if (absl::Status s = policy::ApplySubOp(step.op, magnitude, geometry_, image); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

 private:
  const SubPolicy* const policies_;
  const policy::Geometry geometry_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{kName,
              "AutoAugment: one of 25 learned two-step sub-policies (imagenet, cifar10 or "
              "svhn); uint8 pixels",
              {{"policy", "imagenet", "imagenet, cifar10 or svhn", "the learned policy set"},
               {"interpolation", "nearest", "nearest, bilinear or bicubic",
                "the filter of the geometric sub-ops (PIL's)"},
               {"fill", "null", "null, a number or [r, g, b] in [0, 255]",
                "the colour outside the moved image (null: black)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string& name = args.Word("policy");
      const SubPolicy* policies = name == "imagenet"  ? kImageNet
                                  : name == "cifar10" ? kCifar10
                                  : name == "svhn"    ? kSvhn
                                                      : nullptr;
      if (policies == nullptr) {
        return ArgError(kName, "policy", "imagenet, cifar10 or svhn", args.Get("policy"));
      }
      policy::Geometry geometry;
      if (absl::Status s = policy::ReadGeometry(kName, args, &geometry); !s.ok()) return s;
      return std::unique_ptr<Op>(new AutoAugment(policies, geometry));
    });

}  // namespace
}  // namespace flowloader::augment
