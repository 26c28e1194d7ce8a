// WebDataset shards as a Dataset: listing (brace ranges, directories, shard lists),
// webdataset's grouping and labels, and bad shards as failing entries. Shards are made
// by GNU tar.
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"
#include "stages/reader/fault_env.h"
#include "stages/reader/file_reader.h"
#include "stages/reader/internal/shard_names.h"

namespace flowloader {
namespace {

using shard_internal::ExpandBraces;
using shard_internal::IsMetaMember;
using shard_internal::JsonIntField;
using shard_internal::SplitKey;

class ShardDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/shards_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Sh(absl::StrCat("rm -rf ", dir_, " && mkdir -p ", dir_, "/src"));
  }
  static void Sh(const std::string& command) { ASSERT_EQ(std::system(command.c_str()), 0) << command; }
  void Write(const std::string& rel, const std::string& body) {
    std::ofstream(dir_ + "/src/" + rel, std::ios::binary) << body;
  }
  // MakeShard writes shard `name` holding the files `members` (written beforehand).
  void MakeShard(const std::string& name, const std::string& members) {
    Sh(absl::StrCat("cd ", dir_, "/src && tar -cf ", dir_, "/", name, " ", members));
  }
  // MakeSamples writes `n` samples key<first+i> with a .jpg and a .cls = label.
  std::string MakeSamples(int first, int n) {
    std::string members;
    for (int i = first; i < first + n; ++i) {
      Write(absl::StrCat("k", i, ".jpg"), absl::StrCat("jpeg bytes of ", i));
      Write(absl::StrCat("k", i, ".cls"), absl::StrCat(i % 5));
      absl::StrAppend(&members, " k", i, ".jpg k", i, ".cls");
    }
    return members;
  }
  std::string ReadImage(const Dataset& ds, int64_t i) {
    std::string bytes;
    const SampleSource& s = ds.sample(i);
    EXPECT_TRUE(ds.shard_env()->ReadRange(ds.FullPath(i), s.offset, s.size, &bytes).ok());
    return bytes;
  }
  std::string dir_;
};

TEST_F(ShardDatasetTest, BraceRangeOpensEveryShardInOrder) {
  for (int s = 0; s < 3; ++s) MakeShard(absl::StrCat("train-00000", s, ".tar"), MakeSamples(s * 10, 4));
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({dir_ + "/train-{000000..000002}.tar"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 12);
  ASSERT_EQ((*ds)->shards().size(), 3u);
  EXPECT_EQ((*ds)->sample(0).key, "train-000000.tar/k0.jpg");
  EXPECT_EQ((*ds)->sample(5).key, "train-000001.tar/k11.jpg");
  EXPECT_EQ((*ds)->sample(5).label, 11 % 5);
  EXPECT_EQ((*ds)->FullPath(5), dir_ + "/train-000001.tar");
  EXPECT_EQ(ReadImage(**ds, 5), "jpeg bytes of 11");
  // Every member is recorded with its extension.
  absl::Span<const SampleMember> members = (*ds)->members(5);
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ((*ds)->extensions()[members[0].extension], "jpg");
  EXPECT_EQ((*ds)->extensions()[members[1].extension], "cls");
  for (int64_t i = 0; i < (*ds)->size(); ++i) EXPECT_TRUE((*ds)->sample(i).error.ok()) << i;
}

TEST_F(ShardDatasetTest, DirectoryOfTarsAndShardListNameTheSameShards) {
  MakeShard("b.tar", MakeSamples(0, 2));
  MakeShard("a.tar", MakeSamples(2, 3));
  Sh(absl::StrCat("mkdir -p ", dir_, "/lists && mv ", dir_, "/a.tar ", dir_, "/b.tar ", dir_, "/lists/"));
  std::ofstream(dir_ + "/shards.txt") << "# shards\nlists/a.tar\n\n" << dir_ << "/lists/b.tar\n";
  absl::StatusOr<std::unique_ptr<Dataset>> from_dir = Dataset::Open({dir_ + "/lists"});
  absl::StatusOr<std::unique_ptr<Dataset>> from_list = Dataset::Open({dir_ + "/shards.txt"});
  ASSERT_TRUE(from_dir.ok()) << from_dir.status();
  ASSERT_TRUE(from_list.ok()) << from_list.status();
  ASSERT_EQ((*from_dir)->size(), 5);
  ASSERT_EQ((*from_list)->size(), 5);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*from_dir)->sample(i).key, (*from_list)->sample(i).key);  // a.tar first.
    EXPECT_EQ(ReadImage(**from_dir, i), ReadImage(**from_list, i));
  }
  EXPECT_EQ((*from_dir)->sample(0).key, "a.tar/k2.jpg");
}

TEST_F(ShardDatasetTest, GroupsConsecutiveMembersByKeyAsWebdatasetDoes) {
  Sh(absl::StrCat("mkdir -p ", dir_, "/src/sub.d"));
  Write("sub.d/x.y.jpg", "sub");       // Key "sub.d/x", extension "y.jpg": no image member.
  Write("sub.d/x.cls", "1");
  Write("img.seg.png", "mask");        // Extension "seg.png": not the image.
  Write("img.PNG", "photo");           // Extensions are lower-cased: png.
  Write("img.cls", "2");
  Sh(absl::StrCat("mkdir -p ", dir_, "/src/__info__"));
  Write("__info__/a.json", "{}");      // Skipped as metadata (`__x__/`).
  Write("README", "no extension");     // Skipped.
  MakeShard("g.tar", "__info__/a.json README sub.d/x.y.jpg sub.d/x.cls img.seg.png img.PNG img.cls");
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({dir_ + "/g.tar"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 2);
  EXPECT_EQ(ErrorReason((*ds)->sample(0).error), reason::kMissingImage);
  EXPECT_EQ((*ds)->sample(1).key, "g.tar/img.PNG");
  EXPECT_EQ((*ds)->sample(1).label, 2);
  EXPECT_EQ(ReadImage(**ds, 1), "photo");
  EXPECT_EQ((*ds)->members(1).size(), 3u);
}

TEST_F(ShardDatasetTest, LabelKeyReadsTheLabelFromJson) {
  Write("a.jpg", "A");
  Write("a.json", R"({"caption": "a \"label\": 9", "meta": {"label": 8}, "label": 4})");
  Write("b.jpg", "B");
  Write("b.json", R"({"other": 1})");
  MakeShard("j.tar", "a.jpg a.json b.jpg b.json");
  DatasetOptions o;
  o.path = dir_ + "/j.tar";
  o.label_key = "label";
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 2);
  EXPECT_TRUE((*ds)->sample(0).error.ok()) << (*ds)->sample(0).error;
  EXPECT_EQ((*ds)->sample(0).label, 4);
  EXPECT_EQ(ErrorReason((*ds)->sample(1).error), reason::kMissingLabel);
}

// label_key with data that is not shards is refused, not ignored (it was: the labels
// came from the class directories while the user expected the JSON field).
TEST_F(ShardDatasetTest, LabelKeyWithoutShardsIsRefused) {
  Sh(absl::StrCat("mkdir -p ", dir_, "/folder/cat && echo x > ", dir_, "/folder/cat/a.jpg"));
  DatasetOptions o;
  o.path = dir_ + "/folder";
  o.label_key = "label";
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().message(),
            absl::StrCat("label_key 'label' is for tar shards (the .json member's field that "
                         "holds the label), but ", dir_, "/folder is an ImageFolder directory "
                         "(labels from its class directories): remove label_key"));
}

TEST_F(ShardDatasetTest, BadSamplesAndShardsBecomeFailingEntriesWithReasons) {
  const std::string good = MakeSamples(0, 3);
  Write("nolabel.jpg", "x");
  Write("bad.jpg", "y");
  Write("bad.cls", "cat");
  Write("empty.jpg", "");
  Write("empty.cls", "1");
  MakeShard("s-0.tar", good + " nolabel.jpg bad.jpg bad.cls empty.jpg empty.cls");
  MakeShard("s-1.tar", MakeSamples(10, 3));
  Sh(absl::StrCat("truncate -s 2000 ", dir_, "/s-1.tar"));  // Cut inside the 2nd sample.
  std::ofstream(dir_ + "/s-2.tar") << "this is not a tar archive, only named like one";
  // s-3.tar is missing (a shard vanished between listing and reading).
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({dir_ + "/s-{0..3}.tar"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::map<std::string, int> reasons;
  int good_samples = 0;
  for (int64_t i = 0; i < (*ds)->size(); ++i) {
    const absl::Status& e = (*ds)->sample(i).error;
    if (e.ok()) ++good_samples;
    else ++reasons[ErrorReason(e)];
  }
  // s-0: 3 good + empty.jpg (read, then decode's empty_file) ; s-1: the first sample.
  EXPECT_EQ(good_samples, 5);
  EXPECT_EQ(reasons, (std::map<std::string, int>{{"missing_label", 2},
                                                 {"truncated", 1},
                                                 {"unknown_format", 1},
                                                 {"not_found", 1}}));
}

TEST_F(ShardDatasetTest, RefusesShardsWithoutAnyGoodSample) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({dir_ + "/none-{0..2}.tar"});
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("3 × not_found"), std::string::npos) << ds.status();
}

TEST_F(ShardDatasetTest, MemberReadsGoThroughTheInjectedEnv) {
  MakeShard("f.tar", MakeSamples(0, 2));
  FaultEnv faults(Env::Default());
  DatasetOptions o;
  o.path = dir_ + "/f.tar";
  o.env = &faults;
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  faults.Inject("f.tar", Fault{EIO, 2});
  FileReaderOptions r;
  r.env = (*ds)->shard_env();
  auto reader = FileReader::Create(r);
  ASSERT_TRUE(reader.ok());
  std::string bytes;
  const SampleSource& s = (*ds)->sample(1);
  ASSERT_TRUE((*reader)->ReadRange((*ds)->FullPath(1), s.offset, s.size, &bytes).ok());
  EXPECT_EQ(bytes, "jpeg bytes of 1");
  EXPECT_EQ(faults.Attempts("f.tar"), 3);  // Two EIO, retried, then read.
  faults.Inject("f.tar", Fault{0, -1, s.offset + 3});  // The shard shrank after indexing.
  absl::Status cut = (*reader)->ReadRange((*ds)->FullPath(1), s.offset, s.size, &bytes);
  EXPECT_EQ(ErrorReason(cut), reason::kTruncated) << cut;
}

TEST(ShardNamesTest, ExpandsBracesLikeBraceexpand) {
  EXPECT_EQ(*ExpandBraces("s-{000008..000011}.tar"),
            (std::vector<std::string>{"s-000008.tar", "s-000009.tar", "s-000010.tar",
                                      "s-000011.tar"}));
  EXPECT_EQ(*ExpandBraces("{a,b}-{1..2}"), (std::vector<std::string>{"a-1", "a-2", "b-1", "b-2"}));
  EXPECT_EQ(*ExpandBraces("x{9..11}"), (std::vector<std::string>{"x9", "x10", "x11"}));
  EXPECT_EQ(*ExpandBraces("x{0..4..2}"), (std::vector<std::string>{"x0", "x2", "x4"}));
  EXPECT_EQ(*ExpandBraces("plain{x}.tar"), (std::vector<std::string>{"plain{x}.tar"}));
  EXPECT_FALSE(ExpandBraces("bad{1..2.tar").ok());
  EXPECT_FALSE(ExpandBraces("{0..9}{0..9}{0..9}", 100).ok());
}

// The count of a range spanning all of int64 is 2^64, which wrapped to 0 (the range then
// expanded to no name at all): it is refused as too many.
TEST(ShardNamesTest, ARangeOverAllOfInt64IsRefusedAsTooMany) {
  const absl::StatusOr<std::vector<std::string>> all =
      ExpandBraces("x-{-9223372036854775808..9223372036854775807}.tar");
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("over the limit of 1000000"), std::string::npos)
      << all.status();
}

// A list file's lines are each within the brace limit, but together they were not
// bounded: two lines of a million shards each gave 2 million names (27 s of `flowloader
// index`). The list as a whole is refused past a million, in one line, fast.
TEST_F(ShardDatasetTest, AListFileNamingMoreThanAMillionShardsIsRefused) {
  std::ofstream(dir_ + "/huge.txt") << "x-{000000..999999}.tar\ny-{000000..999999}.tar\n";
  const absl::StatusOr<std::vector<std::string>> shards =
      Dataset::ShardPaths(Env::Default(), dir_ + "/huge.txt", false);
  ASSERT_FALSE(shards.ok());
  EXPECT_NE(shards.status().message().find("names more than 1000000 shards"), std::string::npos)
      << shards.status();
}

TEST(ShardNamesTest, SplitsKeysWithWebdatasetsBasePlusExt) {
  struct Case {
    const char* name;
    bool ok;
    const char* key;
    const char* extension;
  };
  const Case cases[] = {
      {"000123.jpg", true, "000123", "jpg"},
      {"a/b.c/d.seg.png", true, "a/b.c/d", "seg.png"},
      {"dir/x.tar.gz", true, "dir/x", "tar.gz"},
      {"noext", false, "", ""},
      {"dir/noext", false, "", ""},
      {".hidden", false, "", ""},
      {"a/.x.jpg", true, "a/", "x.jpg"},  // The regex backtracks: `[^.]+` takes "a/".
      {"a.c/b/.x", true, "a.c/b/", "x"},  // Only the last directory part is looked at.
      {"a.c/.x", false, "", ""},          // `[^.]+` cannot take "a.c/".
      {"/.x", true, "/", "x"},
      {"a//.x", true, "a//", "x"},
  };
  for (const Case& c : cases) {
    std::string key, extension;
    EXPECT_EQ(SplitKey(c.name, &key, &extension), c.ok) << c.name;
    if (c.ok) {
      EXPECT_EQ(key, c.key) << c.name;
      EXPECT_EQ(extension, c.extension) << c.name;
    }
  }
  EXPECT_TRUE(IsMetaMember("__key__"));
  EXPECT_FALSE(IsMetaMember("__key__.json"));  // A sample keyed "__key__", as in webdataset.
  EXPECT_TRUE(IsMetaMember("__x__/y.jpg"));
  EXPECT_FALSE(IsMetaMember("__x.jpg"));
  EXPECT_FALSE(IsMetaMember("a/__x__.jpg"));
}

TEST(ShardNamesTest, JsonIntFieldReadsTopLevelIntegers) {
  int64_t v = 0;
  EXPECT_TRUE(JsonIntField(R"({ "a": {"label": 1}, "label" : 42 })", "label", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(JsonIntField(R"({"label": "7"})", "label", &v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(JsonIntField(R"({"x": "\"label\": 3"})", "label", &v));
  EXPECT_FALSE(JsonIntField(R"({"label": 2.5})", "label", &v));
  EXPECT_FALSE(JsonIntField(R"([{"label": 1}])", "label", &v));
  EXPECT_FALSE(JsonIntField("{\"label\": ", "label", &v));
}

}  // namespace
}  // namespace flowloader
