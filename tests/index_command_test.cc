// index_command_test: `flowloader index` on shards GNU tar wrote (ustar, GNU long names,
// pax headers), locally, in a bucket of a real RADOS Gateway and over nginx: after it a
// Dataset opens every shard from its index (used, none scanned) with exactly the
// members, offsets, labels and keys a scan gives; a second run leaves good indexes
// alone; a shard cut short gets none and is named; http(s) shards need --out.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/index_command.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

// What a test compares of an opened dataset: every sample's key, label and members.
struct Opened {
  std::vector<std::string> samples;  // "key label member@offset+size ...".
  Dataset::ShardIndexCounts counts;
};

Opened Open(const std::string& data, const S3Options& s3 = S3Options()) {
  DatasetOptions o;
  o.path = data;
  o.s3 = s3;
  absl::StatusOr<std::unique_ptr<Dataset>> d = Dataset::Open(o);
  EXPECT_TRUE(d.ok()) << d.status();
  Opened out;
  if (!d.ok()) return out;
  for (int64_t i = 0; i < (*d)->size(); ++i) {
    const SampleSource& s = (*d)->sample(i);
    std::string line = absl::StrCat(s.key, " ", s.label, " ", s.shard, "@", s.offset, "+",
                                    s.size, s.error.ok() ? "" : " failed");
    for (const SampleMember& m : (*d)->members(i)) {
      absl::StrAppend(&line, " ", m.extension, "@", m.offset, "+", m.size);
    }
    out.samples.push_back(line);
  }
  out.counts = (*d)->shard_index_counts();
  return out;
}

// Shell runs `command`, failing the test when it does not exit 0.
void Shell(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

// OtherToolShards writes, beside MakeShards' ustar shards, two shards as other tools
// write them: GNU tar with 140-byte member names (././@LongLink records) and pax.
void OtherToolShards(const std::string& dir) {
  const std::string long_dir = testing::TempDir("long_names");
  const std::string stem(130, 'k');
  for (int i = 0; i < 3; ++i) {
    testing::WriteFile(absl::StrCat(long_dir, "/", stem, i, ".jpg"), testing::ValidJpeg(40, 30, i));
    testing::WriteFile(absl::StrCat(long_dir, "/", stem, i, ".cls"), absl::StrCat(i));
  }
  Shell(absl::StrCat("cd ", long_dir, " && tar --format=gnu -cf ", dir,
                     "/train-000097.tar $(ls | sort)"));
  Shell(absl::StrCat("cd ", long_dir, " && tar --format=pax -cf ", dir,
                     "/train-000098.tar $(ls | sort)"));
}

IndexCommandOptions Options(const std::string& data) {
  IndexCommandOptions o;
  o.data = data;
  o.threads = 3;
  return o;
}

TEST(IndexCommandTest, LocalShardsFromOtherToolsOpenFromTheirIndexes) {
  const std::string folder = testing::MakeImageFolder(testing::TempDir("folder"), 2, 9);
  const std::string dir = testing::TempDir("shards");
  testing::MakeShards(folder, dir, 5);  // 4 shards of GNU tar's default (ustar-ish) format.
  OtherToolShards(dir);

  const Opened scanned = Open(dir);
  ASSERT_EQ(scanned.samples.size(), 18u + 6u);
  EXPECT_EQ(scanned.counts.used, 0);
  EXPECT_EQ(scanned.counts.missing, 6);

  absl::StatusOr<IndexCommandResult> r = IndexShardFiles(Options(dir));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->shards, 6);
  EXPECT_EQ(r->written, 6);
  EXPECT_EQ(r->members, 2 * 24);
  EXPECT_TRUE(r->failed.empty()) << r->failed[0];

  const Opened indexed = Open(dir);
  EXPECT_EQ(indexed.counts.used, 6);
  EXPECT_EQ(indexed.counts.missing + indexed.counts.stale + indexed.counts.damaged, 0);
  EXPECT_EQ(indexed.samples, scanned.samples);

  // Good indexes are left alone, unless forced.
  r = IndexShardFiles(Options(dir + "/train-{000000..000003}.tar"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->current, 4);
  EXPECT_EQ(r->written, 0);
  IndexCommandOptions force = Options(dir);
  force.force = true;
  r = IndexShardFiles(force);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->written, 6);
}

TEST(IndexCommandTest, DamagedShardsGetNoIndexAndAreNamed) {
  const std::string folder = testing::MakeImageFolder(testing::TempDir("folder2"), 1, 6);
  const std::string dir = testing::TempDir("cut");
  testing::MakeShards(folder, dir, 3);
  const std::string whole = testing::ReadFile(dir + "/train-000001.tar");
  testing::WriteFile(dir + "/train-000001.tar", whole.substr(0, whole.size() / 2));
  absl::StatusOr<IndexCommandResult> r = IndexShardFiles(Options(dir));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->written, 1);
  ASSERT_EQ(r->failed.size(), 1u);
  EXPECT_NE(r->failed[0].find("train-000001.tar: "), std::string::npos) << r->failed[0];
  EXPECT_FALSE(testing::ReadFile(dir + "/train-000001.tar.idx").size() > 0);

  const absl::StatusOr<IndexCommandResult> none = IndexShardFiles(Options(folder));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("names no .tar shard"), std::string::npos)
      << none.status();
}

TEST(IndexCommandTest, HttpShardsTakeTheirIndexesFromOut) {
  const std::string folder = testing::MakeImageFolder(testing::TempDir("folder3"), 2, 4);
  const std::string dir = testing::TempDir("served");
  testing::MakeShards(folder, dir, 4);
  testing::Server nginx = testing::Server::Nginx(dir, testing::TempDir("nginx"));
  ASSERT_TRUE(nginx.running());
  const std::string url = nginx.Url("/train-{000000..000001}.tar");
  const Opened scanned = Open(url);
  EXPECT_EQ(scanned.counts.missing, 2);

  const absl::StatusOr<IndexCommandResult> refused = IndexShardFiles(Options(url));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("give --out=DIR"), std::string::npos)
      << refused.status();
  IndexCommandOptions o = Options(url);
  o.out = dir;  // nginx serves it: as if the user uploaded the indexes beside the shards.
  absl::StatusOr<IndexCommandResult> r = IndexShardFiles(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->written, 2);
  const Opened indexed = Open(url);
  EXPECT_EQ(indexed.counts.used, 2);
  EXPECT_EQ(indexed.samples, scanned.samples);
}

TEST(IndexCommandTest, ShardsInABucketGetTheirIndexesAsObjects) {
  std::unique_ptr<testing::RadosGateway> gateway =
      testing::RadosGateway::Start(testing::TempDir("rgw"));
  ASSERT_NE(gateway, nullptr);
  ::setenv("AWS_ACCESS_KEY_ID", gateway->access_key().c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", gateway->secret_key().c_str(), 1);
  const std::string folder = testing::MakeImageFolder(testing::TempDir("folder4"), 2, 5);
  const std::string dir = testing::TempDir("bucket_shards");
  testing::MakeShards(folder, dir, 4);
  OtherToolShards(dir);
  ASSERT_TRUE(gateway->CreateBucket("data"));
  ASSERT_EQ(gateway->Upload(dir, "data", "shards/"), 5);
  S3Options s3;
  s3.endpoint = gateway->endpoint();
  const Opened scanned = Open("s3://data/shards/", s3);
  EXPECT_EQ(scanned.counts.missing, 5);

  IndexCommandOptions o = Options("s3://data/shards/");
  o.storage.s3 = s3;
  absl::StatusOr<IndexCommandResult> r = IndexShardFiles(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->written, 5);
  EXPECT_TRUE(r->failed.empty()) << r->failed[0];
  const Opened indexed = Open("s3://data/shards/", s3);
  EXPECT_EQ(indexed.counts.used, 5);
  EXPECT_EQ(indexed.samples, scanned.samples);
}

}  // namespace
}  // namespace flowloader
