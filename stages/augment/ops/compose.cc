// compose.cc: torchvision's RandomApply over several transforms (and a Compose nested in
// RandomChoice or RandomOrder): the sub-ops in order, all under the op's one p draw
// (`if self.p < torch.rand(1): return img`), each then applying with its own p.
#include <memory>
#include <vector>

#include "stages/augment/ops/internal/sub_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class Compose : public internal::SubOpsOp {
 public:
  using SubOpsOp::SubOpsOp;

  OpSize OutputSize(OpSize in) const override { return subs().SizeAfter(Identity(), in); }

  // Params: the sub-ops' seed.
  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    params->Push(internal::SubOps::Seed(rng));
  }

 protected:
  absl::Status Order(const OpParams& params, std::vector<size_t>* order,
                     uint64_t* seed) const override {
    if (params.Size() != 1) return absl::InvalidArgumentError("params must be [seed]");
    *order = Identity();
    return internal::SubOps::ReadSeed(params.At(0), seed);
  }

 private:
  std::vector<size_t> Identity() const {
    std::vector<size_t> order(subs().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    return order;
  }
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"compose",
              "runs its ops in order, all with probability p (torchvision's RandomApply "
              "over several transforms)",
              {internal::SubOpsArg()}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      absl::StatusOr<internal::SubOps> subs = internal::SubOps::Create("compose", args,
                                                                       "transforms");
      if (!subs.ok()) return subs.status();
      return std::unique_ptr<Op>(new Compose(*std::move(subs)));
    });

}  // namespace
}  // namespace flowloader::augment
