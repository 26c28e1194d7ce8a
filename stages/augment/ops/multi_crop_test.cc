// multi_crop_test: five_crop / ten_crop in a view's list: the view is the crops stacked,
// each crop the op's Apply of the list's image so far, the ops after it run per crop
// from its own stream; and the lists that cannot hold one are refused in one line.
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"

namespace flowloader::augment {
namespace {

absl::StatusOr<std::unique_ptr<ViewProgram>> Program(const std::string& text) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  if (!ops.ok()) return ops.status();
  return ViewProgram::Create(*ops);
}

std::string Refusal(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> p = Program(text);
  return p.ok() ? "accepted" : std::string(p.status().message());
}

decode::DecodedImage Noise(int w, int h, uint8_t value = 0) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  uint32_t x = 12345;
  for (uint8_t& p : d.image.pixels) {
    x = x * 1664525u + 1013904223u;
    p = value != 0 ? value : static_cast<uint8_t>(x >> 24);
  }
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

// Runs a uint8 list on `img` and returns its bytes.
std::vector<uint8_t> RunBytes(const ViewProgram& p, const decode::DecodedImage& img,
                              uint64_t index = 0) {
  std::vector<uint8_t> out(p.output_bytes());
  absl::Status s = p.Run(img, nullptr, {7, 0, index}, 1, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(MultiCropTest, ShapesAndBytesCountEveryCrop) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> f =
      Program("resize(size=[40, 52]); five_crop(size=[24, 30]); normalize()");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->crops(), 5);
  EXPECT_EQ((*f)->shape(), (std::array<int64_t, 3>{3, 24, 30}));
  EXPECT_EQ((*f)->output_bytes(), 5u * 3 * 24 * 30 * sizeof(float));
  absl::StatusOr<std::unique_ptr<ViewProgram>> u = Program("ten_crop(size=16)");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ((*u)->crops(), 10);
  EXPECT_EQ((*u)->shape(), (std::array<int64_t, 3>{16, 16, 3}));
  EXPECT_EQ((*u)->output_bytes(), 10u * 16 * 16 * 3);
  absl::StatusOr<std::unique_ptr<ViewProgram>> plain = Program("center_crop(size=16)");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->crops(), 1);
  // The image the crops come from is counted in the working memory: 40x52 kept beside
  // the two working images.
  EXPECT_EQ((*f)->scratch_bytes(), 2u * 3 * 40 * 52 + 3u * 40 * 52);
}

// Each crop of the view is the op's own Apply(c) on the image the ops before it made.
TEST(MultiCropTest, EachCropIsTheOpsCropOfTheImageSoFar) {
  const decode::DecodedImage img = Noise(61, 47);
  for (const std::string crop : {"five_crop(size=[24, 30])", "ten_crop(size=[24, 30])",
                                 "ten_crop(size=[24, 30], vertical_flip=true)"}) {
    absl::StatusOr<std::unique_ptr<ViewProgram>> before = Program("resize(size=[40, 51])");
    absl::StatusOr<std::unique_ptr<ViewProgram>> list =
        Program("resize(size=[40, 51]); " + crop);
    ASSERT_TRUE(before.ok() && list.ok()) << crop;
    const std::vector<uint8_t> resized = RunBytes(**before, img);
    const std::vector<uint8_t> got = RunBytes(**list, img);
    const int crops = (*list)->crops();
    ASSERT_EQ(got.size(), static_cast<size_t>(crops) * 24 * 30 * 3);
    absl::StatusOr<std::vector<OpText>> text = ParseOpListText(crop);
    absl::StatusOr<std::unique_ptr<Op>> op =
        OpRegistry::Global().Create((*text)[0].name, (*text)[0].args);
    ASSERT_TRUE(op.ok());
    for (int c = 0; c < crops; ++c) {
      Image rgb, spare;
      rgb.Resize(51, 40, 3);
      std::memcpy(rgb.pixels.data(), resized.data(), resized.size());
      OpImage image;
      image.rgb = &rgb;
      image.spare = &spare;
      OpParams params;
      params.Push(c);
      ASSERT_TRUE((*op)->Apply(params, image).ok());
      ASSERT_EQ(rgb.pixels.size(), 24u * 30 * 3);
      EXPECT_EQ(std::memcmp(got.data() + c * rgb.pixels.size(), rgb.pixels.data(),
                            rgb.pixels.size()),
                0)
          << crop << " crop " << c;
    }
  }
}

// The ops after the crop run on each crop: normalize writes each crop's float part as a
// list of that crop alone would.
TEST(MultiCropTest, NormalizeAfterTheCropWritesEachCrop) {
  const decode::DecodedImage img = Noise(40, 30);
  absl::StatusOr<std::unique_ptr<ViewProgram>> u = Program("five_crop(size=[20, 24])");
  absl::StatusOr<std::unique_ptr<ViewProgram>> f =
      Program("five_crop(size=[20, 24]); normalize(mean=[0.5, 0.4, 0.3], std=[0.2, 0.3, 0.4])");
  absl::StatusOr<std::unique_ptr<ViewProgram>> one =
      Program("center_crop(size=[20, 24]); normalize(mean=[0.5, 0.4, 0.3], std=[0.2, 0.3, 0.4])");
  ASSERT_TRUE(u.ok() && f.ok() && one.ok());
  const std::vector<uint8_t> crops = RunBytes(**u, img);
  std::vector<float> got((*f)->output_bytes() / sizeof(float));
  ASSERT_TRUE((*f)->Run(img, nullptr, {7, 0, 0}, 1, got.data()).ok());
  const size_t n = 3 * 20 * 24;
  for (int c = 0; c < 5; ++c) {
    decode::DecodedImage crop;
    crop.image.Resize(24, 20, 3);
    std::memcpy(crop.image.pixels.data(), crops.data() + c * n, n);
    std::vector<float> want(n);
    ASSERT_TRUE((*one)->Run(crop, nullptr, {7, 0, 0}, 1, want.data()).ok());
    EXPECT_EQ(std::memcmp(got.data() + c * n, want.data(), n * sizeof(float)), 0) << c;
  }
}

// Random ops after the crop draw per crop (torchvision's Lambda applying a transform to
// each crop draws each time); a sample repeats byte for byte.
TEST(MultiCropTest, RandomOpsAfterTheCropDrawPerCropAndRepeat) {
  const decode::DecodedImage grey = Noise(20, 20, 100);  // Every pixel 100.
  absl::StatusOr<std::unique_ptr<ViewProgram>> p =
      Program("ten_crop(size=8); random_invert(p=0.5)");
  ASSERT_TRUE(p.ok()) << p.status();
  int mixed = 0;
  for (uint64_t index = 0; index < 16; ++index) {
    const std::vector<uint8_t> a = RunBytes(**p, grey, index);
    EXPECT_EQ(a, RunBytes(**p, grey, index)) << index;
    int inverted = 0;
    for (int c = 0; c < 10; ++c) {
      const uint8_t v = a[static_cast<size_t>(c) * 8 * 8 * 3];
      ASSERT_TRUE(v == 100 || v == 155) << int{v};
      inverted += v == 155;
    }
    mixed += inverted > 0 && inverted < 10;
  }
  EXPECT_GT(mixed, 8);  // All ten alike has probability 2 / 1024 per sample.
}

TEST(MultiCropTest, ACropLargerThanTheImageIsRefusedPerSample) {
  absl::StatusOr<std::unique_ptr<ViewProgram>> p = Program("five_crop(size=[24, 30])");
  ASSERT_TRUE(p.ok());
  std::vector<uint8_t> out((*p)->output_bytes());
  const absl::Status s = (*p)->Run(Noise(29, 40), nullptr, {7, 0, 0}, 1, out.data());
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "five_crop: requested crop size (24, 30) is "
                                             "bigger than input size (40, 29)"))
      << s;
}

TEST(MultiCropTest, ListsThatCannotHoldOneAreRefused) {
  EXPECT_TRUE(absl::StrContains(Refusal("five_crop(size=32); ten_crop(size=16)"),
                                "op 2 (ten_crop): a view holds one five_crop or ten_crop"));
  EXPECT_TRUE(absl::StrContains(Refusal("five_crop(size=32, p=0.5)"),
                                "op 1 (five_crop): must apply to every sample (p=1)"));
  EXPECT_TRUE(absl::StrContains(Refusal("center_crop(size=32); normalize(); five_crop(size=8)"),
                                "op 3 (five_crop): works on uint8 pixels"));
  EXPECT_TRUE(absl::StrContains(
      Refusal("center_crop(size=32); random_choice(transforms=[five_crop(size=8); "
              "random_invert()])"),
      "op 1 (five_crop): it makes several crops, which a sub-op cannot"));
}

}  // namespace
}  // namespace flowloader::augment
