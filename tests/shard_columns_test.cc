// Tar shard members as per-sample columns (the `columns` option): members named by
// extension arrive with each row as strings (Batch::columns), read while the shards are
// indexed, so over HTTP they cost no request of their own (counted in nginx's access
// log); a sample without one, or with one over column_max_bytes, is skipped and counted;
// list files share the option. Shards are written by GNU tar.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::ReadFile;
using testing::Server;
using testing::SmallCpuOptions;
using testing::TempDir;
using testing::TempDirForTest;
using testing::WriteFile;

constexpr int kSamples = 12;
constexpr int kPerShard = 6;
constexpr int kNoText = 7;     // Sample 7 has no .txt member.
constexpr int kLongText = 9;   // Sample 9's .txt is kLongBytes long.
constexpr int kLongBytes = 300;
constexpr int kMaxBytes = 200;  // column_max_bytes in the tests that meet sample 9.

std::string Name(int i) { return absl::StrFormat("%06d", i); }
std::string Text(int i) {
  return i == kLongText ? std::string(kLongBytes, 'x') : absl::StrCat("caption ", i);
}
std::string Json(int i) { return absl::StrCat("{\"id\": ", i, ", \"label\": ", i % 3, "}"); }

// MakeColumnShards writes kSamples samples (jpg, cls, txt, json; see the constants) as
// two shards in `dir`, with GNU tar, and returns their brace pattern.
std::string MakeColumnShards(const std::string& dir) {
  const std::string staging = TempDir("column_staging");
  for (int shard = 0; shard * kPerShard < kSamples; ++shard) {
    std::string members;
    for (int i = shard * kPerShard; i < (shard + 1) * kPerShard; ++i) {
      WriteFile(absl::StrCat(staging, "/", Name(i), ".jpg"), testing::ValidJpeg(40, 32, i + 1));
      WriteFile(absl::StrCat(staging, "/", Name(i), ".cls"), absl::StrCat(i % 3));
      WriteFile(absl::StrCat(staging, "/", Name(i), ".json"), Json(i));
      absl::StrAppend(&members, " ", Name(i), ".jpg ", Name(i), ".cls ", Name(i), ".json");
      if (i != kNoText) {
        WriteFile(absl::StrCat(staging, "/", Name(i), ".txt"), Text(i));
        absl::StrAppend(&members, " ", Name(i), ".txt");
      }
    }
    EXPECT_EQ(std::system(absl::StrFormat("cd %s && tar -cf %s/train-%06d.tar%s", staging, dir,
                                          shard, members).c_str()),
              0);
  }
  return dir + "/train-{000000..000001}.tar";
}

// Rows is one epoch's delivered rows by key, and the skips by reason.
struct Rows {
  absl::Status status;
  std::map<std::string, std::vector<std::string>> columns;  // Key -> one value per column.
  std::vector<std::string> names;
  std::map<std::string, int> skipped;
  int64_t samples = 0;
};

Rows RunEpoch(const PipelineOptions& o) {
  Rows rows;
  auto p = Pipeline::Create(o);
  if (!p.ok()) {
    rows.status = p.status();
    return rows;
  }
  while (true) {
    std::shared_ptr<const Batch> b;
    bool end = false;
    rows.status = (*p)->Next(&b, &end);
    if (!rows.status.ok() || end) break;
    rows.names.clear();
    for (const BatchColumn& c : b->columns) rows.names.push_back(c.name);
    for (int64_t r = 0; r < b->size(); ++r) {
      std::vector<std::string>& values = rows.columns[b->keys[r]];
      for (const BatchColumn& c : b->columns) values.emplace_back(c.value(r));
      ++rows.samples;
    }
    for (const SkippedSample& s : b->skipped) ++rows.skipped[s.reason];
  }
  return rows;
}

PipelineOptions ColumnOptions(const std::string& data) {
  PipelineOptions o = SmallCpuOptions(data, /*batch_size=*/5, nullptr);
  o.epochs = 1;
  o.columns = {"txt", "json"};
  o.column_max_bytes = kMaxBytes;
  return o;
}

class ShardColumnsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shard_dir_ = new std::string(TempDir("column_shards"));
    pattern_ = new std::string(MakeColumnShards(*shard_dir_));
  }
  static std::string* shard_dir_;
  static std::string* pattern_;
};
std::string* ShardColumnsTest::shard_dir_ = nullptr;
std::string* ShardColumnsTest::pattern_ = nullptr;

TEST_F(ShardColumnsTest, MembersArriveAsColumnsAndBadOnesAreSkippedByReason) {
  const Rows rows = RunEpoch(ColumnOptions(*pattern_));
  ASSERT_TRUE(rows.status.ok()) << rows.status;
  EXPECT_EQ(rows.names, (std::vector<std::string>{"txt", "json"}));
  EXPECT_EQ(rows.samples, kSamples - 2);
  EXPECT_EQ(rows.skipped, (std::map<std::string, int>{{"column_too_large", 1},
                                                      {"missing_column", 1}}));
  for (int i = 0; i < kSamples; ++i) {
    const std::string key = absl::StrCat("train-00000", i / kPerShard, ".tar/", Name(i), ".jpg");
    auto it = rows.columns.find(key);
    if (i == kNoText || i == kLongText) {
      EXPECT_EQ(it, rows.columns.end()) << key;
      continue;
    }
    ASSERT_NE(it, rows.columns.end()) << key;
    EXPECT_EQ(it->second, (std::vector<std::string>{Text(i), Json(i)})) << key;
  }
}

TEST_F(ShardColumnsTest, OffByDefaultNothingIsReadOrSkipped) {
  PipelineOptions o = ColumnOptions(*pattern_);
  o.columns.clear();
  const Rows rows = RunEpoch(o);
  ASSERT_TRUE(rows.status.ok()) << rows.status;
  EXPECT_TRUE(rows.names.empty());
  EXPECT_EQ(rows.samples, kSamples);
  EXPECT_TRUE(rows.skipped.empty());
}

TEST_F(ShardColumnsTest, ColumnMaxBytesLetsALongMemberThrough) {
  PipelineOptions o = ColumnOptions(*pattern_);
  o.columns = {"txt"};
  o.column_max_bytes = kLongBytes;
  const Rows rows = RunEpoch(o);
  ASSERT_TRUE(rows.status.ok()) << rows.status;
  EXPECT_EQ(rows.skipped, (std::map<std::string, int>{{"missing_column", 1}}));
  EXPECT_EQ(rows.columns.at(absl::StrCat("train-000001.tar/", Name(kLongText), ".jpg")),
            std::vector<std::string>{Text(kLongText)});
}

// CountRequests is the number of lines nginx logged so far.
int CountRequests(const std::string& log) {
  const std::string text = ReadFile(log);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(ShardColumnsTest, OverHttpColumnsCostNoExtraRequest) {
  const std::string work = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(*shard_dir_, work);
  ASSERT_TRUE(nginx.running());
  const std::string log = work + "/access.log";
  PipelineOptions o = ColumnOptions(nginx.Url("/train-{000000..000001}.tar"));
  o.column_max_bytes = kLongBytes;  // Every sample but kNoText is read.
  o.http_cache_mb = 0;  // A request per image read, so one extra per column would show.
  o.columns = {};
  const int before = CountRequests(log);
  const Rows plain = RunEpoch(o);
  ASSERT_TRUE(plain.status.ok()) << plain.status;
  const int plain_requests = CountRequests(log) - before;
  o.columns = {"txt", "json"};
  const Rows with_columns = RunEpoch(o);
  ASSERT_TRUE(with_columns.status.ok()) << with_columns.status;
  const int column_requests = CountRequests(log) - before - plain_requests;
  // One range request per image read, plus per shard its index file's (404: GNU tar
  // wrote these shards, without one) and its header window's: the same with columns (one
  // sample fewer is read: kNoText is skipped before reading).
  EXPECT_EQ(plain_requests, kSamples + 2 * 2);
  EXPECT_EQ(column_requests, kSamples - 1 + 2 * 2);
  EXPECT_EQ(with_columns.columns.at(absl::StrCat("train-000000.tar/", Name(3), ".jpg")),
            (std::vector<std::string>{Text(3), Json(3)}));
}

TEST_F(ShardColumnsTest, RefusalsNameTheValueAndTheOption) {
  PipelineOptions o = ColumnOptions(*pattern_);
  o.columns = {"txt", "a b"};
  absl::Status s = RunEpoch(o).status;
  EXPECT_EQ(s.message(),
            "columns has 'a b', not a column name (letters, digits and _, dots only between "
            "them, not starting with a digit) or a repeated one");
  o.columns = {"txt"};
  o.column_max_bytes = 0;
  s = RunEpoch(o).status;
  EXPECT_EQ(s.message(), "column_max_bytes must be >= 1, got 0");
}

TEST_F(ShardColumnsTest, ListFilesShareTheOptionToPickHeaderColumns) {
  const std::string dir = TempDir("column_list");
  WriteFile(dir + "/a.jpg", testing::ValidJpeg(40, 32));
  WriteFile(dir + "/list.tsv", "#columns: path label caption url\na.jpg\t1\ta cat\thttp://x\n");
  PipelineOptions o = ColumnOptions(dir + "/list.tsv");
  o.columns = {"url"};
  Rows rows = RunEpoch(o);
  ASSERT_TRUE(rows.status.ok()) << rows.status;
  EXPECT_EQ(rows.names, std::vector<std::string>{"url"});
  EXPECT_EQ(rows.columns.at("a.jpg"), std::vector<std::string>{"http://x"});
  o.columns = {"txt"};
  rows = RunEpoch(o);
  EXPECT_EQ(rows.status.message(),
            absl::StrCat(dir, "/list.tsv: the columns option names 'txt', which its #columns: "
                              "header (caption url) does not have"));
}

TEST_F(ShardColumnsTest, InAMixtureAListSourceWithoutTheColumnGivesEmptyStrings) {
  const std::string dir = TempDir("column_mix");
  WriteFile(dir + "/a.jpg", testing::ValidJpeg(40, 32));
  WriteFile(dir + "/list.tsv", "a.jpg\t1\n");
  PipelineOptions o = ColumnOptions("");
  // Weights as sizes: one pass over each source per epoch, so shard sample 2 comes.
  o.sources = {{"shards", *pattern_, 12.0}, {"list", dir + "/list.tsv", 1.0}};
  o.columns = {"txt"};
  const Rows rows = RunEpoch(o);
  ASSERT_TRUE(rows.status.ok()) << rows.status;
  EXPECT_EQ(rows.names, std::vector<std::string>{"txt"});
  EXPECT_EQ(rows.columns.at("a.jpg"), std::vector<std::string>{""});
  EXPECT_EQ(rows.columns.at(absl::StrCat("train-000000.tar/", Name(2), ".jpg")),
            std::vector<std::string>{Text(2)});
}

TEST_F(ShardColumnsTest, MemoryPlanHasAColumnsPart) {
  PipelineOptions o = ColumnOptions(*pattern_);
  o.prefetch_batches = 2;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  bool found = false;
  for (const auto& [key, bytes] : (*p)->stats()->memory_plan) {
    if (key != "columns_bytes") continue;
    found = true;
    // Every value (10 good samples' txt + json) and 2 buffers × 5 rows × the longest row.
    EXPECT_GT(bytes, 2 * 5 * static_cast<int64_t>(Text(10).size() + Json(10).size()));
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace flowloader
