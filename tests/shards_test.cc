// Tar shards through the whole pipeline, on disk and over HTTP (a real nginx on
// 127.0.0.1, the same over TLS with a test CA, and a Python server that stalls, closes
// and lies): the same batches as the ImageFolder they were made from, every sample once
// per epoch per rank, resume, and bad shards counted by reason without stopping the run.
#include <algorithm>
#include <map>
#include <set>
#include <thread>  // NOLINT(build/c++11)
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/pipeline.h"
#include "runtime/run_summary.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"
#include "stages/reader/http_env.h"
#include "stages/reader/tar_index_file.h"
#include "stages/reader/tar_writer.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Delivered;
using testing::Drain;
using testing::Drained;
using testing::MakeImageFolder;
using testing::MakeShards;
using testing::Server;
using testing::RunAll;
using testing::SmallCpuOptions;
using testing::TempDirForTest;

class ShardsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new std::string(MakeImageFolder(testing::TempDir("shards_folder"), 3, 12));
    shard_dir_ = new std::string(testing::TempDir("shards_tars"));
    pattern_ = new std::string(MakeShards(*folder_, *shard_dir_, 8));  // 5 shards, last 4.
  }
  PipelineOptions Options(const std::string& data) {
    PipelineOptions o = SmallCpuOptions(data, /*batch_size=*/5, nullptr);
    o.epochs = 2;
    o.seed = 7;
    return o;
  }
  // DyingShardOptions: shards 0, 1, 3 and 4 from `bad` as they are; shard 2 answers
  // `answers` requests (its index window first), then 500 for every request; quick retries.
  PipelineOptions DyingShardOptions(const Server& bad, int answers) {
    const std::string list = TempDirForTest("list_") + "/shards.txt";
    testing::WriteFile(
        list, absl::StrCat(bad.Url("/ok/train-{000000..000001}.tar"), "\n",
                           bad.Url(absl::StrCat("/die_after/", answers, "/train-000002.tar")),
                           "\n", bad.Url("/ok/train-{000003..000004}.tar"), "\n"));
    PipelineOptions o = Options(list);
    o.http.max_retries = 2;
    o.http.initial_backoff = absl::Milliseconds(1);
    return o;
  }
  static std::string* folder_;
  static std::string* shard_dir_;
  static std::string* pattern_;
};
std::string* ShardsTest::folder_ = nullptr;
std::string* ShardsTest::shard_dir_ = nullptr;
std::string* ShardsTest::pattern_ = nullptr;

// ExpectSamplesAsOnDisk checks that `remote` lists the samples `local` (the same shard
// scanned on disk) lists, and that reading each through remote's env gives its bytes of
// `bytes` (the shard file).
void ExpectSamplesAsOnDisk(const Dataset& remote, const Dataset& local,
                           const std::string& bytes) {
  for (int64_t i = 0; i < remote.size(); ++i) {
    const SampleSource& r = remote.sample(i);
    const SampleSource& l = local.sample(i);
    EXPECT_EQ(r.key, l.key);
    EXPECT_EQ(r.label, l.label);
    ASSERT_EQ(r.offset, l.offset);
    ASSERT_EQ(r.size, l.size);
    std::string read;
    ASSERT_TRUE(remote.shard_env()->ReadRange(remote.FullPath(i), r.offset, r.size, &read).ok());
    EXPECT_TRUE(read == bytes.substr(static_cast<size_t>(r.offset), static_cast<size_t>(r.size)))
        << "sample " << i;
  }
}

TEST_F(ShardsTest, ShardsDeliverTheImageFoldersBatchesByteForByte) {
  const Delivered folder = RunAll(Options(*folder_));
  const Delivered shards = RunAll(Options(*pattern_));
  ASSERT_TRUE(folder.status.ok()) << folder.status;
  ASSERT_TRUE(shards.status.ok()) << shards.status;
  ASSERT_EQ(shards.batches.size(), 16u);  // 2 epochs × ceil(36 / 5).
  EXPECT_EQ(shards.batches, folder.batches);
  EXPECT_TRUE(absl::StartsWith(shards.keys[0], "train-0000")) << shards.keys[0];
  const std::multiset<std::string> keys(shards.keys.begin(), shards.keys.end());
  for (const std::string& k : keys) EXPECT_EQ(keys.count(k), 2u) << k;
  EXPECT_EQ(keys.size(), 72u);
}

TEST_F(ShardsTest, RanksSplitEveryEpochAndResumeDeliversTheRest) {
  std::set<std::string> seen;
  for (int rank = 0; rank < 2; ++rank) {
    PipelineOptions o = Options(*pattern_);
    o.epochs = 1;
    o.rank = rank;
    o.world_size = 2;
    const Delivered r = RunAll(o);
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.keys.size(), 18u);
    for (const std::string& k : r.keys) EXPECT_TRUE(seen.insert(k).second) << k;
  }
  EXPECT_EQ(seen.size(), 36u);

  const Delivered whole = RunAll(Options(*pattern_));
  PipelineOptions resumed = Options(*pattern_);
  resumed.resume = Cursor{1, 3};
  const Delivered rest = RunAll(resumed);
  ASSERT_TRUE(rest.status.ok()) << rest.status;
  ASSERT_EQ(rest.batches.size(), 5u);  // Epoch 1's batches 3..7.
  EXPECT_EQ(rest.batches, std::vector<std::string>(whole.batches.end() - 5, whole.batches.end()));
}

TEST_F(ShardsTest, NginxServesTheSameBatchesAsTheDisk) {
  Server nginx = Server::Nginx(*shard_dir_, TempDirForTest("nginx_"));
  ASSERT_TRUE(nginx.running());
  const Delivered disk = RunAll(Options(*pattern_));
  const Delivered http = RunAll(Options(nginx.Url("/train-{000000..000004}.tar")));
  ASSERT_TRUE(http.status.ok()) << http.status;
  EXPECT_EQ(http.batches, disk.batches);
  EXPECT_EQ(http.keys, disk.keys);
}

TEST_F(ShardsTest, HttpsWithItsCaFileServesTheSameBatchesAsTheDisk) {
  Server nginx = Server::NginxTls(*shard_dir_, TempDirForTest("nginx_tls_"));
  ASSERT_TRUE(nginx.running());
  const Delivered disk = RunAll(Options(*pattern_));
  PipelineOptions o = Options(nginx.Url("/train-{000000..000004}.tar"));
  ASSERT_TRUE(absl::StartsWith(o.data, "https://")) << o.data;
  o.http.ca_file = nginx.ca_file();
  const Delivered https = RunAll(o);
  ASSERT_TRUE(https.status.ok()) << https.status;
  EXPECT_EQ(https.batches, disk.batches);
  EXPECT_EQ(https.keys, disk.keys);
}

// ExpectRefusedForTheCertificate: every shard failed verification at index time, so Create
// refuses the data, counting the shards as `tls` and quoting OpenSSL's reason.
void ExpectRefusedForTheCertificate(const Delivered& run) {
  EXPECT_EQ(run.status.code(), absl::StatusCode::kInvalidArgument) << run.status;
  EXPECT_TRUE(run.batches.empty());
  EXPECT_TRUE(absl::StrContains(run.status.message(), "(shards failed: 5 × tls)"))
      << run.status;
  EXPECT_TRUE(absl::StrContains(run.status.message(), "SSL certificate problem")) << run.status;
  EXPECT_EQ(run.status.message().find('\n'), absl::string_view::npos) << run.status;
}

TEST_F(ShardsTest, HttpsSignedByAnUnknownCaIsRefusedNamingTheCertificate) {
  Server nginx = Server::NginxTls(*shard_dir_, TempDirForTest("nginx_tls_"));
  ASSERT_TRUE(nginx.running());
  PipelineOptions o = Options(nginx.Url("/train-{000000..000004}.tar"));
  o.http.initial_backoff = absl::Seconds(5);  // A retried certificate error would show.
  const absl::Time start = absl::Now();
  ExpectRefusedForTheCertificate(RunAll(o));  // The system's CAs do not know the test CA.
  o.http.ca_file = testing::MakeTestCa(TempDirForTest("other_ca_"));  // Nor does another CA.
  ExpectRefusedForTheCertificate(RunAll(o));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // Not retried: verification fails alike.
}

TEST_F(ShardsTest, AnUnreadableOrEmptyCaFileIsRefusedAtCreate) {
  PipelineOptions o = Options(*pattern_);  // Checked whatever the data.
  o.http.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(Pipeline::Create(o).status().message(),
            "http_ca_file '/nonexistent/ca.pem' cannot be read: No such file or directory");
  o.http.ca_file = TempDirForTest("ca_") + "/not_a_ca.pem";
  testing::WriteFile(o.http.ca_file, "hello\n");
  EXPECT_EQ(Pipeline::Create(o).status().message(),
            absl::StrCat("http_ca_file '", o.http.ca_file,
                         "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
  o.http.ca_file = TempDirForTest("ca_dir_");
  EXPECT_EQ(Pipeline::Create(o).status().message(),
            absl::StrCat("http_ca_file '", o.http.ca_file, "' cannot be read: Is a directory"));
}

TEST_F(ShardsTest, FailingAndMissingShardsOverHttpAreCountedNotFatal) {
  Server nginx = Server::Nginx(*shard_dir_, TempDirForTest("nginx_"));
  ASSERT_TRUE(nginx.running());
  // Shard 0 from /fail/ (500 every time), shard 9 does not exist, 1..4 are good.
  const std::string list = TempDirForTest("list_") + "/shards.txt";
  testing::WriteFile(list, absl::StrCat(nginx.Url("/fail/train-000000.tar"), "\n",
                                        nginx.Url("/train-{000001..000004}.tar"), "\n",
                                        nginx.Url("/train-000009.tar"), "\n"));
  PipelineOptions o = Options(list);
  o.epochs = 1;
  o.http.max_retries = 1;
  o.http.initial_backoff = absl::Milliseconds(1);
  const Delivered r = RunAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.keys.size(), 28u);  // 36 - shard 0's 8.
  EXPECT_EQ(r.skipped, (std::map<std::string, int>{{"http_5xx", 1}, {"http_404", 1}}));
}

// LinesLogged is how many requests nginx's access.log in `work_dir` holds now.
int64_t LinesLogged(const std::string& work_dir) {
  const std::string log = testing::ReadFile(work_dir + "/access.log");
  return static_cast<int64_t>(std::count(log.begin(), log.end(), '\n'));
}

// RequestsLogged is how many requests nginx logged in `work_dir` (Server::Nginx), once
// the count holds still: nginx writes a request's line when it finalizes the request,
// which may come just after the client has read the response (a count taken at once
// missed one line under ASan's slowdown).
int64_t RequestsLogged(const std::string& work_dir) {
  int64_t count = LinesLogged(work_dir);
  for (int i = 0; i < 40; ++i) {  // Up to 2 s.
    absl::SleepFor(absl::Milliseconds(50));
    const int64_t again = LinesLogged(work_dir);
    if (again == count) break;
    count = again;
  }
  return count;
}

// IndexRequests is what opening the dataset at `data` alone costs in requests.
int64_t IndexRequests(const std::string& data, const std::string& nginx_dir) {
  const int64_t before = RequestsLogged(nginx_dir);
  EXPECT_TRUE(Dataset::Open({data}).ok());
  return RequestsLogged(nginx_dir) - before;
}

int64_t FileBytes(const std::string& path) {
  return static_cast<int64_t>(testing::ReadFile(path).size());
}

TEST_F(ShardsTest, CachedShardsCostOneRequestPerBlockInsteadOfOnePerMember) {
  const std::string nginx_dir = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(*shard_dir_, nginx_dir);
  ASSERT_TRUE(nginx.running());
  const std::string data = nginx.Url("/train-{000000..000004}.tar");
  const int64_t index_requests = IndexRequests(data, nginx_dir);
  // Per small shard, its index file's request (404: GNU tar wrote these shards, without
  // one) and one 1 MiB header window.
  EXPECT_EQ(index_requests, 2 * 5);
  PipelineOptions cached = Options(data);  // http_cache_mb 256 (default): all admitted.
  int64_t before = RequestsLogged(nginx_dir);
  const Delivered on = RunAll(cached);
  ASSERT_TRUE(on.status.ok()) << on.status;
  EXPECT_EQ(RequestsLogged(nginx_dir) - before, index_requests)
      << "2 epochs: every block came with the index windows, kept as the cache's blocks";

  // Blocks other than the index windows (64 KiB): each fetched once, by the first epoch.
  PipelineOptions small_blocks = Options(data);
  small_blocks.http.block_bytes = 64 << 10;
  int64_t blocks = 0;
  for (int i = 0; i < 5; ++i) {
    blocks += (FileBytes(absl::StrFormat("%s/train-%06d.tar", *shard_dir_, i)) + (64 << 10) -
               1) >> 16;
  }
  before = RequestsLogged(nginx_dir);
  const Delivered on_small = RunAll(small_blocks);
  ASSERT_TRUE(on_small.status.ok()) << on_small.status;
  // The first batch's members whose blocks were not cached are read alone first (at
  // most batch_size requests; TheFirstBatchsMembersAreReadAloneAheadOfTheirBlocks).
  EXPECT_LE(RequestsLogged(nginx_dir) - before, index_requests + blocks + 5)
      << "2 epochs: each block at most once, the second epoch from memory";
  EXPECT_GT(RequestsLogged(nginx_dir) - before, index_requests);
  EXPECT_EQ(on.batches, on_small.batches);

  PipelineOptions uncached = Options(data);
  uncached.http_cache_mb = 0;
  before = RequestsLogged(nginx_dir);
  const Delivered off = RunAll(uncached);
  ASSERT_TRUE(off.status.ok()) << off.status;
  EXPECT_EQ(RequestsLogged(nginx_dir) - before, index_requests + 2 * 36)
      << "one request per image member, every epoch";
  EXPECT_EQ(on.batches, off.batches);
}

TEST_F(ShardsTest, CachedShardsAreReadAheadByBlocksNotByMembers) {
  const std::string nginx_dir = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(*shard_dir_, nginx_dir);
  ASSERT_TRUE(nginx.running());
  PipelineOptions o = Options(nginx.Url("/train-{000000..000004}.tar"));
  o.epochs = 1;
  o.http.block_bytes = 16 << 10;  // Several blocks a shard, a few members a block.
  o.http.read_ahead = 4;
  int64_t blocks = 0;
  for (int i = 0; i < 5; ++i) {
    blocks += (FileBytes(absl::StrFormat("%s/train-%06d.tar", *shard_dir_, i)) + (16 << 10) -
               1) >> 14;
  }
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained d = Drain(p->get());
  ASSERT_TRUE(d.status.ok()) << d.status;
  const ReadAheadFigures ra = (*p)->storage()->storage_stats()->read_ahead();
  ASSERT_TRUE(ra.present);
  // One read-ahead per block at most (each claimed once), not one per member (36),
  // besides the first batch's members read alone (urgent, at most batch_size 5).
  EXPECT_GT(ra.started, 0);
  EXPECT_LE(ra.urgent, 5);
  EXPECT_LE(ra.started - ra.urgent, blocks);
  EXPECT_LT(ra.started, 36);
  EXPECT_LE(ra.reused, ra.urgent) << "no other member bytes went through read-ahead buffers";
  // And the same batches as the disk.
  PipelineOptions disk = Options(*pattern_);
  disk.epochs = 1;
  PipelineOptions remote = o;
  EXPECT_EQ(RunAll(remote).batches, RunAll(disk).batches);
}

// The block read-ahead fetches a member's block and the blocks after it (up to 2 MiB)
// with one Range request, each block cached as its bytes arrive: a shard smaller than
// that costs one request for all of its blocks, not one per block, to the same bytes.
TEST_F(ShardsTest, BlocksAreReadAheadInRunsOfOneRequest) {
  const std::string nginx_dir = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(*shard_dir_, nginx_dir);
  ASSERT_TRUE(nginx.running());
  HttpOptions o;
  o.block_bytes = 16 << 10;
  auto env = HttpEnv::Create(nullptr, o);
  ASSERT_TRUE(env.ok()) << env.status();
  const std::string bytes = testing::ReadFile(*shard_dir_ + "/train-000001.tar");
  const int64_t size = static_cast<int64_t>(bytes.size());
  ASSERT_GT(size, 3 * o.block_bytes) << "several blocks";
  const std::string url = nginx.Url("/train-000001.tar");
  ASSERT_EQ((*env)->AdmitShards({{url, size}}), size);
  const int64_t before = RequestsLogged(nginx_dir);
  // A member in the shard's second block: the run starts there.
  const int64_t member = o.block_bytes + 100;
  ASSERT_TRUE((*env)->ClaimBlocks(url, member, 10));
  absl::StatusOr<bool> requested = (*env)->FetchBlocks(url, member, 10);
  ASSERT_TRUE(requested.ok()) << requested.status();
  EXPECT_TRUE(*requested);
  EXPECT_EQ(RequestsLogged(nginx_dir) - before, 1) << "one request for the run";
  EXPECT_EQ((*env)->block_fetches(), 1);
  EXPECT_FALSE((*env)->BlocksCached(url, 0, 1)) << "runs go forward from the block asked for";
  EXPECT_TRUE((*env)->BlocksCached(url, o.block_bytes, size - o.block_bytes));
  EXPECT_FALSE((*env)->ClaimBlocks(url, member, size - member)) << "all there already";
  requested = (*env)->FetchBlocks(url, 2 * o.block_bytes, 10);
  ASSERT_TRUE(requested.ok());
  EXPECT_FALSE(*requested) << "brought by the run: nothing to fetch, no request";
  std::string read;
  ASSERT_TRUE((*env)->ReadRange(url, o.block_bytes, size - o.block_bytes, &read).ok());
  EXPECT_TRUE(read == bytes.substr(static_cast<size_t>(o.block_bytes))) << "byte for byte";
  EXPECT_EQ(RequestsLogged(nginx_dir) - before, 1) << "read from the cache";
}

// A run whose response is cut keeps the blocks it completed, and its retry asks only for
// the rest: each attempt of /close/ sends half of what was asked for, so each completes
// a few more blocks, every one with the file's bytes, and the blocks never completed are
// not cached (a later read fetches them).
TEST_F(ShardsTest, ACutRunKeepsItsCompletedBlocksAndRetriesOnlyTheRest) {
  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  HttpOptions o;
  o.block_bytes = 2 << 10;  // ~26 blocks of a ~52 KiB shard.
  o.max_retries = 2;        // Three attempts.
  o.initial_backoff = absl::Milliseconds(1);
  auto env = HttpEnv::Create(nullptr, o);
  ASSERT_TRUE(env.ok()) << env.status();
  const std::string bytes = testing::ReadFile(*shard_dir_ + "/train-000001.tar");
  const int64_t size = static_cast<int64_t>(bytes.size());
  const int64_t blocks = (size + o.block_bytes - 1) / o.block_bytes;
  ASSERT_GE(blocks, 16);
  const std::string url = bad.Url("/close/train-000001.tar");
  ASSERT_EQ((*env)->AdmitShards({{url, size}}), size);
  const absl::Status cut = (*env)->FetchBlocks(url, 0, 1).status();
  EXPECT_FALSE(cut.ok()) << "every attempt is cut";
  EXPECT_EQ((*env)->retries(), 2);
  // Attempts of the whole shard, then of the rest from its first block not completed:
  // half of each completes at least the blocks before its middle.
  int64_t cached = 0;
  while (cached < blocks && (*env)->BlocksCached(url, cached * o.block_bytes, 1)) ++cached;
  EXPECT_GE(cached, blocks / 2 + blocks / 4 - 2) << "the second attempt resumed, kept its half";
  EXPECT_LT(cached, blocks);
  for (int64_t i = cached; i < blocks; ++i) {
    EXPECT_FALSE((*env)->BlocksCached(url, i * o.block_bytes, 1)) << "block " << i;
  }
  const int64_t requests = (*env)->requests();
  std::string read;
  ASSERT_TRUE((*env)->ReadRange(url, 0, cached * o.block_bytes, &read).ok());
  EXPECT_TRUE(read == bytes.substr(0, static_cast<size_t>(cached * o.block_bytes)))
      << "the kept blocks hold the file's bytes";
  EXPECT_EQ((*env)->requests(), requests) << "from the cache";
}

// The run's first batch does not wait for whole blocks: each of its members whose
// blocks are not cached is read alone with one small range request, ahead of every
// block fetch (ReadAhead's urgent reads; their order is read_ahead_test's), counted in
// the summary (storage.blocks.member_reads, storage.read_ahead.urgent); every other
// request is a block, each fetched once; the batches are the disk's.
TEST_F(ShardsTest, TheFirstBatchsMembersAreReadAloneAheadOfTheirBlocks) {
  const std::string nginx_dir = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(*shard_dir_, nginx_dir);
  ASSERT_TRUE(nginx.running());
  const std::string data = nginx.Url("/train-{000000..000004}.tar");
  const int64_t index_requests = IndexRequests(data, nginx_dir);
  PipelineOptions o = Options(data);
  o.http.block_bytes = 16 << 10;  // The index windows seed only each shard's first block.
  const int64_t before = RequestsLogged(nginx_dir);
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained d = Drain(p->get());
  ASSERT_TRUE(d.status.ok()) << d.status;
  const StorageEnv* storage = (*p)->storage();
  const int64_t member_reads = storage->member_reads();
  EXPECT_GE(member_reads, 1) << "the first batch (5 of 36 samples) needs uncached blocks";
  EXPECT_LE(member_reads, 5) << "only the first batch's members: 2 epochs, batch_size 5";
  EXPECT_EQ(storage->storage_stats()->read_ahead().urgent, member_reads);
  EXPECT_EQ(RequestsLogged(nginx_dir) - before,
            index_requests + storage->block_fetches() + member_reads)
      << "besides the index and the first batch's members, one request per block";
  const nlohmann::json summary =
      nlohmann::json::parse(PipelineSummaryJson(**p, 1.0, 2, 0.1, 0.1, {0.5, 1.0}));
  EXPECT_EQ(summary["storage"]["blocks"]["member_reads"].get<int64_t>(), member_reads)
      << summary["storage"];
  EXPECT_EQ(summary["storage"]["blocks"]["fetched"].get<int64_t>(), storage->block_fetches());
  EXPECT_EQ(summary["storage"]["read_ahead"]["urgent"].get<int64_t>(), member_reads);
  EXPECT_EQ(summary["storage"]["remote"].size(), 0u) << "plain HTTP names no credentials";
  PipelineOptions disk = Options(*pattern_);
  PipelineOptions remote = o;
  EXPECT_EQ(RunAll(remote).batches, RunAll(disk).batches);
}

// BigShard writes `dir`/big.tar: 24 samples of a 200 KiB .jpg (pseudo-random bytes: an
// index never decodes) and a .cls, ~4.7 MiB (5 index windows of 1 MiB), and with
// `index` its index file big.tar.idx as `flowloader pack` writes it; returns its size.
int64_t BigShard(const std::string& dir, bool index = false) {
  auto tar = TarWriter::Create(dir + "/big.tar");
  EXPECT_TRUE(tar.ok()) << tar.status();
  uint32_t x = 12345;
  for (int i = 0; i < 24; ++i) {
    std::string image(200 << 10, '\0');
    for (char& c : image) c = static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);
    EXPECT_TRUE((*tar)->Add(absl::StrFormat("%06d.jpg", i), image).ok());
    EXPECT_TRUE((*tar)->Add(absl::StrFormat("%06d.cls", i), absl::StrCat(i % 3)).ok());
  }
  EXPECT_TRUE((*tar)->Close().ok());
  if (index) testing::WriteFile(dir + "/big.tar.idx", FormatTarIndexFile((*tar)->index()));
  return FileBytes(dir + "/big.tar");
}

// A shard with its index file opens over HTTP with two small requests (the index, the
// shard's last KiB) instead of its 5 header windows, to the disk's samples; its blocks
// are then fetched as the samples need them, each once.
TEST_F(ShardsTest, AnIndexedShardOpensOverHttpWithTwoSmallRequests) {
  const std::string dir = TempDirForTest("indexed_shard_");
  const int64_t size = BigShard(dir, /*index=*/true);
  const std::string bytes = testing::ReadFile(dir + "/big.tar");
  DatasetOptions scan;
  scan.path = dir + "/big.tar";
  scan.use_shard_index = false;
  absl::StatusOr<std::unique_ptr<Dataset>> local = Dataset::Open(scan);
  ASSERT_TRUE(local.ok()) << local.status();
  const std::string nginx_dir = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(dir, nginx_dir);
  ASSERT_TRUE(nginx.running());
  DatasetOptions o;
  o.path = nginx.Url("/big.tar");
  int64_t before = RequestsLogged(nginx_dir);
  absl::StatusOr<std::unique_ptr<Dataset>> remote = Dataset::Open(o);
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ(RequestsLogged(nginx_dir) - before, 2);
  EXPECT_EQ((*remote)->shard_index_counts().used, 1);
  ASSERT_EQ((*remote)->size(), (*local)->size());
  before = RequestsLogged(nginx_dir);
  ASSERT_NO_FATAL_FAILURE(ExpectSamplesAsOnDisk(**remote, **local, bytes));
  EXPECT_EQ(RequestsLogged(nginx_dir) - before, (size + (1 << 20) - 1) >> 20)
      << "each 1 MiB block once";
}

// A shard of several windows is indexed with its windows read ahead (each window once,
// plus at most index_prefetch_windows past the end, answered empty), the same index as
// on disk; the windows of an admitted shard become its blocks, so reading every sample
// costs no request; a shard the cache cannot hold is read a request per member.
TEST_F(ShardsTest, ABigShardsIndexWindowsAreReadAheadAndBecomeItsBlocks) {
  const std::string dir = TempDirForTest("big_shard_");
  const int64_t size = BigShard(dir);
  const int64_t windows = (size + (1 << 20) - 1) >> 20;
  ASSERT_EQ(windows, 5);
  const std::string bytes = testing::ReadFile(dir + "/big.tar");
  absl::StatusOr<std::unique_ptr<Dataset>> local = Dataset::Open({dir + "/big.tar"});
  ASSERT_TRUE(local.ok()) << local.status();
  const std::string nginx_dir = TempDirForTest("nginx_");
  Server nginx = Server::Nginx(dir, nginx_dir);
  ASSERT_TRUE(nginx.running());

  struct Case {
    int prefetch;
    int64_t cache_bytes;
    int64_t min_index_requests, max_index_requests, read_requests;
  };
  // Each open also asks for big.tar.idx first (404: this shard has no index file).
  const Case cases[] = {
      {0, int64_t{256} << 20, windows + 1, windows + 1, 0},  // One window at a time.
      {4, int64_t{256} << 20, windows + 1, windows + 5, 0},  // The default.
      {4, int64_t{1} << 20, windows + 1, windows + 5, 24},   // Not admitted: kept nowhere.
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("index_prefetch_windows ", c.prefetch, ", cache_bytes ",
                              c.cache_bytes));
    DatasetOptions o;
    o.path = nginx.Url("/big.tar");
    o.index_prefetch_windows = c.prefetch;
    o.http.cache_bytes = c.cache_bytes;
    int64_t before = RequestsLogged(nginx_dir);
    absl::StatusOr<std::unique_ptr<Dataset>> remote = Dataset::Open(o);
    ASSERT_TRUE(remote.ok()) << remote.status();
    const int64_t index_requests = RequestsLogged(nginx_dir) - before;
    EXPECT_GE(index_requests, c.min_index_requests);
    EXPECT_LE(index_requests, c.max_index_requests);
    ASSERT_EQ((*remote)->size(), (*local)->size());
    before = RequestsLogged(nginx_dir);
    ASSERT_NO_FATAL_FAILURE(ExpectSamplesAsOnDisk(**remote, **local, bytes));
    EXPECT_EQ(RequestsLogged(nginx_dir) - before, c.read_requests);
  }
}

TEST_F(ShardsTest, TheMemoryPlanCountsTheAdmittedShards) {
  Server nginx = Server::Nginx(*shard_dir_, TempDirForTest("nginx_"));
  ASSERT_TRUE(nginx.running());
  int64_t shard_bytes = 0;
  for (int i = 0; i < 5; ++i) {
    shard_bytes += FileBytes(absl::StrFormat("%s/train-%06d.tar", *shard_dir_, i));
  }
  PipelineOptions o = Options(nginx.Url("/train-{000000..000004}.tar"));
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const MemoryPart* cache = nullptr;
  for (const MemoryPart& part : plan->parts()) {
    if (part.key == "http_cache") cache = &part;
  }
  ASSERT_NE(cache, nullptr) << plan->Describe();
  EXPECT_GT(cache->bytes, shard_bytes / 2);  // What the headers account for: nearly all.
  EXPECT_LE(cache->bytes, shard_bytes);
  EXPECT_EQ(cache->formula, "http_cache_mb 256: 5 of 5 HTTP shards admitted");
  EXPECT_EQ(cache->knobs, std::vector<std::string>{"http_cache_mb"});

  o.http_cache_mb = 0;
  plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const MemoryPart& part : plan->parts()) EXPECT_NE(part.key, "http_cache");
  // Shards on disk have no HTTP cache.
  plan = Pipeline::PlanMemory(Options(*pattern_));
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const MemoryPart& part : plan->parts()) EXPECT_NE(part.key, "http_cache");
}

TEST_F(ShardsTest, ShardsAreAdmittedInListingOrderWhileTheyFit) {
  Server nginx = Server::Nginx(*shard_dir_, TempDirForTest("nginx_"));
  ASSERT_TRUE(nginx.running());
  HttpOptions o;
  o.cache_bytes = 100;
  auto env = HttpEnv::Create(nullptr, o);
  ASSERT_TRUE(env.ok()) << env.status();
  const std::string a = nginx.Url("/train-000000.tar");
  const std::string b = nginx.Url("/train-000001.tar");
  const std::string c = nginx.Url("/train-000002.tar");
  const std::string d = nginx.Url("/train-000003.tar");
  // c does not fit after a and b: admission stops there, d is not considered.
  EXPECT_EQ((*env)->AdmitShards({{a, 60}, {b, 30}, {c, 20}, {d, 5}}), 90);
  EXPECT_EQ((*env)->admitted_shards(), 2);
  // Two reads inside the first 60 bytes (a's admitted size, so its block stops there).
  auto requests_for_two_reads = [&](const std::string& url) {
    const std::string bytes = testing::ReadFile(*shard_dir_ + url.substr(url.rfind('/')));
    const int64_t before = (*env)->requests();
    std::string first, second;
    EXPECT_TRUE((*env)->ReadRange(url, 10, 20, &first).ok());
    EXPECT_TRUE((*env)->ReadRange(url, 40, 20, &second).ok());
    EXPECT_EQ(first, bytes.substr(10, 20));
    EXPECT_EQ(second, bytes.substr(40, 20));
    return (*env)->requests() - before;
  };
  EXPECT_EQ(requests_for_two_reads(a), 1);  // One block, then memory.
  EXPECT_EQ(requests_for_two_reads(c), 2);  // Not admitted: a request per read.
  // Index reads never go through the cache.
  auto file = (*env)->NewRandomAccessFile(b);
  ASSERT_TRUE(file.ok()) << file.status();
  const int64_t before = (*env)->requests();
  std::string header;
  ASSERT_TRUE((*file)->Read(0, 512, &header).ok());
  ASSERT_TRUE((*file)->Read(0, 512, &header).ok());
  EXPECT_EQ((*env)->requests() - before, 2);
}

// A shard that dies mid-run with the cache on keeps serving the blocks already fetched:
// its samples inside them are delivered every epoch; the others are skipped and counted.
TEST_F(ShardsTest, ADyingShardWhollyCachedDeliversEverySample) {
  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  // Shard 2 answers its index window (the whole shard, kept as its one block), then 500.
  PipelineOptions o = DyingShardOptions(bad, /*answers=*/1);
  const Delivered r = RunAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.keys.size(), 2u * 36u);
  EXPECT_TRUE(r.skipped.empty());
}

TEST_F(ShardsTest, ADyingShardPartlyCachedSkipsTheSamplesOutsideItsCachedBlock) {
  // Two blocks: samples 0-3's images in the first, sample 7's in the second (whose
  // block starts at or after half its image's end, so the image lies inside it).
  const std::string shard = *shard_dir_ + "/train-000002.tar";
  absl::StatusOr<std::unique_ptr<Dataset>> local = Dataset::Open({shard});
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ((*local)->size(), 8);
  const int64_t sample4_header = (*local)->sample(4).offset - 512;
  const int64_t last_image_end = (*local)->sample(7).offset + (*local)->sample(7).size;
  const int64_t block = std::max(sample4_header, (last_image_end + 1) / 2);

  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  // Shard 2 answers its index window and the first block asked for, then 500.
  PipelineOptions o = DyingShardOptions(bad, /*answers=*/2);
  o.http.block_bytes = block;
  // The workers read by blocks: read-ahead would read the first batch's members alone
  // (urgent), and one of shard 2's could take its second answer instead of a block.
  o.http.read_ahead = 0;
  const Delivered r = RunAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  std::map<std::string, int> delivered;
  for (const std::string& k : r.keys) ++delivered[k];
  int shard2_delivered = 0;
  for (const auto& [key, times] : delivered) {
    EXPECT_EQ(times, 2) << key << ": once an epoch";
    if (absl::StartsWith(key, "train-000002")) ++shard2_delivered;
  }
  // Each of shard 2's samples is either delivered or skipped, the same in both epochs.
  EXPECT_EQ(delivered.size() + r.skipped_keys.size(), 36u);
  for (const auto& [key, times] : r.skipped_keys) {
    EXPECT_TRUE(absl::StartsWith(key, "train-000002")) << key;
    EXPECT_EQ(times, 2) << key << ": once an epoch";
  }
  EXPECT_GE(shard2_delivered, 1);
  EXPECT_LE(shard2_delivered, 7);
  EXPECT_EQ(r.skipped, (std::map<std::string, int>{
                           {"http_5xx", 2 * (8 - shard2_delivered)}}));
}

// Without the cache's blocks (they failed), a dying shard loses all of its samples.
TEST_F(ShardsTest, AShardThatDiesMidRunLosesOnlyItsOwnSamples) {
  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  // Shard 2 answers its index window, then 500 for every member read (no cache: the
  // window is not kept).
  PipelineOptions o = DyingShardOptions(bad, /*answers=*/1);
  o.http_cache_mb = 0;
  const Delivered r = RunAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.keys.size(), 2u * 28u);
  for (const std::string& k : r.keys) EXPECT_FALSE(absl::StartsWith(k, "train-000002")) << k;
  EXPECT_EQ(r.skipped, (std::map<std::string, int>{{"http_5xx", 2 * 8}}));
}

// HttpEnv against each misbehaviour: the reason, and never a hang or a wrong byte.
TEST_F(ShardsTest, HttpEnvNamesEachMisbehaviourByReason) {
  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  HttpOptions o;
  o.max_retries = 1;
  o.initial_backoff = absl::Milliseconds(1);
  o.stall_timeout = absl::Seconds(1);
  auto env = HttpEnv::Create(nullptr, o);
  ASSERT_TRUE(env.ok()) << env.status();
  const std::string good = testing::ReadFile(*shard_dir_ + "/train-000001.tar");
  struct Case {
    const char* path;
    absl::string_view reason;  // Empty: succeeds with the right bytes.
  };
  const Case cases[] = {
      {"/ok/train-000001.tar", ""},
      {"/flaky/train-000001.tar", ""},  // 503, then the retry succeeds.
      {"/stall/train-000001.tar", reason::kTimeout},
      {"/close/train-000001.tar", reason::kHttpPartial},
      {"/lie/train-000001.tar", reason::kHttpPartial},
      {"/short/train-000001.tar", reason::kHttpPartial},
      {"/drip/train-000001.tar", reason::kTimeout},  // Under 1 KiB/s for the 1 s window.
      {"/ok/train-000099.tar", reason::kHttp404},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    std::string bytes;
    const absl::Time start = absl::Now();
    const absl::Status s = (*env)->ReadRange(bad.Url(c.path), 1000, 5000, &bytes);
    EXPECT_EQ(ErrorReason(s), c.reason) << s;
    // Two attempts of at most a 1 s window each, whatever the server does.
    EXPECT_LT(absl::Now() - start, absl::Seconds(4));
    if (c.reason.empty()) {
      EXPECT_EQ(bytes, good.substr(1000, 5000));
    }
  }
  // Past the end: fewer bytes, then none (416), as a file's pread would give.
  std::string tail;
  ASSERT_TRUE((*env)->ReadRange(bad.Url("/ok/train-000001.tar"), good.size() - 10, 100, &tail).ok());
  EXPECT_EQ(tail, good.substr(good.size() - 10));
  ASSERT_TRUE((*env)->ReadRange(bad.Url("/ok/train-000001.tar"), good.size() + 5, 100, &tail).ok());
  EXPECT_EQ(tail, "");
}

// A whole GET over the bytes a reader accepts (the read stage's share of memory for one
// sample) is refused with the size the server gave in Content-Length, before any of the
// body is kept: from nginx and from Python's http.server. It read up to the limit and
// said "limit + 1 bytes".
TEST_F(ShardsTest, AWholeGetOverItsLimitIsRefusedWithTheSizeTheServerGave) {
  Server nginx = Server::Nginx(*shard_dir_, TempDirForTest("nginx_"));
  Server python = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(nginx.running());
  ASSERT_TRUE(python.running());
  auto env = HttpEnv::Create(nullptr, HttpOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  const int64_t size =
      static_cast<int64_t>(testing::ReadFile(*shard_dir_ + "/train-000001.tar").size());
  ASSERT_GT(size, 4096);
  for (const std::string& url :
       {nginx.Url("/train-000001.tar"), python.Url("/ok/train-000001.tar")}) {
    SCOPED_TRACE(url);
    std::string bytes;
    const absl::Status s = (*env)->ReadFile(url, 4096, &bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_EQ(TooLargeSize(s), size) << s;
    EXPECT_TRUE(
        absl::StrContains(s.message(), absl::StrCat(size, " bytes is over the limit of 4096")))
        << s;
    EXPECT_TRUE(bytes.empty());
    // At the limit or above it, the whole body.
    ASSERT_TRUE((*env)->ReadFile(url, size, &bytes).ok());
    EXPECT_EQ(static_cast<int64_t>(bytes.size()), size);
  }
}

// A shard whose server answers its index, then sends every body a byte at a time: its
// reads fail as `timeout` (the low-speed limit, retried, counted), and the other shards'
// samples are all delivered, within seconds.
TEST_F(ShardsTest, ADrippingShardTimesOutAndTheOthersDeliver) {
  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  const std::string list = TempDirForTest("list_") + "/shards.txt";
  testing::WriteFile(
      list, absl::StrCat(bad.Url("/ok/train-{000000..000001}.tar"), "\n",
                         bad.Url("/drip_after/1/train-000002.tar"), "\n",
                         bad.Url("/ok/train-{000003..000004}.tar"), "\n"));
  PipelineOptions o = Options(list);
  o.epochs = 1;
  o.http.max_retries = 1;
  o.http.initial_backoff = absl::Milliseconds(1);
  o.http.stall_timeout = absl::Milliseconds(500);
  o.http_cache_mb = 0;  // Else the index window, kept as the shard's block, serves it.
  const absl::Time start = absl::Now();
  const Delivered r = RunAll(o);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.keys.size(), 28u);
  for (const std::string& k : r.keys) EXPECT_FALSE(absl::StartsWith(k, "train-000002")) << k;
  EXPECT_EQ(r.skipped, (std::map<std::string, int>{{"timeout", 8}}));
  EXPECT_LT(took, absl::Seconds(15));
}

// Stop ends a run within a second whatever the network does: workers inside transfers
// that never answer (or drip) are cancelled, not waited for.
TEST_F(ShardsTest, StopEndsARunWithinASecondWhateverTheServerDoes) {
  Server bad = Server::Misbehaving(*shard_dir_);
  ASSERT_TRUE(bad.running());
  for (const char* mode : {"silent", "drip"}) {
    SCOPED_TRACE(mode);
    const std::string list = TempDirForTest("list_") + "/shards.txt";
    // Every shard answers its index window, then hangs on every member read.
    testing::WriteFile(list, absl::StrCat(bad.Url(absl::StrCat("/", mode, "_after/1/train-{000000..000004}.tar")), "\n"));
    PipelineOptions o = Options(list);  // Default timeouts: 10 s stall, 120 s a request.
    o.http_cache_mb = 0;  // Member reads reach the server (not the kept index windows).
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    std::thread consumer([&p] {
      std::shared_ptr<const Batch> batch;
      bool end_of_epoch = false;
      const absl::Status s = (*p)->Next(&batch, &end_of_epoch);
      EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
    });
    absl::SleepFor(absl::Milliseconds(500));  // Workers are inside their transfers now.
    const absl::Time start = absl::Now();
    (*p)->Stop();
    consumer.join();
    p->reset();
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }
}

}  // namespace
}  // namespace flowloader
