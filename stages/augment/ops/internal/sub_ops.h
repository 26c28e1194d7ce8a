// sub_ops.h: the ops that run other ops (compose, random_choice, random_order:
// torchvision's RandomApply over several transforms, RandomChoice and RandomOrder).
//
// Such an op's `transforms` argument is an op list written as a value,
// `[random_horizontal_flip(); color_jitter(brightness=0.4)]`. Its own Draw draws what
// torchvision's class draws (which sub-op, which order) and a seed; Apply runs the
// sub-ops it picked, each drawing its parameters (its p, then Draw) from a stream of that
// seed and its position in the list, on the image as it stands when the sub-op runs. So
// the op's parameters fix its output, as every op's do, and MoveTargets / MoveLabels
// replay the same draws on the canvas the boxes and maps are on.
//
// Sub-ops read and write uint8 pixels (normalize and the tensor ops go after the op),
// draw without the sample's boxes (random_iou_crop is refused inside) and are not Python
// Lambdas.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_SUB_OPS_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_SUB_OPS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment::internal {

// kMaxSubOps is the most sub-ops one op holds (random_order checks every order's size,
// 8! of them, when it is made).
inline constexpr size_t kMaxSubOps = 8;
// kMaxNesting is how deep ops over op lists may nest (a compose in a random_choice in
// ...): each level is a Create on the stack (5000 levels overflowed it).
inline constexpr int kMaxNesting = 32;

// SubOps is the list an op runs from: made from its `transforms` argument.
class SubOps {
 public:
  // Create reads `op`'s argument `arg` (an op list value) and makes each sub-op. A
  // refusal is one line "OP: ARG: ..." naming the sub-op by its position and name.
  static absl::StatusOr<SubOps> Create(const std::string& op, const OpArgs& args,
                                       const std::string& arg);

  size_t size() const { return ops_.size(); }
  const Op& op(size_t i) const { return *ops_[i]; }
  std::vector<const Op*> List() const;

  // SizeAfter is the image size after sub-ops `order` run on an `in` image (unknown
  // where a sub-op that may not apply changes the size).
  OpSize SizeAfter(const std::vector<size_t>& order, OpSize in) const;

  // Seed draws the seed of the sub-ops' streams (an integer below 2^52, exact in a
  // double, as OpParams holds it); ReadSeed checks one given in params.
  static double Seed(SampleRng& rng);
  static absl::Status ReadSeed(double value, uint64_t* seed);

  // Run runs sub-op i on `image` (its p, its draw from stream (seed, i), Apply).
  absl::Status Run(size_t i, uint64_t seed, OpImage& image) const;
  // MoveTargets / MoveLabels replay sub-op i's draw on the targets' canvas (the label
  // map's size) and move them as Run moved the pixels.
  absl::Status MoveTargets(size_t i, uint64_t seed, detection::Targets* targets) const;
  absl::Status MoveLabels(size_t i, uint64_t seed, LabelPlane& plane) const;

 private:
  // Draw is sub-op i's p and parameters for a width × height image (false: not applied).
  bool Draw(size_t i, uint64_t seed, int width, int height, OpParams* params) const;

  std::vector<std::shared_ptr<const Op>> ops_;
};

// SubOpsArg is the `transforms` argument's schema line.
ArgSchema SubOpsArg();

// SubOpsOp is an op that runs sub-ops: Order says which, in which order, with which
// seed, for `params`; Apply, MoveTargets and MoveLabels run them so. It moves targets
// and label maps through its sub-ops (graph/transforms_stage.cc checks each sub-op can,
// by SubOps(), and names the one that cannot).
class SubOpsOp : public Op {
 public:
  explicit SubOpsOp(internal::SubOps subs) : subs_(std::move(subs)) {}

  absl::Status Apply(const OpParams& params, OpImage& image) const override;
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams& params, detection::Targets* targets) const override;
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams& params, LabelPlane& plane) const override;
  std::vector<const Op*> SubOps() const override { return subs_.List(); }

 protected:
  // Order checks `params` and gives the sub-ops to run, in order, and their seed.
  virtual absl::Status Order(const OpParams& params, std::vector<size_t>* order,
                             uint64_t* seed) const = 0;
  const internal::SubOps& subs() const { return subs_; }

 private:
  internal::SubOps subs_;
};

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_SUB_OPS_H_
