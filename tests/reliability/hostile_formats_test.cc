// hostile_formats_test: the formats beside JPEG and PNG (WebP, TIFF, GIF, BMP, PPM/PGM/PBM)
// through a real pipeline, good and broken files mixed, as made by PIL in
// stages/decode/testdata/make_format_fixtures.py: half files (truncated), header bombs
// (too_many_pixels), animated WebP, float TIFF and 24-bit RLE BMP (unsupported), bad
// signatures, records and maxvals (corrupt). Extends hostile_files_test.cc, which covers
// JPEG and PNG and the file-system faults.
//   - An ImageFolder lists what torchvision's ImageFolder lists (IMG_EXTENSIONS, any
//     case: no .gif, no .pbm): every good one is delivered once per epoch, every bad one
//     skipped with its reason, in the batches and in the decode stage's counters.
//   - A list file may name any file: GIF and PBM decode from it too.
//   - The format comes from the bytes: a WebP named .jpg and a BMP named .png decode.
//   - on_error=fail stops at a broken file, naming it and the reason.
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/sample_error.h"
#include "stages/decode/testdata/format_fixtures.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using decode::testing::FormatFixture;
using decode::testing::ReadBytes;
using testing::Drain;
using testing::Drained;
using testing::SmallCpuOptions;
using testing::TempDir;
using testing::WriteFile;

std::string g_script;  // argv[1]: make_format_fixtures.py.

// ListedByImageFolder is torchvision's IMG_EXTENSIONS test (has_file_allowed_extension).
bool ListedByImageFolder(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const char* ext :
       {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

// Expected is what one epoch must show: keys delivered, and keys skipped with a reason.
struct Expected {
  std::set<std::string> good;
  std::map<std::string, std::string> bad;
};

class HostileFormatsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixture_dir_ = new std::string(TempDir("format_fixtures"));
    auto made = decode::testing::MakeFormatFixtures(g_script, *fixture_dir_);
    ASSERT_TRUE(made.ok()) << made.status();
    fixtures_ = new std::vector<FormatFixture>(*std::move(made));
  }

  // MakeTree copies every fixture into root/c/ (and two renamed good files) and returns
  // what an ImageFolder over it (listed_only) or a list file naming them all delivers.
  Expected MakeTree(const std::string& root, bool listed_only) {
    ::mkdir((root + "/c").c_str(), 0755);
    Expected e;
    for (const FormatFixture& f : *fixtures_) {
      const std::string key = "c/" + f.name;
      WriteFile(root + "/" + key, ReadBytes(f.path(*fixture_dir_)));
      if (listed_only && !ListedByImageFolder(f.name)) continue;
      if (f.good()) {
        e.good.insert(key);
      } else {
        e.bad[key] = f.expect;
      }
    }
    WriteFile(root + "/c/webp_named.jpg", ReadBytes(*fixture_dir_ + "/lossy.webp"));
    WriteFile(root + "/c/bmp_named.png", ReadBytes(*fixture_dir_ + "/rgb24.bmp"));
    e.good.insert("c/webp_named.jpg");
    e.good.insert("c/bmp_named.png");
    return e;
  }

  // RunAndCheck runs two epochs of `data` and checks each against `e`.
  void RunAndCheck(const std::string& data, const Expected& e) {
    PipelineOptions o = SmallCpuOptions(data, /*batch_size=*/8, nullptr);
    o.epochs = 2;
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)->samples_per_epoch(), static_cast<int64_t>(e.good.size() + e.bad.size()));
    const Drained d = Drain(p->get());
    ASSERT_TRUE(d.status.ok()) << d.status;
    std::multiset<std::string> delivered(d.keys.begin(), d.keys.end());
    for (const std::string& key : e.good) {
      EXPECT_EQ(delivered.count(key), 2u) << "not delivered once per epoch: " << key;
    }
    EXPECT_EQ(d.keys.size(), 2 * e.good.size());
    std::map<std::string, int> skips;
    for (const SkippedSample& s : d.skipped) {
      ++skips[s.key];
      auto it = e.bad.find(s.key);
      if (it == e.bad.end()) {
        ADD_FAILURE() << "skipped a good file: " << s.key << ": " << s.message;
        continue;
      }
      EXPECT_EQ(s.reason, it->second) << s.key << ": " << s.message;
    }
    for (const auto& [key, reason] : e.bad) {
      EXPECT_EQ(skips[key], 2) << "bad file not skipped once per epoch: " << key;
    }
    std::map<std::string, uint64_t> by_reason;
    for (const auto& [key, reason] : e.bad) by_reason[reason] += 2;
    EXPECT_EQ((*p)->stats()->Stage("decode")->Errors(), by_reason);
  }

  static std::string* fixture_dir_;
  static std::vector<FormatFixture>* fixtures_;
};

std::string* HostileFormatsTest::fixture_dir_ = nullptr;
std::vector<FormatFixture>* HostileFormatsTest::fixtures_ = nullptr;

TEST_F(HostileFormatsTest, ImageFolderDeliversEveryListedFormatAndSkipsBadOnesByReason) {
  const std::string root = TempDir("formats_folder");
  const Expected e = MakeTree(root, /*listed_only=*/true);
  // The tree holds .gif and .pbm files, good and bad, that must not be samples at all.
  ASSERT_TRUE(std::any_of(fixtures_->begin(), fixtures_->end(), [](const FormatFixture& f) {
    return absl::EndsWith(f.name, ".gif") && f.good();
  }));
  ASSERT_GE(e.bad.size(), 10u);
  RunAndCheck(root, e);
}

TEST_F(HostileFormatsTest, ListFileNamesGifAndPbmToo) {
  const std::string root = TempDir("formats_list");
  const Expected e = MakeTree(root, /*listed_only=*/false);
  std::string list;
  for (const std::string& key : e.good) absl::StrAppend(&list, key, "\t0\n");
  for (const auto& [key, reason] : e.bad) absl::StrAppend(&list, key, "\t1\n");
  WriteFile(root + "/list.tsv", list);
  ASSERT_TRUE(e.good.count("c/interlaced.gif") == 1 && e.good.count("c/bilevel.pbm") == 1);
  RunAndCheck(root + "/list.tsv", e);
}

TEST_F(HostileFormatsTest, FailPolicyNamesTheFileAndTheReason) {
  for (const char* name : {"half.tif", "bomb.webp", "bad_record.gif", "rle_24bit.bmp"}) {
    SCOPED_TRACE(name);
    const std::string root = TempDir(absl::StrCat("formats_fail_", name));
    ::mkdir((root + "/c").c_str(), 0755);
    WriteFile(root + "/c/good.ppm", ReadBytes(*fixture_dir_ + "/rgb.ppm"));
    WriteFile(root + "/c/" + name, ReadBytes(*fixture_dir_ + "/" + name));
    std::string reason;
    for (const FormatFixture& f : *fixtures_) {
      if (f.name == name) reason = f.expect;
    }
    // A list file, which may name a .gif.
    WriteFile(root + "/list.tsv", absl::StrCat("c/good.ppm\t0\nc/", name, "\t0\n"));
    PipelineOptions o = SmallCpuOptions(root + "/list.tsv", /*batch_size=*/2, nullptr);
    o.on_error = ErrorPolicy::kFail;
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    const Drained d = Drain(p->get());
    ASSERT_FALSE(d.status.ok());
    EXPECT_TRUE(absl::StrContains(d.status.message(), name)) << d.status;
    EXPECT_EQ(ErrorReason(d.status), reason) << d.status;
  }
}

}  // namespace
}  // namespace flowloader

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: hostile_formats_test MAKE_FORMAT_FIXTURES_PY\n");
    return 2;
  }
  flowloader::g_script = argv[1];
  return RUN_ALL_TESTS();
}
