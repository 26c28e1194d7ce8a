// s3_test.cc: s3:// data against a real S3 server, Ceph's RADOS Gateway on 127.0.0.1
// (tests/testing/radosgw.sh), which checks every signature: an ImageFolder prefix and tar
// shards with brace ranges deliver the same batches as the same files on disk, listing
// goes by pages, ranges are exact, each credential source of the chain works, and the
// store's refusals (wrong secret, unknown key id, no bucket, empty prefix, no endpoint,
// anonymous on a private bucket) are one line naming bucket, endpoint and credential
// source, never the secret. A key deleted mid-run is a counted not_found skip; a gateway
// killed and restarted mid-epoch loses nothing.
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"
#include "stages/reader/s3_env.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Delivered;
using testing::MakeImageFolder;
using testing::MakeShards;
using testing::FaultProxy;
using testing::RadosGateway;
using testing::RunAll;
using testing::SmallCpuOptions;

constexpr char kBucket[] = "data";

// The AWS variables a test may set; each test starts with none of them.
constexpr const char* kAwsVariables[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
    "AWS_REGION", "AWS_DEFAULT_REGION"};

class S3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gateway_ = RadosGateway::Start(testing::TempDir("rgw")).release();
    if (gateway_ == nullptr) return;
    folder_ = new std::string(MakeImageFolder(testing::TempDir("s3_folder"), 3, 12));
    const std::string shard_dir = testing::TempDir("s3_tars");
    pattern_ = new std::string(MakeShards(*folder_, shard_dir, 8));  // 5 shards, last 4.
    ASSERT_TRUE(gateway_->CreateBucket(kBucket));
    ASSERT_GE(gateway_->Upload(*folder_, kBucket, "train/"), 36);  // Images and more.
    ASSERT_EQ(gateway_->Upload(shard_dir, kBucket, "shards/"), 5);
    shard_dir_ = new std::string(shard_dir);
  }
  static void TearDownTestSuite() {
    delete gateway_;
    gateway_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(gateway_, nullptr) << "the RADOS Gateway did not start";
    for (const char* name : kAwsVariables) ::unsetenv(name);
    home_ = testing::TempDirForTest("home_");
    ::setenv("HOME", home_.c_str(), 1);  // No ~/.aws of the machine's.
    ::setenv("AWS_ACCESS_KEY_ID", gateway_->access_key().c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", gateway_->secret_key().c_str(), 1);
  }
  void TearDown() override {
    for (const char* name : kAwsVariables) ::unsetenv(name);
  }
  PipelineOptions Options(const std::string& data) {
    PipelineOptions o = SmallCpuOptions(data, /*batch_size=*/5, nullptr);
    o.epochs = 2;
    o.seed = 7;
    o.s3.endpoint = gateway_->endpoint();
    o.s3.list_page_keys = 5;  // 12 images a class: three pages each.
    return o;
  }
  // OpenShared opens `o`'s data as the pipeline would (its block cache included) and
  // makes `o` run on it, so a test reads the Dataset's storage counts after the run.
  static std::shared_ptr<const Dataset> OpenShared(PipelineOptions* o) {
    DatasetOptions listing;
    listing.path = o->data;
    listing.s3 = o->s3;
    listing.http = o->http;
    listing.http.cache_bytes = o->http_cache_mb << 20;
    auto ds = Dataset::Open(listing);
    EXPECT_TRUE(ds.ok()) << ds.status();
    if (!ds.ok()) return nullptr;
    std::shared_ptr<const Dataset> dataset = std::move(*ds);
    o->dataset = dataset;
    o->data.clear();
    return dataset;
  }
  S3Options S3() const {
    S3Options s3;
    s3.endpoint = gateway_->endpoint();
    return s3;
  }
  // Refusal is the status Pipeline::Create gives for `o`, checked to be one line without
  // the secret.
  absl::Status Refusal(const PipelineOptions& o) {
    auto p = Pipeline::Create(o);
    if (p.ok()) return absl::OkStatus();
    EXPECT_FALSE(absl::StrContains(p.status().message(), "\n")) << p.status();
    EXPECT_FALSE(absl::StrContains(p.status().message(), gateway_->secret_key())) << p.status();
    return p.status();
  }

  static RadosGateway* gateway_;
  static std::string* folder_;
  static std::string* pattern_;
  static std::string* shard_dir_;
  std::string home_;
};
RadosGateway* S3Test::gateway_ = nullptr;
std::string* S3Test::folder_ = nullptr;
std::string* S3Test::pattern_ = nullptr;
std::string* S3Test::shard_dir_ = nullptr;

TEST_F(S3Test, ImageFolderPrefixDeliversTheLocalBatchesByteForByte) {
  const Delivered local = RunAll(Options(*folder_));
  const Delivered s3 = RunAll(Options("s3://data/train/"));
  ASSERT_TRUE(local.status.ok()) << local.status;
  ASSERT_TRUE(s3.status.ok()) << s3.status;
  ASSERT_EQ(s3.batches.size(), 16u);  // 2 epochs × ceil(36 / 5).
  EXPECT_EQ(s3.batches, local.batches);
  EXPECT_EQ(s3.keys, local.keys);
  EXPECT_TRUE(s3.skipped.empty());
}

TEST_F(S3Test, ShardsByBraceRangeAndByPrefixDeliverTheLocalBatches) {
  const Delivered local = RunAll(Options(*pattern_));
  const Delivered braces = RunAll(Options("s3://data/shards/train-{000000..000004}.tar"));
  const Delivered prefix = RunAll(Options("s3://data/shards"));
  ASSERT_TRUE(local.status.ok()) << local.status;
  ASSERT_TRUE(braces.status.ok()) << braces.status;
  ASSERT_TRUE(prefix.status.ok()) << prefix.status;
  ASSERT_EQ(local.batches.size(), 16u);
  EXPECT_EQ(braces.batches, local.batches);
  EXPECT_EQ(prefix.batches, local.batches);
  EXPECT_EQ(braces.keys, local.keys);
}

// The shards' index reads every byte of these small shards (one window each); the
// windows are kept as the block cache's blocks, so both epochs cost no further GET.
TEST_F(S3Test, ShardIndexWindowsServeTheEpochsWithoutAnotherGet) {
  PipelineOptions o = Options("s3://data/shards/train-{000000..000004}.tar");
  std::shared_ptr<const Dataset> dataset = OpenShared(&o);
  ASSERT_NE(dataset, nullptr);
  const int64_t index_gets = dataset->storage()->requests();
  // Per shard, its index file's GET (404: GNU tar wrote these shards, without one) and
  // one 1 MiB window.
  EXPECT_EQ(index_gets, 2 * 5);
  const Delivered s3 = RunAll(o);
  const Delivered local = RunAll(Options(*pattern_));
  ASSERT_TRUE(s3.status.ok()) << s3.status;
  EXPECT_EQ(s3.batches, local.batches);
  EXPECT_EQ(dataset->storage()->requests(), index_gets);
}

// Under read_ahead: auto, a prefix of objects keeps at least 16 GETs in flight (the read
// stage's floor for objects of their own: a gateway serves requests that arrive together
// for less CPU each), though Little's law on loopback asks for fewer.
TEST_F(S3Test, AutoReadAheadKeepsAtLeast16GetsInFlightForAPrefix) {
  PipelineOptions o = Options("s3://data/train/");
  std::shared_ptr<const Dataset> dataset = OpenShared(&o);
  ASSERT_NE(dataset, nullptr);
  const Delivered s3 = RunAll(o);
  ASSERT_TRUE(s3.status.ok()) << s3.status;
  const ReadAheadFigures f = dataset->storage()->storage_stats()->read_ahead();
  ASSERT_TRUE(f.present);
  EXPECT_TRUE(f.adaptive);
  EXPECT_GE(f.limit, 16);
  EXPECT_GT(f.started, 0);
}

TEST_F(S3Test, ListsByPagesAndReadsExactRanges) {
  S3Options s3 = S3();
  s3.list_page_keys = 2;
  auto env = S3Env::Create(nullptr, HttpOptions(), s3);
  ASSERT_TRUE(env.ok()) << env.status();
  auto keys = (*env)->ListKeys(kBucket, "train/");
  ASSERT_TRUE(keys.ok()) << keys.status();
  // 36 images and MakeImageFolder's .flowloader-sample marker, 2 a page.
  EXPECT_EQ(keys->size(), 37u);
  EXPECT_EQ(std::set<std::string>(keys->begin(), keys->end()).size(), 37u);
  EXPECT_EQ((*env)->list_pages(), 19);

  auto classes = (*env)->ListDirectory("s3://data/train");
  ASSERT_TRUE(classes.ok()) << classes.status();
  std::set<std::string> dirs;
  for (const DirEntry& e : *classes) {
    if (e.is_directory) dirs.insert(e.name);  // The classes are the common prefixes.
  }
  EXPECT_EQ(dirs, (std::set<std::string>{"class_000", "class_001", "class_002"}));
  EXPECT_TRUE(*(*env)->IsDirectory("s3://data/train/"));
  EXPECT_FALSE(*(*env)->IsDirectory("s3://data/shards/train-000000.tar"));

  const std::string local = testing::ReadFile(*shard_dir_ + "/train-000001.tar");
  std::string bytes;
  ASSERT_TRUE((*env)->ReadFile("s3://data/shards/train-000001.tar", 1 << 30, &bytes).ok());
  EXPECT_EQ(bytes, local);
  ASSERT_TRUE((*env)->ReadRange("s3://data/shards/train-000001.tar", 700, 1000, &bytes).ok());
  EXPECT_EQ(bytes, local.substr(700, 1000));
  const int64_t size = static_cast<int64_t>(local.size());
  ASSERT_TRUE((*env)->ReadRange("s3://data/shards/train-000001.tar", size - 10, 100, &bytes).ok());
  EXPECT_EQ(bytes, local.substr(local.size() - 10));  // Clipped at the end.
  ASSERT_TRUE((*env)->ReadRange("s3://data/shards/train-000001.tar", size + 5, 10, &bytes).ok());
  EXPECT_EQ(bytes, "");  // Past the end: nothing (416).
  absl::Status missing = (*env)->ReadFile("s3://data/shards/nope.tar", 1 << 20, &bytes);
  EXPECT_EQ(ErrorReason(missing), "not_found") << missing;
}

// A whole GET is written into one block sized from Content-Length (HttpEnv's
// ReserveBody), not grown chunk by chunk: 1 MB arrives in several callbacks (curl's
// buffer is 256 KiB), and growing would leave a power-of-two-ish capacity.
TEST_F(S3Test, AWholeGetFillsOneBlockOfTheBodysSize) {
  std::string body(1000001, 'x');
  for (size_t i = 0; i < body.size(); i += 4097) body[i] = static_cast<char>(i % 251);
  ASSERT_TRUE(gateway_->Put(kBucket, "big/object.bin", body));
  auto env = S3Env::Create(nullptr, HttpOptions(), S3());
  ASSERT_TRUE(env.ok()) << env.status();
  std::string bytes;
  ASSERT_TRUE((*env)->ReadFile("s3://data/big/object.bin", 1 << 30, &bytes).ok());
  EXPECT_EQ(bytes, body);
  EXPECT_EQ(bytes.capacity(), body.size());
  std::string part;  // A range: Content-Length is the range's.
  ASSERT_TRUE((*env)->ReadRange("s3://data/big/object.bin", 12345, 600000, &part).ok());
  EXPECT_EQ(part, body.substr(12345, 600000));
  EXPECT_EQ(part.capacity(), 600000u);
  ASSERT_TRUE(gateway_->Delete(kBucket, "big/object.bin"));
}

// An object over the bytes a reader accepts (the read stage's share of memory for one
// sample) is refused with its size, from the GET's Content-Length, before any of its body
// is kept (it read up to the limit and said "limit + 1 bytes").
TEST_F(S3Test, AnObjectOverTheLimitIsRefusedWithItsSize) {
  const std::string body(1000001, 'y');
  ASSERT_TRUE(gateway_->Put(kBucket, "big/too_large.bin", body));
  auto env = S3Env::Create(nullptr, HttpOptions(), S3());
  ASSERT_TRUE(env.ok()) << env.status();
  std::string bytes;
  const absl::Status s = (*env)->ReadFile("s3://data/big/too_large.bin", 65536, &bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(TooLargeSize(s), 1000001) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "1000001 bytes is over the limit of 65536")) << s;
  EXPECT_TRUE(bytes.empty());
  ASSERT_TRUE(gateway_->Delete(kBucket, "big/too_large.bin"));
}

TEST_F(S3Test, EachCredentialSourceOfTheChainReads) {
  auto open = [this](const S3Options& s3) -> std::string {
    DatasetOptions o;
    o.path = "s3://data/train";
    o.s3 = s3;
    auto ds = Dataset::Open(o);
    if (!ds.ok()) return std::string(ds.status().message());
    EXPECT_EQ((*ds)->size(), 36);
    const std::vector<std::string> described = (*ds)->storage()->Describe();
    EXPECT_EQ(described.size(), 1u);
    for (const std::string& line : described) {
      EXPECT_FALSE(absl::StrContains(line, gateway_->secret_key())) << line;
    }
    return described.empty() ? "" : described[0];
  };
  // 1. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (with a session token header, signed).
  ::setenv("AWS_SESSION_TOKEN", "token-of-the-test", 1);
  EXPECT_TRUE(absl::StrContains(open(S3()), "credentials from environment (AWS_ACCESS_KEY_ID)"));
  ::unsetenv("AWS_SESSION_TOKEN");

  // 2. AWS_PROFILE in the file AWS_SHARED_CREDENTIALS_FILE names; the endpoint and region
  // from AWS_ENDPOINT_URL_S3 and AWS_REGION.
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  const std::string credentials = home_ + "/creds";
  testing::WriteFile(credentials, absl::StrCat("[default]\naws_access_key_id = WRONG\n"
                                               "aws_secret_access_key = wrong\n[ceph]\n"
                                               "aws_access_key_id = ", gateway_->access_key(),
                                               "\naws_secret_access_key = ",
                                               gateway_->secret_key(), "\n"));
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", credentials.c_str(), 1);
  ::setenv("AWS_PROFILE", "ceph", 1);
  ::setenv("AWS_ENDPOINT_URL_S3", gateway_->endpoint().c_str(), 1);
  ::setenv("AWS_REGION", "eu-central-1", 1);
  const std::string from_profile = open(S3Options());
  EXPECT_TRUE(absl::StrContains(from_profile, "credentials from profile ceph in " + credentials))
      << from_profile;
  EXPECT_TRUE(absl::StrContains(from_profile, "(AWS_ENDPOINT_URL_S3), region eu-central-1"))
      << from_profile;
  for (const char* name : kAwsVariables) ::unsetenv(name);

  // 3. ~/.aws/config's [profile NAME] named by s3_profile, with its endpoint_url and
  // addressing style.
  ASSERT_EQ(std::system(("mkdir -p " + home_ + "/.aws").c_str()), 0);
  testing::WriteFile(home_ + "/.aws/config",
                     absl::StrCat("[profile rgw]\naws_access_key_id = ", gateway_->access_key(),
                                  "\naws_secret_access_key = ", gateway_->secret_key(),
                                  "\nendpoint_url = ", gateway_->endpoint(),
                                  "\ns3 =\n  addressing_style = path\n"));
  S3Options by_option;
  by_option.profile = "rgw";
  const std::string from_config = open(by_option);
  EXPECT_TRUE(absl::StrContains(from_config, "credentials from profile rgw in " + home_ +
                                                 "/.aws/config"))
      << from_config;
  EXPECT_TRUE(absl::StrContains(from_config, "path-style")) << from_config;
}

TEST_F(S3Test, WrongSecretIsRefusedAtCreateWithTheUsualCauses) {
  ::setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
  for (const std::string& data : {std::string("s3://data/train"),
                                  std::string("s3://data/shards/train-{000000..000004}.tar")}) {
    const absl::Status s = Refusal(Options(data));
    ASSERT_FALSE(s.ok()) << data;
    EXPECT_TRUE(absl::StrContains(s.message(), "HTTP 403 SignatureDoesNotMatch")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "a wrong secret key for access key " +
                                                   gateway_->access_key()))
        << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "clock")) << s;
    EXPECT_TRUE(absl::StrContains(
        s.message(), absl::StrCat("bucket data, endpoint ", gateway_->endpoint())))
        << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "credentials from environment")) << s;
    EXPECT_FALSE(absl::StrContains(s.message(), "not-the-secret")) << s;
  }
}

TEST_F(S3Test, StoreRefusalsAreOneLineNamingBucketEndpointAndCredentials) {
  struct Case {
    std::string data;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"s3://no-such-bucket/train", "HTTP 404 NoSuchBucket"},
           {"s3://data/empty/", "no such key, and no key under prefix 'empty/'"},
       }) {
    const absl::Status s = Refusal(Options(c.data));
    ASSERT_FALSE(s.ok()) << c.data;
    EXPECT_TRUE(absl::StrContains(s.message(), c.expected)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "endpoint " + gateway_->endpoint())) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "credentials from environment")) << s;
  }

  ::setenv("AWS_ACCESS_KEY_ID", "NOSUCHACCESSKEY00000", 1);
  absl::Status s = Refusal(Options("s3://data/train"));
  EXPECT_TRUE(absl::StrContains(s.message(), "InvalidAccessKeyId")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "does not know access key NOSUCHACCESSKEY00000"))
      << s;

  PipelineOptions anonymous = Options("s3://data/train");
  anonymous.s3.anonymous = true;  // The bucket is private: an unsigned listing is denied.
  s = Refusal(anonymous);
  EXPECT_TRUE(absl::StrContains(s.message(), "HTTP 403 AccessDenied")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "credentials from none")) << s;

  PipelineOptions nobody = Options("s3://data/train");
  nobody.s3.endpoint = absl::StrCat("http://127.0.0.1:", testing::FreePort());
  nobody.http.max_retries = 1;
  nobody.http.initial_backoff = absl::Milliseconds(1);
  s = Refusal(nobody);
  EXPECT_TRUE(absl::StrContains(s.message(), "Couldn't connect to server")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), nobody.s3.endpoint)) << s;
}

TEST_F(S3Test, AKeyDeletedMidRunIsACountedNotFoundSkip) {
  ASSERT_GE(gateway_->Upload(*folder_, kBucket, "vanish/"), 36);
  PipelineOptions o = Options("");
  // Workers read each key when they reach it: read-ahead would fetch the key (the whole
  // small epoch) before the delete below.
  o.http.read_ahead = 0;
  DatasetOptions listing;
  listing.path = "s3://data/vanish";
  listing.s3 = o.s3;
  listing.http = o.http;  // The dataset's Env carries read_ahead to the read stage.
  auto ds = Dataset::Open(listing);  // Listed now: 36 samples.
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 36);
  const std::string class_dir = (*ds)->class_names().at(1);
  const std::string key = (*ds)->sample(12).key;  // The second class's first image.
  o.dataset = std::move(*ds);
  o.data.clear();
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(gateway_->Delete(kBucket, "vanish/" + key));
  std::map<std::string, int> skipped;
  int delivered = 0;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    absl::Status s = (*p)->Next(&batch, &end_of_epoch);
    ASSERT_TRUE(s.ok()) << s;
    if (end_of_epoch && (*p)->done()) break;
    if (batch == nullptr) continue;
    delivered += static_cast<int>(batch->keys.size());
    for (const SkippedSample& k : batch->skipped) {
      ++skipped[k.reason];
      EXPECT_EQ(k.key, key);
    }
  }
  EXPECT_EQ(delivered, 2 * 35);
  EXPECT_EQ(skipped["not_found"], 2);  // Once per epoch.
  EXPECT_TRUE(absl::StartsWith(key, class_dir + "/")) << key;
}

// Faults: every 4th request through the proxy is a 503 SlowDown (with and without
// Retry-After), a 500, a reset connection, a body cut in half or a 3 s stall. The runs
// lose and duplicate nothing: the same batches as the disk, no skip, every fault retried.
TEST_F(S3Test, FaultsThroughAProxyAreRetriedAndLoseNothing) {
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  std::unique_ptr<FaultProxy> proxy = FaultProxy::Start(
      gateway_->port(), 4, "slowdown,reset,cut,internal,retry_after,stall", log);
  for (const auto& [local, remote] :
       std::vector<std::pair<std::string, std::string>>{
           {*folder_, "s3://data/train/"},
           {*pattern_, "s3://data/shards/train-{000000..000004}.tar"}}) {
    PipelineOptions o = Options(remote);
    o.s3.endpoint = proxy->endpoint();
    o.http.stall_timeout = absl::Seconds(1);
    o.http.initial_backoff = absl::Milliseconds(5);
    o.http.max_retries = 6;
    o.http_cache_mb = 1;  // Shards: some admitted (block reads), some read per member.
    DatasetOptions listing;
    listing.path = remote;
    listing.s3 = o.s3;
    listing.http = o.http;
    listing.http.cache_bytes = o.http_cache_mb << 20;
    auto ds = Dataset::Open(listing);
    ASSERT_TRUE(ds.ok()) << ds.status();
    std::shared_ptr<const Dataset> dataset = std::move(*ds);
    o.dataset = dataset;
    o.data.clear();
    const Delivered through_faults = RunAll(o);
    const Delivered disk = RunAll(Options(local));
    ASSERT_TRUE(through_faults.status.ok()) << through_faults.status;
    EXPECT_EQ(through_faults.batches, disk.batches) << remote;
    EXPECT_TRUE(through_faults.skipped.empty()) << remote;
    EXPECT_GT(dataset->storage()->retries(), 0) << remote;
  }
  const std::string faults = testing::ReadFile(log);
  for (const char* kind : {"slowdown", "reset", "cut", "internal", "retry_after", "stall"}) {
    EXPECT_TRUE(absl::StrContains(faults, std::string(kind) + " GET")) << kind << " in\n" << faults;
  }
}

// A gateway killed (SIGKILL) and restarted mid-epoch, down for about 3 s: the reads in
// flight and those sent while it is down are retried (8 retries by default, at least
// 12.75 s of waits), so the run finishes with the batches of an undisturbed run: nothing
// lost, nothing duplicated, nothing skipped.
TEST_F(S3Test, AGatewayRestartedMidEpochLosesNothing) {
  for (const auto& [local, remote] :
       std::vector<std::pair<std::string, std::string>>{
           {*folder_, "s3://data/train/"},
           {*pattern_, "s3://data/shards/train-{000000..000004}.tar"}}) {
    PipelineOptions o = Options(remote);
    o.http_cache_mb = 0;  // Every member its own GET, so that reads meet the outage.
    // No read-ahead: it would finish every read of this small set before the outage.
    // Its threads read through the same retry loop (HttpEnv::Fetch) as the workers.
    o.http.read_ahead = 0;
    DatasetOptions listing;
    listing.path = remote;
    listing.s3 = o.s3;
    listing.http.cache_bytes = 0;
    listing.http.read_ahead = 0;  // The dataset's Env carries read_ahead to the read stage.
    auto ds = Dataset::Open(listing);
    ASSERT_TRUE(ds.ok()) << ds.status();
    std::shared_ptr<const Dataset> dataset = std::move(*ds);
    o.dataset = dataset;
    o.data.clear();
    std::thread restart;
    bool came_back = false;
    const Delivered disturbed = RunAll(o, [&](int n) {
      if (n == 2) restart = std::thread([&] { came_back = gateway_->RestartGateway(1.0); });
      // A slow consumer from there on: the run spans the outage.
      if (n >= 2) absl::SleepFor(absl::Milliseconds(100));
    });
    restart.join();
    ASSERT_TRUE(came_back) << "radosgw did not restart";
    const Delivered undisturbed = RunAll(Options(local));
    ASSERT_TRUE(disturbed.status.ok()) << disturbed.status;
    EXPECT_EQ(disturbed.batches, undisturbed.batches) << remote;
    EXPECT_EQ(disturbed.keys, undisturbed.keys) << remote;
    EXPECT_TRUE(disturbed.skipped.empty()) << remote;
    EXPECT_GT(dataset->storage()->retries(), 0) << remote << ": no read met the outage";
  }
}

}  // namespace
}  // namespace flowloader
