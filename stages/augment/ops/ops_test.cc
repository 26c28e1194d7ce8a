// ops_test: the op registry, the list text, and what ViewProgram::Create accepts and
// refuses; the default list runs the fused head byte for byte.
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/augment/transform.h"

namespace flowloader::augment {
namespace {

absl::StatusOr<std::unique_ptr<ViewProgram>> Program(const std::string& text,
                                                     int* failed = nullptr) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  if (!ops.ok()) return ops.status();
  return ViewProgram::Create(*ops, failed);
}

std::string Refusal(const std::string& text, int* failed = nullptr) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> p = Program(text, failed);
  return p.ok() ? "accepted" : std::string(p.status().message());
}

TEST(OpRegistryTest, EveryOpCreatesWithItsDefaults) {
  for (const std::string& name : OpRegistry::Global().Names()) {
    absl::StatusOr<std::unique_ptr<Op>> op = OpRegistry::Global().Create(name, {});
    EXPECT_TRUE(op.ok()) << name << ": " << op.status();
  }
}

TEST(OpListTextTest, RoundTrips) {
  const std::string text =
      "random_resized_crop(scale=[0.4, 1.0], size=224); random_horizontal_flip(); normalize()";
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 3u);
  EXPECT_EQ((*ops)[0].args.at("scale"), "[0.4, 1.0]");
  EXPECT_EQ(OpListText(*ops), text);
}

TEST(ViewProgramTest, RefusesAnUnknownOpWithASuggestion) {
  int failed = -2;
  EXPECT_EQ(Refusal("random_resized_crop(size=64); random_horizntal_flip()", &failed),
            "op 2 (random_horizntal_flip): unknown op 'random_horizntal_flip' (did you mean "
            "'random_horizontal_flip'?)");
  EXPECT_EQ(failed, 1);
}

TEST(ViewProgramTest, RefusesOutOfRangeArguments) {
  EXPECT_TRUE(absl::StrContains(Refusal("random_resized_crop(size=64, p=1.5)"),
                                "p must be a number in [0, 1], got 1.5"));
  EXPECT_TRUE(absl::StrContains(Refusal("normalize(std=0)"), "std must be > 0"));
}

TEST(ViewProgramTest, RefusesAPixelOpAfterNormalize) {
  int failed = -2;
  EXPECT_EQ(Refusal("center_crop(size=8); normalize(); random_horizontal_flip()", &failed),
            "op 3 (random_horizontal_flip): works on uint8 pixels, so it must come before "
            "normalize (op 2)");
  EXPECT_EQ(failed, 2);
}

TEST(ViewProgramTest, RefusesAnEmptyListAndAnUnfixedSize) {
  EXPECT_TRUE(absl::StrContains(Refusal(""), "a view needs at least one op"));
  EXPECT_TRUE(absl::StrContains(Refusal("resize(size=64); normalize()"),
                                "the view's output size depends on the image"));
  // A random crop-and-resize that may not apply leaves the size open too.
  EXPECT_TRUE(absl::StrContains(Refusal("random_resized_crop(size=64, p=0.5)"),
                                "depends on the image"));
}

TEST(ViewProgramTest, ShapesFollowNormalize) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> f = Program("resize(size=[20, 30]); normalize()");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE((*f)->is_float());
  EXPECT_EQ((*f)->shape(), (std::array<int64_t, 3>{3, 20, 30}));
  EXPECT_EQ((*f)->head(), nullptr);  // Not a crop-and-resize: the whole image.
  absl::StatusOr<std::unique_ptr<ViewProgram>> u = Program("random_resized_crop(size=32)");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_FALSE((*u)->is_float());
  EXPECT_EQ((*u)->shape(), (std::array<int64_t, 3>{32, 32, 3}));
  EXPECT_NE((*u)->head(), nullptr);
}

decode::DecodedImage Gradient(int w, int h) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  for (size_t i = 0; i < d.image.pixels.size(); ++i) d.image.pixels[i] = (i * 7 + i / 97) & 255;
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

// The default list is augment's train mode: the same plan and the same bytes.
TEST(ViewProgramTest, DefaultListIsTheFusedTrainPass) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> p =
      Program("random_resized_crop(size=48); random_horizontal_flip(); normalize()");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_NE((*p)->head(), nullptr);
  TransformOptions o;
  o.image_size = 48;
  absl::StatusOr<std::unique_ptr<Transform>> t = Transform::Create(o);
  ASSERT_TRUE(t.ok());
  const decode::DecodedImage img = Gradient(120, 90);
  for (uint64_t index = 0; index < 20; ++index) {
    SampleRng a(3, 0, index, 1), b(3, 0, index, 1);
    const CropPlan plan = (*p)->head()->Plan(120, 90, a);
    const CropPlan want = (*t)->Plan(120, 90, b);
    std::vector<float> got(3 * 48 * 48), ref(3 * 48 * 48);
    ASSERT_TRUE((*p)->Run(img, &plan, {3, 0, index}, 1, got.data()).ok());
    ASSERT_TRUE((*t)->Apply(img, want, ref.data()).ok());
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)), 0) << index;
  }
}

// A list that is not fused (a pixel op between the head and normalize) gives the same
// pixels where that op does nothing: the unfused path rounds and normalizes as the fused.
TEST(ViewProgramTest, UnfusedPathMatchesFusedWhereTheMiddleOpIsIdentity) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> fused =
      Program("random_resized_crop(size=40); normalize()");
  absl::StatusOr<std::unique_ptr<ViewProgram>> split =
      Program("random_resized_crop(size=40); center_crop(size=40); normalize()");
  ASSERT_TRUE(fused.ok() && split.ok());
  const decode::DecodedImage img = Gradient(77, 64);
  SampleRng rng(1, 0, 5, 1);
  const CropPlan plan = (*fused)->head()->Plan(77, 64, rng);
  std::vector<float> a(3 * 40 * 40), b(3 * 40 * 40);
  ASSERT_TRUE((*fused)->Run(img, &plan, {1, 0, 5}, 1, a.data()).ok());
  ASSERT_TRUE((*split)->Run(img, &plan, {1, 0, 5}, 1, b.data()).ok());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(OpStreamTest, DerivedPerViewAndOp) {
  EXPECT_NE(OpStream(1, 0), OpStream(1, 1));
  EXPECT_NE(OpStream(1, 0), OpStream(257, 0));
  EXPECT_EQ(OpStream(257, 3), OpStream(257, 3));
}

}  // namespace
}  // namespace flowloader::augment
