// output_bound_test: Op::OutputBound is an upper bound on every image the op makes. A
// padded batch (size_divisibility) sizes each slot by it, so an image past it would be
// refused at run time: each bounded op is drawn and applied on many input sizes within an
// input bound (portrait, landscape, tiny, the bound itself), and every output fits.
#include <algorithm>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/testing/op_test_util.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"

namespace flowloader::augment {
namespace {

struct BoundCase {
  std::string op;
  OpSize in_bound;    // Inputs are drawn up to this (0 x 0: up to 200 x 200, no bound given).
  OpSize want_bound;  // What OutputBound(in_bound) says.
};

class OutputBoundTest : public ::testing::TestWithParam<BoundCase> {};

TEST_P(OutputBoundTest, EveryOutputFitsTheBound) {
  const BoundCase c = GetParam();
  std::unique_ptr<Op> op = testing::MakeOp(c.op);
  ASSERT_NE(op, nullptr);
  const OpSize bound = op->OutputBound(c.in_bound);
  EXPECT_EQ(bound.width, c.want_bound.width) << c.op;
  EXPECT_EQ(bound.height, c.want_bound.height) << c.op;
  const int max_w = c.in_bound.Known() ? c.in_bound.width : 200;
  const int max_h = c.in_bound.Known() ? c.in_bound.height : 200;
  SampleRng sizes(7, 0, 0);
  int reached_w = 0, reached_h = 0;
  for (int i = 0; i < 300; ++i) {
    // The bound itself, then portrait and landscape inputs within it (up to 4:1).
    const int w = i == 0 ? max_w : static_cast<int>(sizes.UniformInt(max_w / 4 + 1, max_w + 1));
    const int h = i == 0 ? max_h : static_cast<int>(sizes.UniformInt(max_h / 4 + 1, max_h + 1));
    Image rgb, spare;
    rgb.Resize(w, h, 3);
    std::fill(rgb.pixels.begin(), rgb.pixels.end(), 90);
    OpImage image;
    image.rgb = &rgb;
    image.spare = &spare;
    SampleRng rng(1, 0, static_cast<uint64_t>(i));
    OpParams params;
    op->Draw(w, h, rng, &params);
    ASSERT_TRUE(op->Apply(params, image).ok()) << c.op << " on " << w << "x" << h;
    EXPECT_LE(rgb.width, bound.width) << c.op << " on " << w << "x" << h;
    EXPECT_LE(rgb.height, bound.height) << c.op << " on " << w << "x" << h;
    reached_w = std::max(reached_w, rgb.width);
    reached_h = std::max(reached_h, rgb.height);
  }
  // Not a loose bound: the draws come near it.
  EXPECT_GE(reached_w, bound.width * 3 / 4) << c.op;
  EXPECT_GE(reached_h, bound.height * 3 / 4) << c.op;
}

INSTANTIATE_TEST_SUITE_P(
    Ops, OutputBoundTest,
    ::testing::Values(
        BoundCase{"resize(size=48, max_size=80)", {}, {80, 80}},
        BoundCase{"scale_jitter(target_size=[64, 64], scale_range=[0.5, 1.5])", {}, {97, 97}},
        BoundCase{"random_shortest_size(min_size=[32, 48], max_size=80)", {}, {81, 81}},
        BoundCase{"random_zoom_out(side_range=[1.0, 3.0])", {60, 40}, {180, 120}},
        BoundCase{"random_rotation(degrees=45, expand=true)", {60, 40}, {75, 75}},
        BoundCase{"pad(padding=[3, 5])", {60, 40}, {66, 50}},
        BoundCase{"random_iou_crop()", {60, 40}, {60, 40}},
        BoundCase{"resize(size=[30, 50])", {}, {50, 30}},
        BoundCase{"random_horizontal_flip(p=1)", {60, 40}, {60, 40}}));

TEST(OutputBoundTest, ResizeRefusesAnImageItWouldMakeEmpty) {
  // 1 x 200 with size 48, max_size 80: the shorter side would be int(80 * 48 / 9600) = 0.
  std::unique_ptr<Op> op = testing::MakeOp("resize(size=48, max_size=80)");
  ASSERT_NE(op, nullptr);
  Image rgb, spare;
  rgb.Resize(1, 200, 3);
  OpImage image;
  image.rgb = &rgb;
  image.spare = &spare;
  const absl::Status s = op->Apply(OpParams(), image);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("raise max_size"), std::string::npos) << s;
}

TEST(OutputBoundTest, ResizeWithoutMaxSizeHasNoBound) {
  std::unique_ptr<Op> op = testing::MakeOp("resize(size=48)");
  ASSERT_NE(op, nullptr);
  EXPECT_FALSE(op->OutputBound(OpSize{100, 100}).Known());
  EXPECT_FALSE(testing::MakeOp("random_zoom_out()")->OutputBound(OpSize{}).Known());
}

}  // namespace
}  // namespace flowloader::augment
