// gather_test: every op that says it only moves pixels (Op::Gather: flips, crops, pads)
// writes with Apply exactly the pixels its maps gather, on images of odd sizes, 1x1
// included, with every padding mode; the eager path (python/internal/pil_rows.h) moves
// PIL pixels through those maps in place of Apply, so the two must agree byte for byte.
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/ops/internal/numpy_pad.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/augment/testing/op_test_util.h"

namespace flowloader::augment {
namespace {

using testing::MakeOp;

Image Noise(int width, int height, std::mt19937& gen) {
  Image img;
  img.Resize(width, height, 3);
  for (uint8_t& v : img.pixels) v = static_cast<uint8_t>(gen());
  return img;
}

TEST(GatherTest, ApplyWritesWhatTheMapsGather) {
  const char* texts[] = {
      "random_horizontal_flip(p=1)",
      "random_vertical_flip(p=1)",
      "center_crop(size=[5, 8])",
      "center_crop(size=30)",
      "pad(padding=3, fill=[1, 2, 3])",
      "pad(padding=[1, 2, 5, 4], padding_mode=reflect)",
      "pad(padding=[9, 1], padding_mode=symmetric)",
      "pad(padding=[2, 7], padding_mode=edge)",
      "random_crop(size=6, padding=4, padding_mode=reflect)",
      "random_crop(size=[9, 4], pad_if_needed=true, fill=7)",
      "random_crop(size=3, padding=[2, 1, 0, 5], padding_mode=symmetric)",
  };
  std::mt19937 gen(7);
  for (const char* text : texts) {
    std::unique_ptr<Op> op = MakeOp(text);
    for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{40, 33}, std::pair{5, 17}}) {
      SampleRng rng(1, 0, static_cast<uint64_t>(w * 100 + h), 0);
      OpParams params;
      op->Draw(w, h, rng, &params);
      GatherMaps maps;
      Image src = Noise(w, h, gen);
      Image a = src, spare;
      OpImage image;
      image.rgb = &a;
      image.spare = &spare;
      const absl::Status applied = op->Apply(params, image);
      if (!op->Gather(params, w, h, &maps)) {
        // Only a crop larger than the padded image has no maps; Apply refuses it too.
        EXPECT_FALSE(applied.ok()) << text << " " << w << "x" << h;
        continue;
      }
      ASSERT_TRUE(applied.ok()) << text << ": " << applied;
      Image gathered;
      internal::GatherThroughMaps(src, maps.x_src, maps.y_src, maps.fill, &gathered);
      EXPECT_EQ(gathered.width, image.rgb->width) << text;
      EXPECT_EQ(gathered.height, image.rgb->height) << text;
      EXPECT_TRUE(gathered.pixels == image.rgb->pixels) << text << " " << w << "x" << h;
    }
  }
}

TEST(GatherTest, OpsThatComputePixelsHaveNoMaps) {
  GatherMaps maps;
  OpParams params;
  for (const char* text : {"grayscale()", "random_invert(p=1)", "resize(size=8)"}) {
    EXPECT_FALSE(MakeOp(text)->Gather(params, 8, 8, &maps)) << text;
  }
}

}  // namespace
}  // namespace flowloader::augment
