// random_choice.cc: torchvision's RandomChoice(transforms, p): one of the sub-ops,
// picked as `random.choices(transforms, weights=p)` picks it (one uniform draw u:
// floor(u * n) without weights, else the first index whose cumulative weight exceeds
// u * total, as Python's bisect does). The sample's stream stands in for Python's
// `random`. torchvision's `p` is `weights` here: every op's `p` is the probability that
// it applies (random_choice with p < 1 is RandomApply([RandomChoice(...)])).
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/sub_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomChoice : public internal::SubOpsOp {
 public:
  RandomChoice(internal::SubOps subs, std::vector<double> cumulative)
      : SubOpsOp(std::move(subs)), cumulative_(std::move(cumulative)) {}

  // Every choice's size, where they agree.
  OpSize OutputSize(OpSize in) const override {
    OpSize out = in;
    for (size_t i = 0; i < subs().size(); ++i) {
      const OpSize s = subs().SizeAfter({i}, in);
      if (i > 0 && !(s == out)) return OpSize{};
      out = s;
    }
    return out;
  }

  // Params: the chosen index, the sub-ops' seed.
  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    const size_t n = subs().size();
    const double u = rng.Uniform(0, 1);  // Python's random.random().
    size_t k = 0;
    if (cumulative_.empty()) {
      k = static_cast<size_t>(std::floor(u * static_cast<double>(n)));
    } else {  // bisect_right(cum_weights, u * total, 0, n - 1).
      const double x = u * cumulative_.back();
      while (k < n - 1 && !(x < cumulative_[k])) ++k;
    }
    params->Push(static_cast<double>(std::min(k, n == 0 ? 0 : n - 1)));
    params->Push(internal::SubOps::Seed(rng));
  }

 protected:
  absl::Status Order(const OpParams& params, std::vector<size_t>* order,
                     uint64_t* seed) const override {
    if (params.Size() != 2) return absl::InvalidArgumentError("params must be [index, seed]");
    const double k = params.At(0);
    order->clear();
    if (subs().size() > 0) {
      if (!(k >= 0 && k < static_cast<double>(subs().size())) || k != std::floor(k)) {
        return absl::InvalidArgumentError(absl::StrCat("the chosen index must be an integer in [0, ",
                                                       subs().size(), "), got ", k));
      }
      order->push_back(static_cast<size_t>(k));
    }
    return internal::SubOps::ReadSeed(params.At(1), seed);
  }

 private:
  const std::vector<double> cumulative_;  // Empty: equal weights.
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_choice",
              "applies one of its ops, picked with the given weights (torchvision's "
              "RandomChoice; its p is `weights` here)",
              {internal::SubOpsArg(),
               {"weights", "null", "null or one number >= 0 per op, not all 0",
                "the ops' relative weights (torchvision's p; null: equal)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      absl::StatusOr<internal::SubOps> subs =
          internal::SubOps::Create("random_choice", args, "transforms");
      if (!subs.ok()) return subs.status();
      const OpValue& w = args.Get("weights");
      std::vector<double> cumulative;
      if (!w.is_none) {
        const std::string what = absl::StrCat("null or ", subs->size(),
                                              " numbers >= 0 (one per op), not all 0");
        if (!w.is_list || w.numbers.size() != subs->size() || !w.ops.empty()) {
          return ArgError("random_choice", "weights", what, w);
        }
        double total = 0;
        for (double v : w.numbers) {
          if (!(v >= 0)) return ArgError("random_choice", "weights", what, w);
          total += v;  // Python's itertools.accumulate.
          cumulative.push_back(total);
        }
        if (!(total > 0) || !std::isfinite(total)) {
          return ArgError("random_choice", "weights", what, w);
        }
      }
      return std::unique_ptr<Op>(new RandomChoice(*std::move(subs), std::move(cumulative)));
    });

}  // namespace
}  // namespace flowloader::augment
