// s3_cache_test.cc: the on-disk cache of remote data (cache_dir, cache_bytes) against a
// real S3 server, Ceph's RADOS Gateway on 127.0.0.1 (tests/testing/radosgw.sh): a cold run
// fetches each object or block once however many epochs it has, a warm run (a new
// pipeline on the same directory) sends no GET and delivers the disk's batches, two
// readers sharing a directory under a budget that forces eviction both get the right
// bytes, a budget smaller than the data is kept, and a truncated or corrupted entry is
// found, removed and fetched again. Readers missing one object at the same time share one
// GET, so read-ahead with the cache fetches each image once.
#include <dirent.h>
#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/reader/dataset.h"
#include "stages/reader/internal/disk_cache.h"
#include "stages/reader/s3_env.h"
#include "stages/reader/storage_env.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Delivered;
using testing::FaultProxy;
using testing::RadosGateway;
using testing::RunAll;

constexpr char kBucket[] = "cached";
constexpr char kFolder[] = "s3://cached/train/";
constexpr char kShards[] = "s3://cached/shards/train-{000000..000004}.tar";

// CachedRun is one run through the disk cache: what it delivered, the GETs it sent (every
// request but the listing pages) and the cache's counters.
struct CachedRun {
  Delivered delivered;
  int64_t gets = 0;
  internal::DiskCacheStats stats;
  int64_t used_bytes = 0;
};

// EntryFiles lists the entry files under cache directory `dir`, with their sizes.
std::vector<std::pair<std::string, int64_t>> EntryFiles(const std::string& dir) {
  std::vector<std::pair<std::string, int64_t>> out;
  const std::string root = dir + "/flowloader-cache";
  DIR* top = ::opendir(root.c_str());
  if (top == nullptr) return out;
  while (const dirent* d = ::readdir(top)) {
    const std::string sub = d->d_name;
    if (sub.size() != 2) continue;  // The 00..ff directories (not ., .., tmp, lock).
    DIR* inner = ::opendir((root + "/" + sub).c_str());
    if (inner == nullptr) continue;
    while (const dirent* e = ::readdir(inner)) {
      const std::string path = root + "/" + sub + "/" + e->d_name;
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back({path, st.st_size});
    }
    ::closedir(inner);
  }
  ::closedir(top);
  return out;
}

class S3CacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gateway_ = RadosGateway::Start(testing::TempDir("rgw")).release();
    if (gateway_ == nullptr) return;
    folder_ = new std::string(testing::MakeImageFolder(testing::TempDir("folder"), 3, 12));
    const std::string shard_dir = testing::TempDir("tars");
    shards_ = new std::string(testing::MakeShards(*folder_, shard_dir, 8));
    ASSERT_TRUE(gateway_->CreateBucket(kBucket));
    ASSERT_GE(gateway_->Upload(*folder_, kBucket, "train/"), 36);
    ASSERT_EQ(gateway_->Upload(shard_dir, kBucket, "shards/"), 5);
  }
  static void TearDownTestSuite() {
    delete gateway_;
    gateway_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(gateway_, nullptr) << "the RADOS Gateway did not start";
    ::setenv("AWS_ACCESS_KEY_ID", gateway_->access_key().c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", gateway_->secret_key().c_str(), 1);
    cache_dir_ = testing::TempDirForTest("cache_");
  }
  PipelineOptions Options(const std::string& data) const {
    PipelineOptions o = testing::SmallCpuOptions(data, /*batch_size=*/5, nullptr);
    o.epochs = 2;
    o.seed = 11;
    o.s3.endpoint = gateway_->endpoint();
    o.cache_dir = cache_dir_;
    // Exact hit and miss counts: with read-ahead, epoch 2's reads of objects whose epoch-1
    // reads are in flight (36 images, inside its 256-position window) join those GETs
    // and count as misses (ReadAheadWithTheCacheFetchesEachImageOnce runs with it).
    o.http.read_ahead = 0;
    return o;
  }
  // Run opens `o`'s data through the cache (blocks of `block_bytes`) and runs it.
  static CachedRun Run(PipelineOptions o, int64_t block_bytes = int64_t{1} << 20) {
    DatasetOptions listing;
    listing.path = o.data;
    listing.s3 = o.s3;
    listing.http = o.http;
    listing.cache = DiskCacheOptions{o.cache_dir, o.cache_bytes, block_bytes};
    CachedRun run;
    auto ds = Dataset::Open(listing);
    if (!ds.ok()) {
      run.delivered.status = ds.status();
      return run;
    }
    std::shared_ptr<const Dataset> dataset = std::move(*ds);
    o.dataset = dataset;
    o.data.clear();
    run.delivered = RunAll(o);
    const StorageEnv* storage = dataset->storage();
    run.gets = storage->requests();
    for (const auto& [family, env] : storage->remote_envs()) {
      if (const auto* s3 = dynamic_cast<const S3Env*>(env)) run.gets -= s3->list_pages();
    }
    run.stats = storage->disk_cache()->stats();
    run.used_bytes = storage->disk_cache()->used_bytes();
    return run;
  }
  Delivered Disk(const std::string& local) const {
    PipelineOptions o = Options(local);
    o.cache_dir.clear();
    return RunAll(o);
  }

  static RadosGateway* gateway_;
  static std::string* folder_;
  static std::string* shards_;
  std::string cache_dir_;
};
RadosGateway* S3CacheTest::gateway_ = nullptr;
std::string* S3CacheTest::folder_ = nullptr;
std::string* S3CacheTest::shards_ = nullptr;

TEST_F(S3CacheTest, ImagesAreFetchedOnceAndAWarmRunSendsNoGet) {
  const Delivered disk = Disk(*folder_);
  const CachedRun cold = Run(Options(kFolder));
  ASSERT_TRUE(cold.delivered.status.ok()) << cold.delivered.status;
  EXPECT_EQ(cold.delivered.batches, disk.batches);
  EXPECT_EQ(cold.gets, 36);  // Two epochs, each image fetched once: epoch 2 from the disk.
  EXPECT_EQ(cold.stats.misses, 36);
  EXPECT_EQ(cold.stats.hits, 36);
  EXPECT_GT(cold.used_bytes, 0);

  const CachedRun warm = Run(Options(kFolder));  // A later run: the listing only.
  ASSERT_TRUE(warm.delivered.status.ok()) << warm.delivered.status;
  EXPECT_EQ(warm.delivered.batches, disk.batches);
  EXPECT_EQ(warm.gets, 0);
  EXPECT_EQ(warm.stats.hits, 72);
  EXPECT_EQ(warm.stats.misses, 0);
  EXPECT_EQ(warm.used_bytes, cold.used_bytes);
}

TEST_F(S3CacheTest, ConcurrentMissesOfOneObjectShareOneGet) {
  std::string body(200000, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 131) >> 3);
  ASSERT_TRUE(gateway_->Put(kBucket, "joined/object.bin", body));
  // Every request 0.3 s late, so the eight readers' misses overlap.
  const std::string log = cache_dir_ + ".proxy.log";
  auto proxy = FaultProxy::Start(gateway_->port(), 1, "delay", log);
  ASSERT_NE(proxy, nullptr);
  StorageOptions options;
  options.s3.endpoint = proxy->endpoint();
  options.cache = DiskCacheOptions{cache_dir_, int64_t{64} << 20, int64_t{1} << 20};
  auto storage = StorageEnv::Create(nullptr, options);
  ASSERT_TRUE(storage.ok()) << storage.status();
  constexpr int kReaders = 8;
  std::vector<std::string> got(kReaders);
  std::vector<absl::Status> status(kReaders);
  std::atomic<int> ready{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kReaders) std::this_thread::yield();
      status[i] = (*storage)->ReadFile("s3://cached/joined/object.bin", 1 << 20, &got[i]);
    });
  }
  for (std::thread& t : readers) t.join();
  for (int i = 0; i < kReaders; ++i) {
    ASSERT_TRUE(status[i].ok()) << status[i];
    EXPECT_TRUE(got[i] == body) << "reader " << i << " got " << got[i].size() << " bytes";
  }
  EXPECT_EQ((*storage)->requests(), 1);  // One GET for the eight readers.
  int gets = 0;
  for (absl::string_view line : absl::StrSplit(testing::ReadFile(log), '\n')) {
    gets += line == "delay GET /cached/joined/object.bin" ? 1 : 0;
  }
  EXPECT_EQ(gets, 1) << testing::ReadFile(log);
  // A reader asking for less than the object holds is still refused, joined or not.
  std::string small;
  EXPECT_EQ((*storage)->ReadFile("s3://cached/joined/object.bin", 1000, &small).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(S3CacheTest, ReadAheadWithTheCacheFetchesEachImageOnce) {
  PipelineOptions o = Options(kFolder);
  o.http.read_ahead = HttpOptions::kReadAheadAuto;  // Epoch 2's reads start during epoch 1's.
  const CachedRun cold = Run(o);
  ASSERT_TRUE(cold.delivered.status.ok()) << cold.delivered.status;
  EXPECT_EQ(cold.delivered.batches, Disk(*folder_).batches);
  EXPECT_EQ(cold.gets, 36);  // Two epochs, 36 images: each fetched once.
}

TEST_F(S3CacheTest, ShardBlocksServeIndexAndMembersAndAWarmRunGetsNoShardByte) {
  const Delivered disk = Disk(*shards_);
  // 4 KiB blocks: members and headers straddle blocks.
  const CachedRun cold = Run(Options(kShards), 4096);
  ASSERT_TRUE(cold.delivered.status.ok()) << cold.delivered.status;
  EXPECT_EQ(cold.delivered.batches, disk.batches);
  EXPECT_EQ(cold.delivered.keys, disk.keys);
  EXPECT_GT(cold.gets, 0);
  EXPECT_EQ(cold.gets, cold.stats.misses);  // Each block fetched once, in one GET.

  const CachedRun warm = Run(Options(kShards), 4096);
  ASSERT_TRUE(warm.delivered.status.ok()) << warm.delivered.status;
  EXPECT_EQ(warm.delivered.batches, disk.batches);
  // Indexing and both epochs from the disk; only each shard's index file is asked for
  // again (GNU tar wrote these shards, without one: a 404 is not cached).
  EXPECT_EQ(warm.gets, 5);
  EXPECT_EQ(warm.stats.misses, 5);
}

TEST_F(S3CacheTest, TwoReadersSharingADirectoryUnderEvictionGetTheRightBytes) {
  const Delivered disk = Disk(*folder_);
  // About a third of the images fit: both readers add and evict all along.
  PipelineOptions o = Options(kFolder);
  o.cache_bytes = 40 << 10;
  CachedRun a, b;
  std::thread other([&] { b = Run(o); });
  a = Run(o);
  other.join();
  for (const CachedRun* run : {&a, &b}) {
    ASSERT_TRUE(run->delivered.status.ok()) << run->delivered.status;
    EXPECT_EQ(run->delivered.batches, disk.batches);
    EXPECT_EQ(run->stats.corrupt, 0);
  }
  EXPECT_GT(a.stats.evicted + b.stats.evicted, 0);
  int64_t held = 0;
  for (const auto& [path, size] : EntryFiles(cache_dir_)) held += size;
  EXPECT_LE(held, o.cache_bytes);
}

TEST_F(S3CacheTest, ABudgetSmallerThanTheDataIsKept) {
  PipelineOptions o = Options(kFolder);
  o.cache_bytes = 30 << 10;
  const CachedRun run = Run(o);
  ASSERT_TRUE(run.delivered.status.ok()) << run.delivered.status;
  EXPECT_EQ(run.delivered.batches, Disk(*folder_).batches);
  EXPECT_GT(run.stats.evicted, 0);
  EXPECT_GT(run.gets, 36);  // Evicted images were fetched again in epoch 2.
  int64_t held = 0;
  for (const auto& [path, size] : EntryFiles(cache_dir_)) held += size;
  EXPECT_LE(held, o.cache_bytes);
  EXPECT_EQ(held, run.used_bytes);  // The accounting matches the disk.
}

TEST_F(S3CacheTest, TruncatedAndCorruptedEntriesAreFetchedAgain) {
  const Delivered disk = Disk(*folder_);
  const CachedRun cold = Run(Options(kFolder));
  ASSERT_TRUE(cold.delivered.status.ok()) << cold.delivered.status;
  std::vector<std::pair<std::string, int64_t>> files = EntryFiles(cache_dir_);
  ASSERT_EQ(files.size(), 36u);
  // One cut in half (a torn write), one with a byte flipped, one emptied.
  ASSERT_EQ(::truncate(files[0].first.c_str(), files[0].second / 2), 0);
  std::string bytes = testing::ReadFile(files[1].first);
  bytes[bytes.size() / 3] ^= 0x20;
  testing::WriteFile(files[1].first, bytes);
  ASSERT_EQ(::truncate(files[2].first.c_str(), 0), 0);

  const CachedRun warm = Run(Options(kFolder));
  ASSERT_TRUE(warm.delivered.status.ok()) << warm.delivered.status;
  EXPECT_EQ(warm.delivered.batches, disk.batches);
  EXPECT_TRUE(warm.delivered.skipped.empty());
  EXPECT_EQ(warm.stats.corrupt, 3);
  EXPECT_EQ(warm.gets, 3);  // Only the damaged ones, once.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(testing::ReadFile(files[i].first).size(), static_cast<size_t>(files[i].second))
        << "entry " << i << " written again whole";
  }
}

TEST_F(S3CacheTest, AnUnusableDirectoryIsRefusedInOneLine) {
  PipelineOptions o = Options(kFolder);
  o.cache_dir = cache_dir_ + "/file";
  testing::WriteFile(o.cache_dir, "not a directory");
  auto p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("cache_dir " + o.cache_dir), std::string::npos)
      << p.status();
  EXPECT_EQ(p.status().message().find('\n'), std::string::npos) << p.status();
}

}  // namespace
}  // namespace flowloader
