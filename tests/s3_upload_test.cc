// s3_upload_test.cc: writing s3:// objects (S3Env::NewWritableFile, S3Upload; `flowloader
// pack --out=s3://`) against a real RADOS Gateway, which checks every signature: a large
// object goes up as a multipart upload and reads back byte for byte, a small one as one
// PUT; an upload refused mid-way, dropped before Close or cancelled (Ctrl-C) leaves no
// object and no multipart upload behind; Pack to a bucket delivers the same batches as
// Pack to a directory.
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pack_command.h"
#include "runtime/pipeline.h"
#include "stages/reader/dataset.h"
#include "stages/reader/s3_env.h"
#include "stages/reader/s3_upload.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::FaultProxy;
using testing::RadosGateway;

constexpr char kBucket[] = "uploads";
constexpr int64_t kPart = int64_t{5} << 20;  // S3's smallest part.

std::string RandomBytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(static_cast<size_t>(n), '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xFF);
  return out;
}

class S3UploadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gateway_ = RadosGateway::Start(testing::TempDir("rgw")).release();
    if (gateway_ != nullptr) {
      ASSERT_TRUE(gateway_->CreateBucket(kBucket));
    }
  }
  static void TearDownTestSuite() {
    delete gateway_;
    gateway_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(gateway_, nullptr) << "the RADOS Gateway did not start";
    ::setenv("HOME", testing::TempDirForTest("home_").c_str(), 1);
    ::setenv("AWS_ACCESS_KEY_ID", gateway_->access_key().c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", gateway_->secret_key().c_str(), 1);
  }
  std::unique_ptr<S3Env> Env(const std::string& endpoint = "") const {
    S3Options s3;
    s3.endpoint = endpoint.empty() ? gateway_->endpoint() : endpoint;
    s3.upload_part_bytes = kPart;
    absl::StatusOr<std::unique_ptr<S3Env>> env = S3Env::Create(nullptr, HttpOptions(), s3);
    EXPECT_TRUE(env.ok()) << env.status();
    return env.ok() ? std::move(*env) : nullptr;
  }
  // Keys lists the keys under `prefix` of the bucket.
  std::vector<std::string> Keys(const std::string& prefix) const {
    absl::StatusOr<std::vector<std::string>> keys = Env()->ListKeys(kBucket, prefix);
    EXPECT_TRUE(keys.ok()) << keys.status();
    return keys.ok() ? *keys : std::vector<std::string>{"(listing failed)"};
  }
  // Write appends `data` to a new writer of `path` in 100 KB pieces, as pack does.
  static absl::Status Write(WritableFile& file, const std::string& data) {
    for (size_t at = 0; at < data.size(); at += 100000) {
      if (absl::Status s = file.Append(absl::string_view(data).substr(at, 100000)); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  static RadosGateway* gateway_;
};
RadosGateway* S3UploadTest::gateway_ = nullptr;

TEST_F(S3UploadTest, LargeObjectGoesUpInPartsAndReadsBackByteForByte) {
  auto env = Env();
  const std::string data = RandomBytes(2 * kPart + 123457, 1);
  auto file = env->NewWritableFile("s3://uploads/big/object.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(Write(**file, data).ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(dynamic_cast<S3Upload&>(**file).parts(), 3);  // 5 MiB, 5 MiB, the rest.
  std::string back;
  ASSERT_TRUE(env->ReadFile("s3://uploads/big/object.bin", int64_t{1} << 30, &back).ok());
  EXPECT_TRUE(back == data) << back.size() << " bytes read back, " << data.size() << " written";
  EXPECT_EQ(gateway_->MultipartUploads(kBucket), 0);
}

TEST_F(S3UploadTest, SmallObjectIsOnePut) {
  auto env = Env();
  auto file = env->NewWritableFile("s3://uploads/small/one.txt");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("hello ").ok());
  ASSERT_TRUE((*file)->Append("bucket").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(dynamic_cast<S3Upload&>(**file).parts(), 0);
  std::string back;
  ASSERT_TRUE(env->ReadFile("s3://uploads/small/one.txt", 1 << 20, &back).ok());
  EXPECT_EQ(back, "hello bucket");
  EXPECT_FALSE((*file)->Append("more").ok());  // Closed.
}

TEST_F(S3UploadTest, PartRefusedMidUploadLeavesNoObjectAndNoUpload) {
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  auto proxy = FaultProxy::Start(gateway_->port(), 1, "deny_part2", log);
  ASSERT_NE(proxy, nullptr);
  auto env = Env(proxy->endpoint());
  auto file = env->NewWritableFile("s3://uploads/denied/object.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  absl::Status s = Write(**file, RandomBytes(2 * kPart + 10, 2));
  if (s.ok()) s = (*file)->Close();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "AccessDenied")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "may not write it")) << s;
  EXPECT_FALSE(absl::StrContains(s.message(), gateway_->secret_key())) << s;
  EXPECT_TRUE(absl::StrContains(testing::ReadFile(log), "partNumber=2")) << testing::ReadFile(log);
  EXPECT_TRUE(Keys("denied/").empty());
  EXPECT_EQ(gateway_->MultipartUploads(kBucket), 0);  // Aborted, its part 1 freed.
}

// The gateway completes the upload but its answer is lost: the retried Complete finds
// no upload (NoSuchUpload). The object that is there is the one sent (its multipart ETag
// is the MD5 of the parts' MD5s), so Close succeeds rather than failing a finished pack.
TEST_F(S3UploadTest, LostCompleteAnswerIsCheckedAgainstTheObject) {
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  auto proxy = FaultProxy::Start(gateway_->port(), 1, "lose_complete", log);
  ASSERT_NE(proxy, nullptr);
  auto env = Env(proxy->endpoint());
  const std::string data = RandomBytes(kPart + 4321, 5);
  auto file = env->NewWritableFile("s3://uploads/lost/object.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(Write(**file, data).ok());
  absl::Status s = (*file)->Close();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(absl::StrContains(testing::ReadFile(log), "lose_complete POST"))
      << testing::ReadFile(log);
  std::string back;
  ASSERT_TRUE(Env()->ReadFile("s3://uploads/lost/object.bin", int64_t{1} << 30, &back).ok());
  EXPECT_TRUE(back == data);
  EXPECT_EQ(gateway_->MultipartUploads(kBucket), 0);
}

// The same refusal when the first Complete never arrived: no object carries this
// upload's ETag, so Close fails saying so, and the upload is aborted.
TEST_F(S3UploadTest, NoSuchUploadWithoutTheObjectFails) {
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  auto proxy = FaultProxy::Start(gateway_->port(), 1, "drop_complete", log);
  ASSERT_NE(proxy, nullptr);
  auto env = Env(proxy->endpoint());
  auto file = env->NewWritableFile("s3://uploads/dropped_complete/object.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(Write(**file, RandomBytes(kPart + 99, 6)).ok());
  absl::Status s = (*file)->Close();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "NoSuchUpload")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "the object there is not this upload's")) << s;
  EXPECT_TRUE(Keys("dropped_complete/").empty());
  EXPECT_EQ(gateway_->MultipartUploads(kBucket), 0);
}

TEST_F(S3UploadTest, WriterDroppedBeforeCloseLeavesNothing) {
  auto env = Env();
  {
    auto file = env->NewWritableFile("s3://uploads/dropped/object.bin");
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(Write(**file, RandomBytes(kPart + 10, 3)).ok());
    EXPECT_EQ(dynamic_cast<S3Upload&>(**file).parts(), 1);
    EXPECT_EQ(gateway_->MultipartUploads(kBucket), 1);  // Under way.
  }
  EXPECT_EQ(gateway_->MultipartUploads(kBucket), 0);
  EXPECT_TRUE(Keys("dropped/").empty());
}

TEST_F(S3UploadTest, CancelledUploadIsStillAborted) {
  auto env = Env();
  auto file = env->NewWritableFile("s3://uploads/cancelled/object.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(Write(**file, RandomBytes(kPart + 10, 4)).ok());
  env->Cancel();  // Ctrl-C.
  const absl::Status s = Write(**file, RandomBytes(kPart, 5));
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  file->reset();
  EXPECT_EQ(gateway_->MultipartUploads(kBucket), 0);
  EXPECT_TRUE(Keys("cancelled/").empty());
}

TEST_F(S3UploadTest, BadKeysAndPartSizesAreRefused) {
  auto env = Env();
  EXPECT_FALSE(env->NewWritableFile("s3://uploads/").ok());
  EXPECT_FALSE(env->NewWritableFile("s3://uploads").ok());
  S3Options s3;
  s3.endpoint = gateway_->endpoint();
  s3.upload_part_bytes = 1 << 20;
  const auto small = S3Env::Create(nullptr, HttpOptions(), s3);
  ASSERT_FALSE(small.ok());
  EXPECT_TRUE(absl::StrContains(small.status().message(), "--part_size")) << small.status();
}

TEST_F(S3UploadTest, PackToTheBucketDeliversThePackToDiskBatches) {
  const std::string folder = testing::MakeImageFolder(testing::TempDir("folder"), 3, 8);
  PackOptions local;
  local.data = folder;
  local.out = testing::TempDir("packed");
  local.shard_size_bytes = 40000;
  absl::StatusOr<PackResult> on_disk = Pack(local);
  ASSERT_TRUE(on_disk.ok()) << on_disk.status();
  ASSERT_GT(on_disk->shards.size(), 1u);
  PackOptions remote = local;
  remote.out = "s3://uploads/packed/";
  remote.storage.s3.endpoint = gateway_->endpoint();
  absl::StatusOr<PackResult> in_bucket = Pack(remote);
  ASSERT_TRUE(in_bucket.ok()) << in_bucket.status();
  EXPECT_EQ(in_bucket->shards.size(), on_disk->shards.size());
  EXPECT_TRUE(absl::StartsWith(in_bucket->pattern, "s3://uploads/packed/train-{000000..")) << in_bucket->pattern;
  // Each shard and its index file, and classes.txt.
  EXPECT_EQ(Keys("packed/").size(), 2 * on_disk->shards.size() + 1);
  // Packing again into the same prefix is refused, as into the same directory.
  EXPECT_EQ(Pack(remote).status().code(), absl::StatusCode::kAlreadyExists);

  auto options = [&](const std::string& data) {
    PipelineOptions o = testing::SmallCpuOptions(data, /*batch_size=*/5, nullptr);
    o.epochs = 1;
    o.seed = 3;
    o.s3.endpoint = gateway_->endpoint();
    return o;
  };
  const testing::Delivered disk = testing::RunAll(options(on_disk->pattern));
  const testing::Delivered s3 = testing::RunAll(options(in_bucket->pattern));
  ASSERT_TRUE(disk.status.ok()) << disk.status;
  ASSERT_TRUE(s3.status.ok()) << s3.status;
  ASSERT_EQ(disk.batches.size(), 5u);  // ceil(24 / 5).
  EXPECT_EQ(s3.batches, disk.batches);

  // The index files: each shard opens with two small GETs (its index, its last KiB)
  // instead of its header windows, to the samples a scan of its headers finds.
  DatasetOptions indexed;
  indexed.path = in_bucket->pattern;
  indexed.s3.endpoint = gateway_->endpoint();
  DatasetOptions scanning = indexed;
  scanning.use_shard_index = false;
  absl::StatusOr<std::unique_ptr<Dataset>> from_index = Dataset::Open(indexed);
  absl::StatusOr<std::unique_ptr<Dataset>> scanned = Dataset::Open(scanning);
  ASSERT_TRUE(from_index.ok()) << from_index.status();
  ASSERT_TRUE(scanned.ok()) << scanned.status();
  const auto shards = static_cast<int64_t>(in_bucket->shards.size());
  EXPECT_EQ((*from_index)->shard_index_counts().used, shards);
  EXPECT_EQ((*from_index)->storage()->requests(), 2 * shards);
  ASSERT_EQ((*from_index)->size(), (*scanned)->size());
  for (int64_t i = 0; i < (*scanned)->size(); ++i) {
    EXPECT_EQ((*from_index)->sample(i).key, (*scanned)->sample(i).key);
    EXPECT_EQ((*from_index)->sample(i).label, (*scanned)->sample(i).label);
    EXPECT_EQ((*from_index)->sample(i).offset, (*scanned)->sample(i).offset);
    EXPECT_EQ((*from_index)->sample(i).size, (*scanned)->sample(i).size);
  }
}

}  // namespace
}  // namespace flowloader
