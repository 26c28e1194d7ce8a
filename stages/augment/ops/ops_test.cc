// ops_test: the op registry, the list text, and what ViewProgram::Create accepts and
// refuses; the default list runs the fused head byte for byte.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "stages/core/sample_error.h"
#include "stages/augment/ops/kernels/policy_ops.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/augment/transform.h"

// Allocations made by this thread (the global operator new counts them), for the
// tests that check that an op allocates nothing once its buffers are warm.
thread_local int64_t g_allocations = 0;

// Not inlined: at -O2 GCC 12 would otherwise see std::free meet a pointer from operator
// new inside std::vector and fail the build with -Wmismatched-new-delete.
__attribute__((noinline)) void* operator new(size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, size_t) noexcept { std::free(p); }

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

// Hostile numbers for every argument of every op: each is refused in one line that starts
// with the op and the argument the user wrote ("resize: max_size must be ..."), or the op
// is made; an integer beyond int range is never narrowed (it could wrap to a valid value).
TEST(OpRegistryTest, EveryArgumentRefusesHugeNumbersNamingTheOpAndArgument) {
  const OpRegistry& registry = OpRegistry::Global();
  for (const std::string& name : registry.Names()) {
    std::vector<std::string> args = {"p"};
    for (const ArgSchema& a : registry.Find(name)->args) args.push_back(a.name);
    for (const std::string& arg : args) {
      for (const char* value : {"4294967299", "2147483648", "-2147483649", "1e300",
                                "[4294967299, 4294967299]", "[2147483648, 3]"}) {
        absl::StatusOr<std::unique_ptr<Op>> op = registry.Create(name, {{arg, value}});
        if (op.ok()) continue;
        const std::string message(op.status().message());
        EXPECT_TRUE(absl::StartsWith(message, name + ": " + arg + " ") ||
                    absl::StartsWith(message, name + ": " + arg + ":"))
            << name << "(" << arg << "=" << value << "): " << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      }
    }
  }
}

// A megabyte-long value, op name or argument name is quoted cut to 200 characters with
// its length: the message stays a line (a 1 MB string gave a 1 MB ValueError before).
TEST(OpRegistryTest, HugeValuesAndNamesInMessagesAreCut) {
  const OpRegistry& registry = OpRegistry::Global();
  const std::string huge(1000000, 'x');
  const std::string list = "[" + std::string(200000, '1') + ", 2]";
  const std::string many = "[" + absl::StrJoin(std::vector<std::string>(100000, "1"), ", ") + "]";
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> cases = {
      {"resize", {{"size", huge}}},          {"resize", {{"size", "[" + huge}}},
      {"resize", {{"size", list + "x]"}}},   {"resize", {{"size", many}}},
      {"color_jitter", {{"hue", huge}}},     {"resize", {{huge, "1"}}},
      {huge, {}},                            {"pad", {{"padding", "[" + huge + ", 1]"}}},
  };
  for (const auto& [name, args] : cases) {
    absl::StatusOr<std::unique_ptr<Op>> op = registry.Create(name, args);
    ASSERT_FALSE(op.ok()) << name.substr(0, 20);
    const std::string message(op.status().message());
    EXPECT_LT(message.size(), 1000u) << message.substr(0, 300);
    EXPECT_TRUE(absl::StrContains(message, " characters)")) << message.substr(0, 300);
  }
}

// An op whose int argument was accepted keeps its value: these wrapped (or were refused
// against another argument's default) before.
TEST(ViewProgramTest, ValidArgumentsTorchvisionAcceptsAreAccepted) {
  for (const char* text :
       {"resize(size=100, max_size=200); center_crop(size=64); normalize()",
        "rand_augment(num_magnitude_bins=100, magnitude=50); center_crop(size=64)",
        "random_resized_crop(size=15000); normalize()"}) {
    EXPECT_EQ(Refusal(text), "accepted") << text;
  }
}

// A fused head the transform cannot plan says so in the op's words, never with an
// internal struct's name.
TEST(ViewProgramTest, AnEvalHeadRefusalNamesNoInternalOptions) {
  TransformOptions o;
  o.mode = Mode::kEval;
  o.image_size = 15000;
  absl::StatusOr<std::unique_ptr<Transform>> t = Transform::Create(o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().find("TransformOptions"), absl::string_view::npos)
      << t.status();
  EXPECT_TRUE(absl::StartsWith(t.status().message(), "image_size 15000")) << t.status();
  o.mode = Mode::kTrain;  // Train crops first: no resize before it, nothing to exceed.
  EXPECT_TRUE(Transform::Create(o).ok());
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

// A NUL in an argument's name (a spec's {"size\0": 32}) cut the message at it: "center_crop
// has no argument 'size"; control characters are escaped, and the message is one line.
TEST(OpRegistryTest, ControlCharactersInNamesAreEscaped) {
  const OpRegistry& registry = OpRegistry::Global();
  absl::StatusOr<std::unique_ptr<Op>> op =
      registry.Create("center_crop", {{std::string("size\0", 5), "32"}});
  ASSERT_FALSE(op.ok());
  std::string message(op.status().message());
  EXPECT_TRUE(absl::StrContains(message, "center_crop has no argument 'size\\0' (did you mean "
                                         "'size'?)"))
      << message;
  op = registry.Create("center_crop", {{"si\nze", "32"}});
  ASSERT_FALSE(op.ok());
  message = std::string(op.status().message());
  EXPECT_TRUE(absl::StrContains(message, "'si\\nze'")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(ViewProgramTest, RefusesAnUnknownOpWithASuggestion) {
  int failed = -2;
  EXPECT_EQ(Refusal("random_resized_crop(size=64); random_horizntal_flip()", &failed),
            "op 2: unknown op 'random_horizntal_flip' (did you mean "
            "'random_horizontal_flip'?)");
  EXPECT_EQ(failed, 1);
}

// Each refusal names the op once: an unknown op's message quotes its name (a 1 MB name
// was printed twice, 763 characters), and an argument's refusal does not repeat the op
// after its place ("op 1 (resize): resize: size must ...").
TEST(ViewProgramTest, ARefusalNamesTheOpOnce) {
  const std::string huge(1000000, 'q');
  const std::string unknown = Refusal(huge + "(); normalize()");
  EXPECT_LE(unknown.size(), 400u) << unknown.substr(0, 500);
  EXPECT_TRUE(absl::StartsWith(unknown, "op 1: unknown op 'qqq")) << unknown.substr(0, 500);
  EXPECT_LE(std::count(unknown.begin(), unknown.end(), 'q'), 200) << unknown.substr(0, 500);
  EXPECT_EQ(Refusal("random_resized_crop(size=32, scale=[1, 0]); normalize()"),
            "op 1 (random_resized_crop): scale must be [min, max] with 0 <= min <= max, got "
            "[1, 0]");
  EXPECT_TRUE(absl::StartsWith(Refusal("resize(sise=32); normalize()"),
                               "op 1 (resize) has no argument 'sise' (did you mean 'size'?)"))
      << Refusal("resize(sise=32); normalize()");
}

// torchvision's bool arguments that change nothing here (normalize's and random_erasing's
// inplace, resize's and random_resized_crop's antialias) are still bools: a list, a
// number or a word is refused naming the op and the argument (they took anything).
TEST(OpRegistryTest, BoolArgumentsTorchvisionTakesOnlyForItsSignatureAreBools) {
  const OpRegistry& registry = OpRegistry::Global();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"normalize", "inplace"},
      {"random_erasing", "inplace"},
      {"resize", "antialias"},
      {"random_resized_crop", "antialias"}};
  for (const auto& [op, arg] : cases) {
    for (const char* ok : {"true", "false", "True", "False"}) {
      EXPECT_TRUE(registry.Create(op, {{arg, ok}}).ok()) << op << " " << arg << "=" << ok;
    }
    // null is antialias's default (torchvision's None); inplace is a plain bool.
    EXPECT_EQ(registry.Create(op, {{arg, "null"}}).ok(), arg == "antialias") << op;
    for (const std::string& bad :
         std::vector<std::string>{"[1, 2]", "[]", "2", "0.5", "yes", std::string(1000000, 'y'),
                                  "[true, false]"}) {
      absl::StatusOr<std::unique_ptr<Op>> made = registry.Create(op, {{arg, bad}});
      ASSERT_FALSE(made.ok()) << op << " " << arg << "=" << bad.substr(0, 20);
      const std::string message(made.status().message());
      EXPECT_TRUE(absl::StartsWith(message, op + ": " + arg + " must be ")) << message;
      EXPECT_LE(message.size(), 300u) << message.substr(0, 400);
    }
  }
}

// Every argument of every op given a megabyte-long word, or a list holding one, is
// refused in one line of at most 400 characters that starts with the op and the
// argument (a list's item was quoted with the whole list: 540 characters).
TEST(OpRegistryTest, EveryArgumentRefusesHugeTextsInOneShortLine) {
  const OpRegistry& registry = OpRegistry::Global();
  const std::string huge(1000000, 'z');
  for (const std::string& name : registry.Names()) {
    std::vector<std::string> args = {"p"};
    for (const ArgSchema& a : registry.Find(name)->args) args.push_back(a.name);
    for (const std::string& arg : args) {
      for (const std::string& value : {huge, "[9, " + huge + "]", "[" + huge + "]"}) {
        absl::StatusOr<std::unique_ptr<Op>> op = registry.Create(name, {{arg, value}});
        ASSERT_FALSE(op.ok()) << name << "(" << arg << "=" << value.substr(0, 8) << ")";
        const std::string message(op.status().message());
        EXPECT_LE(message.size(), 400u) << message.substr(0, 500);
        EXPECT_TRUE(absl::StartsWith(message, name + ": " + arg + " ") ||
                    absl::StartsWith(message, name + ": " + arg + ":"))
            << message.substr(0, 300);
        EXPECT_EQ(message.find('\n'), std::string::npos);
      }
    }
  }
}

TEST(ViewProgramTest, RefusesOutOfRangeArguments) {
  EXPECT_TRUE(absl::StrContains(Refusal("random_resized_crop(size=64, p=abc)"),
                                "p must be a number (the probability: 1 or more always "
                                "applies, 0 or less never), got abc"));
  EXPECT_TRUE(absl::StrContains(Refusal("normalize(std=0)"), "std must be non-zero"));
  // elastic_transform takes any sign, as torchvision: a negative alpha, a sigma <= 0
  // (no blur); sigmas on both sides of 0 stay refused (torchvision's blur fails on them).
  EXPECT_EQ(Refusal("center_crop(size=8); elastic_transform(alpha=[-50, 20], sigma=-1)"),
            "accepted");
  EXPECT_TRUE(absl::StrContains(
      Refusal("center_crop(size=8); elastic_transform(sigma=[2, -1])"), "both <= 0"));
  // A negative std is taken, as torchvision takes it.
  EXPECT_EQ(Refusal("center_crop(size=8); normalize(std=[0.2, -0.2, 0.5])"), "accepted");
}

TEST(ViewProgramTest, RefusesAPixelOpAfterNormalize) {
  int failed = -2;
  EXPECT_EQ(Refusal("center_crop(size=8); normalize(); random_horizontal_flip()", &failed),
            "op 3 (random_horizontal_flip): works on uint8 pixels, so it must come before "
            "normalize (op 2)");
  EXPECT_EQ(failed, 2);
}

// The refusals of a list whose size depends on the image are short enough that a spec's
// FILE:LINE: and the stage before them keep the line under 400 characters (they were
// 330-350 characters alone, 405-430 in all).
TEST(ViewProgramTest, AnUnfixedSizeRefusalIsShort) {
  for (const char* text : {"resize(size=64); normalize()", "random_horizontal_flip()",
                           "resize(size=64, max_size=80); normalize()"}) {
    const std::string message = Refusal(text);
    EXPECT_TRUE(absl::StrContains(message, "output size depends on the image")) << message;
    EXPECT_TRUE(absl::StrContains(message, "size_divisibility")) << message;
    EXPECT_LE(message.size(), 250u) << message;
  }
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

// torchvision's v2 recipe and timm's RandAugment recipe as lists: they plan a head, run
// the policy on pixels and random_erasing on the slot, and repeat byte for byte.
TEST(ViewProgramTest, PolicyRecipesRunAndRepeat) {
  const char* lists[] = {
      "random_resized_crop(size=48); random_horizontal_flip(); trivial_augment_wide(); "
      "normalize(); random_erasing(p=0.1)",
      "random_resized_crop(size=48, interpolation=bicubic); random_horizontal_flip(); "
      "rand_augment(magnitude=9, num_magnitude_bins=11, magnitude_std=0.5, increasing=true, "
      "op_p=0.5, interpolation=bicubic, fill=[124, 116, 104]); normalize(); "
      "random_erasing(p=0.25, mode=pixel)",
      "resize(size=[40, 40]); auto_augment(policy=svhn); normalize()",
  };
  const decode::DecodedImage img = Gradient(90, 70);
  for (const char* list : lists) {
    absl::StatusOr<std::unique_ptr<ViewProgram>> p = Program(list);
    ASSERT_TRUE(p.ok()) << list << ": " << p.status();
    const size_t n = (*p)->output_bytes() / sizeof(float);
    int changed = 0;
    for (uint64_t index = 0; index < 8; ++index) {
      std::vector<float> a(n), b(n);
      ASSERT_TRUE((*p)->Run(img, nullptr, {4, 1, index}, 1, a.data()).ok()) << list;
      ASSERT_TRUE((*p)->Run(img, nullptr, {4, 1, index}, 1, b.data()).ok()) << list;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0) << list << " " << index;
      std::vector<float> c(n);
      ASSERT_TRUE((*p)->Run(img, nullptr, {4, 1, index + 100}, 1, c.data()).ok());
      changed += std::memcmp(a.data(), c.data(), n * sizeof(float)) != 0;
    }
    EXPECT_GT(changed, 0) << list;  // Other samples draw other augmentations.
    for (size_t i = 0; i < (*p)->size(); ++i) {  // The policy ran, and was timed.
      if (absl::StrContains((*p)->op_name(i), "augment")) {
        EXPECT_GT((*p)->cost(i).runs.load(), 0) << list;
        EXPECT_GT((*p)->cost(i).busy_ns.load(), 0) << list;
      }
    }
  }
}

// The per-sample memory check counts an op's float planes and copies (ScratchBytes), not
// only its input and output images: under a worker share that holds the images but not
// gaussian_blur's float rows (4x the image), elastic_transform's noise and fields or
// aug_mix's float mix, the sample is skipped as op_memory before Apply allocates them
// (they were allocated: 1073 MiB peak under memory_limit_mb 1024 with a 35 Mpx blur).
TEST(ViewProgramTest, AnOpsFloatPlanesCountInTheWorkersShare) {
  const decode::DecodedImage img = Gradient(512, 512);
  const int64_t image = 512 * 512 * 3;
  for (const char* list : {"gaussian_blur(kernel_size=3, sigma=1); center_crop(size=16)",
                           "elastic_transform(); center_crop(size=16)",
                           "aug_mix(); center_crop(size=16)"}) {
    absl::StatusOr<std::unique_ptr<ViewProgram>> p = Program(list);
    ASSERT_TRUE(p.ok()) << list << ": " << p.status();
    std::vector<uint8_t> out((*p)->output_bytes());
    // The decoded image, its copy into the list and the op's output fit; the scratch not.
    auto memory = std::make_shared<WorkerMemory>();
    memory->Set(4 * image, 1, "memory_limit_mb test");
    (*p)->set_worker_memory(memory);
    const absl::Status skipped = (*p)->Run(img, nullptr, {1, 0, 3}, 1, out.data());
    EXPECT_FALSE(skipped.ok()) << list;
    EXPECT_TRUE(absl::StrContains(skipped.message(), "(op 1) making 512x512")) << skipped;
    memory->Update(int64_t{64} << 20);  // Room for all of it: delivered.
    EXPECT_TRUE((*p)->Run(img, nullptr, {1, 0, 3}, 1, out.data()).ok()) << list;
  }
}

// A sub-op's op_memory refusal keeps its reason through the lists that hold it: compose
// holding random_choice holding a resize was counted as invalid_argument.
TEST(ViewProgramTest, ANestedSubOpsMemoryRefusalIsOpMemory) {
  const decode::DecodedImage img = Gradient(64, 64);
  const char* list =
      "compose(transforms=[random_choice(transforms=[resize(size=4000); resize(size=3999)])], "
      "p=1); "
      "center_crop(size=16)";
  absl::StatusOr<std::unique_ptr<ViewProgram>> p = Program(list);
  ASSERT_TRUE(p.ok()) << list << ": " << p.status();
  std::vector<uint8_t> out((*p)->output_bytes());
  auto memory = std::make_shared<WorkerMemory>();
  memory->Set(int64_t{1} << 20, 1, "memory_limit_mb test");  // 4000² does not fit.
  (*p)->set_worker_memory(memory);
  const absl::Status skipped = (*p)->Run(img, nullptr, {1, 0, 3}, 1, out.data());
  ASSERT_FALSE(skipped.ok());
  EXPECT_TRUE(absl::StrContains(skipped.message(), "resize (inside an op list) making"))
      << skipped;
  EXPECT_EQ(ErrorReason(skipped), reason::kOpMemory) << skipped;
}

TEST(OpStreamTest, DerivedPerViewAndOp) {
  EXPECT_NE(OpStream(1, 0), OpStream(1, 1));
  EXPECT_NE(OpStream(1, 0), OpStream(257, 0));
  EXPECT_EQ(OpStream(257, 3), OpStream(257, 3));
}

// The policies' magnitudes are torch.linspace's float32 values to the bit (these are
// torch 1.13's, printed by torch.linspace(start, end, steps)[index].item()): a translate
// of int(16.0) and one of int(15.999999) differ by a pixel.
TEST(PolicyOpsTest, LinspaceRoundsAsTorch) {
  struct Case {
    double start, end;
    int steps, index;
    double want;
  };
  const Case cases[] = {
      {0.0, 32.0, 31, 15, 16.0},
      {0.0, 32.0, 31, 13, 13.866666793823242},
      {0.0, 0.3, 16, 9, 0.17999999225139618},
      {0.0, 0.3, 16, 13, 0.25999999046325684},
      {0.0, 0.99, 31, 19, 0.6270000338554382},
      {0.0, 0.99, 31, 25, 0.824999988079071},
      {255.0, 0.0, 126, 65, 122.39999389648438},
      {255.0, 0.0, 31, 7, 195.5},
      {0.0, 150.0 / 331.0 * 224, 31, 9, 30.45317268371582},
      {0.0, 135.0, 31, 30, 135.0},
      {0.0, 0.9, 10, 9, 0.8999999761581421},
      {0.0, 30.0, 10, 3, 10.0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(policy::TorchLinspace(c.start, c.end, c.steps, c.index), c.want)
        << c.end << " " << c.steps << " " << c.index;
  }
}

TEST(PolicyOpsTest, PosterizeBitsRoundAsTorch) {
  // 8 - (torch.arange(bins) / ((bins - 1) / divisions)).round().int(), from torch.
  const int want31_4[] = {8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6,
                          6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4};
  const int want31_6[] = {8, 8, 8, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 5, 5, 5,
                          5, 5, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 2, 2, 2};
  const int want10_4[] = {8, 8, 7, 7, 6, 6, 5, 5, 4, 4};
  for (int i = 0; i < 31; ++i) {
    EXPECT_EQ(policy::TorchPosterizeBits(8, 4, 31, i), want31_4[i]) << i;
    EXPECT_EQ(policy::TorchPosterizeBits(8, 6, 31, i), want31_6[i]) << i;
  }
  for (int i = 0; i < 10; ++i) EXPECT_EQ(policy::TorchPosterizeBits(8, 4, 10, i), want10_4[i]);
}

// random_erasing's noise (value=random, timm's pixel and rand modes) cannot match torch's
// generator; it must be N(0, 1), inside the box only, and a function of the seed.
class RandomErasingNoiseTest : public ::testing::Test {
 protected:
  static constexpr int kW = 96, kH = 80;
  std::vector<float> Erase(const std::string& args, double seed) {
    absl::StatusOr<std::vector<OpText>> text = ParseOpListText("random_erasing(" + args + ")");
    EXPECT_TRUE(text.ok());
    absl::StatusOr<std::unique_ptr<Op>> op =
        OpRegistry::Global().Create((*text)[0].name, (*text)[0].args);
    EXPECT_TRUE(op.ok()) << op.status();
    std::vector<float> chw(3 * kW * kH, 7.0f);
    OpImage image;
    image.chw = chw.data();
    image.width = kW;
    image.height = kH;
    OpParams p;
    for (double v : {10.0, 12.0, 50.0, 60.0, seed}) p.Push(v);
    EXPECT_TRUE((*op)->Apply(p, image).ok());
    return chw;
  }
  static bool Inside(int y, int x) { return y >= 10 && y < 60 && x >= 12 && x < 72; }
};

TEST_F(RandomErasingNoiseTest, RandomValueIsStandardNormalInTheBoxOnly) {
  const std::vector<float> out = Erase("value=random", 99);
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < kW; ++x) {
        const float v = out[(c * kH + y) * kW + x];
        if (!Inside(y, x)) {
          ASSERT_EQ(v, 7.0f) << c << " " << y << " " << x;
          continue;
        }
        sum += v;
        sum2 += static_cast<double>(v) * v;
        ++n;
      }
    }
  }
  ASSERT_EQ(n, 3 * 50 * 60);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // 9000 draws: the mean's standard error is 0.011, the variance's 0.015.
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.075);
  EXPECT_EQ(Erase("value=random", 99), out);  // The seed decides the noise...
  EXPECT_NE(Erase("value=random", 100), out);  // ...and another seed changes it.
  EXPECT_EQ(Erase("mode=pixel", 99), out);     // timm's pixel mode is value=random.
}

// The noise's tails: 456 300 draws in bands whose normal probabilities are known,
// each within 5 standard errors (the ziggurat's layers, wedges and its tail beyond 3.44).
TEST(RandomErasingNoiseTailsTest, FrequenciesFollowTheNormal) {
  absl::StatusOr<std::unique_ptr<Op>> op =
      OpRegistry::Global().Create("random_erasing", {{"value", "random"}});
  ASSERT_TRUE(op.ok()) << op.status();
  constexpr int kN = 400, kBox = 390;
  std::vector<float> chw(3 * kN * kN, 0.0f);
  OpImage image;
  image.chw = chw.data();
  image.width = kN;
  image.height = kN;
  OpParams p;
  for (double v : {0.0, 0.0, double{kBox}, double{kBox}, 4242.0}) p.Push(v);
  ASSERT_TRUE((*op)->Apply(p, image).ok());
  struct Band {
    double above;  // P(|z| > above), or P(z > 0) for -1.
    double want;
  };
  const Band bands[] = {{-1, 0.5},           {0.25, 0.8025873486},  {1, 0.3173105079},
                        {2, 0.0455002639},   {3, 0.0026997961},     {3.5, 0.0004652582},
                        {4, 0.0000633425}};
  int64_t n = 0;
  std::vector<int64_t> counts(std::size(bands), 0);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < kBox; ++y) {
      for (int x = 0; x < kBox; ++x) {
        const float z = chw[(c * kN + y) * kN + x];
        ++n;
        for (size_t b = 0; b < std::size(bands); ++b) {
          counts[b] += bands[b].above < 0 ? z > 0 : std::fabs(z) > bands[b].above;
        }
      }
    }
  }
  for (size_t b = 0; b < std::size(bands); ++b) {
    const double freq = static_cast<double>(counts[b]) / n, want = bands[b].want;
    EXPECT_NEAR(freq, want, 5 * std::sqrt(want * (1 - want) / n)) << "band " << bands[b].above;
  }
}

TEST_F(RandomErasingNoiseTest, RandModeIsOneColourPerChannel) {
  const std::vector<float> out = Erase("mode=rand", 5);
  for (int c = 0; c < 3; ++c) {
    const float colour = out[(c * kH + 10) * kW + 12];
    EXPECT_NE(colour, 7.0f);
    for (int y = 10; y < 60; ++y) {
      for (int x = 12; x < 72; ++x) ASSERT_EQ(out[(c * kH + y) * kW + x], colour);
    }
  }
  EXPECT_NE(out[(0 * kH + 10) * kW + 12], out[(1 * kH + 10) * kW + 12]);
}

// The policies run per sample on small images: once the working image and its spare
// have grown, no sub-op may allocate (the spare holds what the geometry writes).
TEST(PolicyAllocationTest, EverySubOpRunsWithoutAllocatingOnceWarm) {
  struct Policy {
    std::string name;
    std::map<std::string, std::string> args;
    int ops;
    std::vector<double> params;  // After [op, level, negate]: the rest of a sub-op's.
  };
  const Policy policies[] = {
      {"trivial_augment_wide", {{"interpolation", "bilinear"}}, 14, {}},
      {"rand_augment", {{"num_ops", "1"}}, 14, {1}},
      {"rand_augment",
       {{"num_ops", "1"}, {"increasing", "true"}, {"num_magnitude_bins", "11"},
        {"interpolation", "bicubic"}, {"fill", "[124, 116, 104]"}},
       15,
       {1}},
  };
  Image source;
  source.Resize(176, 176, 3);
  for (size_t i = 0; i < source.pixels.size(); ++i) source.pixels[i] = (i * 7 + i / 531) & 255;
  for (const Policy& policy : policies) {
    absl::StatusOr<std::unique_ptr<Op>> op = OpRegistry::Global().Create(policy.name, policy.args);
    ASSERT_TRUE(op.ok()) << op.status();
    Image rgb = source, spare;
    OpImage image;
    image.rgb = &rgb;
    image.spare = &spare;
    for (int round = 0; round < 2; ++round) {  // Round 0 warms the buffers.
      for (int k = 0; k < policy.ops; ++k) {
        OpParams p;
        for (double v : {static_cast<double>(k), 7.0, 1.0}) p.Push(v);
        for (double v : policy.params) p.Push(v);
        std::memcpy(rgb.pixels.data(), source.pixels.data(), source.pixels.size());
        const int64_t before = g_allocations;
        ASSERT_TRUE((*op)->Apply(p, image).ok()) << policy.name << " " << k;
        if (round == 1) {
          EXPECT_EQ(g_allocations - before, 0) << policy.name << " sub-op " << k;
        }
      }
    }
  }
}

TEST(PolicyAllocationTest, AutoAugmentAndRandomErasingDoNotAllocate) {
  absl::StatusOr<std::unique_ptr<Op>> aa = OpRegistry::Global().Create("auto_augment", {});
  absl::StatusOr<std::unique_ptr<Op>> re =
      OpRegistry::Global().Create("random_erasing", {{"value", "random"}, {"max_count", "3"}});
  ASSERT_TRUE(aa.ok() && re.ok());
  Image rgb, spare;
  rgb.Resize(64, 64, 3);
  std::vector<float> chw(3 * 64 * 64);
  OpImage image;
  image.rgb = &rgb;
  image.spare = &spare;
  image.chw = chw.data();
  image.width = 64;
  image.height = 64;
  for (int round = 0; round < 2; ++round) {
    for (uint64_t i = 0; i < 50; ++i) {
      SampleRng rng(1, 0, i, 3);
      OpParams a, r;
      (*aa)->Draw(64, 64, rng, &a);
      (*re)->Draw(64, 64, rng, &r);
      const int64_t before = g_allocations;
      ASSERT_TRUE((*aa)->Apply(a, image).ok());
      ASSERT_TRUE((*re)->Apply(r, image).ok());
      if (round == 1) {
        EXPECT_EQ(g_allocations - before, 0) << i;
      }
    }
  }
}

}  // namespace
}  // namespace flowloader::augment

namespace flowloader::augment {
namespace {

// compose, random_choice and random_order: a nested list round-trips, sizes are fixed
// only where every choice and order agrees.
TEST(SubOpsTest, NestedListsRoundTripAndSizesMustAgree) {
  const std::string text =
      "random_choice(transforms=[grayscale(); random_invert(p=1)], weights=[1, 2]); "
      "center_crop(size=8)";
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 2u);
  EXPECT_EQ((*ops)[0].args.at("transforms"), "[grayscale(); random_invert(p=1)]");
  EXPECT_EQ(OpListText(*ops), text);
  EXPECT_EQ(Refusal(text), "accepted");
  EXPECT_EQ(Refusal("random_choice(transforms=[center_crop(size=8); random_crop(size=8)])"),
            "accepted");
  EXPECT_TRUE(absl::StrContains(
      Refusal("random_choice(transforms=[center_crop(size=8); center_crop(size=9)])"),
      "output size depends on the image"));
  // resize then crop is 8 × 8, crop then resize 20 × 20.
  EXPECT_TRUE(absl::StrContains(
      Refusal("random_order(transforms=[resize(size=[20, 20]); center_crop(size=8)])"),
      "output size depends on the image"));
  EXPECT_EQ(Refusal("random_order(transforms=[resize(size=[20, 20]); "
                    "random_horizontal_flip()]); compose(transforms=[grayscale(); "
                    "center_crop(size=4)], p=1)"),
            "accepted");
}

// A random_order among a random_order's ops: each sub-op's size is asked once per input
// size, not once per order of the outer list (8 random_orders of 8 ops inside one ran
// 10^11 size steps: Create never returned). The answers stay those of every order.
TEST(SubOpsTest, NestedRandomOrdersAreSizedOncePerInputSize) {
  std::string order8 = "random_order(transforms=[";
  for (int i = 0; i < 8; ++i) absl::StrAppend(&order8, i ? "; " : "", "pad(padding=", i, ")");
  absl::StrAppend(&order8, "])");
  std::string outer = "random_order(transforms=[";
  for (int i = 0; i < 8; ++i) absl::StrAppend(&outer, i ? "; " : "", order8);
  absl::StrAppend(&outer, "]); center_crop(size=8)");
  EXPECT_EQ(Refusal(outer), "accepted");
  std::string uneven = "random_order(transforms=[";
  for (int i = 0; i < 7; ++i) absl::StrAppend(&uneven, order8, "; ");
  absl::StrAppend(&uneven, "resize(size=[20, 20])])");
  EXPECT_TRUE(absl::StrContains(Refusal(uneven), "output size depends on the image"));
}

// Ops over op lists nest as torchvision's classes do, 20 deep and more; past 32 levels
// they are refused in one line (5000 levels overflowed the stack in Create: SIGSEGV).
TEST(SubOpsTest, DeepNestingIsRefusedNotAStackOverflow) {
  auto nest = [](int depth) {
    std::string text = "random_invert()";
    const char* kinds[] = {"compose", "random_choice", "random_order"};
    for (int i = 0; i < depth; ++i) {
      text = absl::StrCat(kinds[i % 3], "(transforms=[", text, "])");
    }
    return absl::StrCat(text, "; center_crop(size=8)");
  };
  EXPECT_EQ(Refusal(nest(20)), "accepted");
  EXPECT_EQ(Refusal(nest(32)), "accepted");
  for (int depth : {33, 5000}) {
    const std::string refusal = Refusal(nest(depth));
    EXPECT_TRUE(absl::StrContains(refusal, "op lists nest more than 32 deep")) << refusal.substr(0, 300);
  }
}

// The boxes move as the pixels: a lone white pixel and its 1 × 1 box end up together
// through every choice and order the ops draw.
TEST(SubOpsTest, TargetsMoveWithThePixelsThroughEveryDraw) {
  for (const char* text :
       {"random_order(transforms=[random_horizontal_flip(); random_vertical_flip(); "
        "pad(padding=[1, 2]); random_crop(size=[9, 11])])",
        "random_choice(transforms=[random_horizontal_flip(p=1); random_vertical_flip(p=1); "
        "compose(transforms=[pad(padding=[2, 3, 1, 3]); random_rotation(degrees=[90, 90])])], "
        "weights=[1, 1, 2])"}) {
    absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
    ASSERT_TRUE(ops.ok()) << ops.status();
    absl::StatusOr<std::unique_ptr<Op>> op =
        OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
    ASSERT_TRUE(op.ok()) << op.status();
    EXPECT_EQ((*op)->SubOps().size(), (*ops)[0].name == "random_order" ? 4u : 3u);
    std::map<std::string, int> outcomes;
    for (uint64_t sample = 0; sample < 200; ++sample) {
      Image rgb, spare;
      rgb.Resize(13, 10, 3);
      std::memset(rgb.pixels.data(), 0, rgb.pixels.size());
      const int x0 = 4, y0 = 6;
      std::memset(&rgb.pixels[(y0 * 13 + x0) * 3], 255, 3);
      detection::Targets targets;
      targets.canvas_width = 13;
      targets.canvas_height = 10;
      targets.boxes = {x0, y0, x0 + 1, y0 + 1};
      targets.labels = {1};
      targets.iscrowd = {0};
      targets.area = {1};
      SampleRng rng(3, 0, sample, 1);
      OpParams params;
      (*op)->Draw(13, 10, rng, &params);
      OpImage image;
      image.rgb = &rgb;
      image.spare = &spare;
      ASSERT_TRUE((*op)->Apply(params, image).ok());
      ASSERT_TRUE((*op)->MoveTargets(params, &targets).ok());
      EXPECT_EQ(targets.canvas_width, rgb.width);
      EXPECT_EQ(targets.canvas_height, rgb.height);
      int found = -1;
      for (int i = 0; i < rgb.width * rgb.height; ++i) {
        if (rgb.pixels[3 * i] == 255) {
          EXPECT_EQ(found, -1) << text;
          found = i;
        }
      }
      if (found < 0) {  // Cropped away: the box is outside the canvas or empty.
        ASSERT_EQ(targets.boxes.size(), 4u);
        EXPECT_TRUE(targets.boxes[2] <= 0 || targets.boxes[0] >= rgb.width ||
                    targets.boxes[3] <= 0 || targets.boxes[1] >= rgb.height ||
                    targets.boxes[0] >= targets.boxes[2] || targets.boxes[1] >= targets.boxes[3])
            << text;
        continue;
      }
      const float x = static_cast<float>(found % rgb.width);
      const float y = static_cast<float>(found / rgb.width);
      ASSERT_EQ(targets.boxes.size(), 4u);
      EXPECT_NEAR(targets.boxes[0], x, 1e-4) << text << " sample " << sample;
      EXPECT_NEAR(targets.boxes[1], y, 1e-4) << text << " sample " << sample;
      EXPECT_NEAR(targets.boxes[2], x + 1, 1e-4) << text;
      EXPECT_NEAR(targets.boxes[3], y + 1, 1e-4) << text;
      outcomes[std::to_string(rgb.width) + "x" + std::to_string(found)]++;
    }
    EXPECT_GE(outcomes.size(), 3u) << text;  // The draws vary.
  }
}

}  // namespace
}  // namespace flowloader::augment
