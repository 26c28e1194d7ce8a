// random_order.cc: torchvision's RandomOrder(transforms): the sub-ops in an order
// shuffled as Python's `random.shuffle` shuffles [0, n) (for i from n - 1 down to 1,
// swap i with an index drawn uniformly from [0, i]); the sample's stream stands in for
// Python's `random`. Its size: where every order gives the same (each checked when the
// op is made, at most 8! orders).
#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/sub_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomOrder : public internal::SubOpsOp {
 public:
  using SubOpsOp::SubOpsOp;

  // Each sub-op's size is asked once per input size it meets (memo): the 8! orders ask
  // few distinct questions, and a random_order among the sub-ops used to run its own 8!
  // orders for every step of the outer's (10^11 steps: the spec never finished loading).
  OpSize OutputSize(OpSize in) const override {
    const size_t n = subs().size();
    std::vector<std::map<std::pair<int, int>, OpSize>> memo(n);
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    auto size_after = [&] {
      OpSize size = in;
      for (size_t i : order) {
        auto [it, added] = memo[i].try_emplace({size.width, size.height});
        if (added) it->second = subs().SizeAfter({i}, size);
        size = it->second;
      }
      return size;
    };
    const OpSize first = size_after();
    while (std::next_permutation(order.begin(), order.end())) {
      if (!(size_after() == first)) return OpSize{};
    }
    return first;
  }

  // Params: the order (n indices), the sub-ops' seed.
  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    std::vector<size_t> order(subs().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i = order.size(); i-- > 1;) {  // Python's shuffle: randbelow(i + 1).
      std::swap(order[i], order[static_cast<size_t>(rng.UniformInt(0, i + 1))]);
    }
    for (size_t i : order) params->Push(static_cast<double>(i));
    params->Push(internal::SubOps::Seed(rng));
  }

 protected:
  absl::Status Order(const OpParams& params, std::vector<size_t>* order,
                     uint64_t* seed) const override {
    const size_t n = subs().size();
    if (params.Size() != n + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("params must be an order of the ", n, " ops, then the seed"));
    }
    std::vector<bool> seen(n, false);
    order->clear();
    for (size_t k = 0; k < n; ++k) {
      const double v = params.At(k);
      const size_t i = v >= 0 && v < static_cast<double>(n) ? static_cast<size_t>(v) : n;
      if (i == n || static_cast<double>(i) != v || seen[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("params must be an order of [0, ", n, "), got ", v, " at ", k));
      }
      seen[i] = true;
      order->push_back(i);
    }
    return internal::SubOps::ReadSeed(params.At(n), seed);
  }
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_order",
              "applies its ops in a random order (torchvision's RandomOrder)",
              {internal::SubOpsArg()}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      absl::StatusOr<internal::SubOps> subs =
          internal::SubOps::Create("random_order", args, "transforms");
      if (!subs.ok()) return subs.status();
      return std::unique_ptr<Op>(new RandomOrder(*std::move(subs)));
    });

}  // namespace
}  // namespace flowloader::augment
