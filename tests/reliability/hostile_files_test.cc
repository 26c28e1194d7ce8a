// hostile_files_test: a dataset of every odd, broken and malicious file we could think
// of, through a real pipeline. Extends tests/bad_input_test.cc (empty, header-only,
// half, random, text files; injected EIO/ENOENT/EACCES; a throwing stage; max_errors as a
// count) with what it does not cover:
//   - odd but valid files, which must be delivered: progressive, grayscale, CMYK, YCCK,
//     4:4:4, restart markers, 1×1, 4000×12, 12×4000, a PNG named .jpg, a palette PNG,
//     an upper-case .JPEG, names with spaces, non-ASCII, a newline and a leading dash, and
//     an image inside a directory named like an image;
//   - broken ones, which must be skipped with the right reason: a JPEG and a PNG header
//     declaring 65000×65000 (bombs), a truncated progressive JPEG and PNG, random bytes
//     behind a JPEG signature, a lone SOI, a dangling symlink, a symlink to itself, a
//     file that disappears after Create (really deleted) and one replaced by a directory,
//     a file that cannot be read (chmod 000; as root, which chmod does not stop, FaultEnv
//     adds EACCES);
//   - an empty directory named like an image is not a sample at all;
//   - on_error=fail names the file and the reason, for each kind of bad file;
//   - (disabled until fixed, see each test) a FIFO named .jpg, an epoch ending in an
//     all-bad batch, and directory symlink cycles;
//   - max_errors at its boundary (equal: runs; one less: stops) and max_error_fraction
//     on both sides of the limit, with a message that says which limit and why.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/image.h"
#include "stages/core/sample_error.h"
#include "stages/decode/encoder.h"
#include "stages/reader/fault_env.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using decode::ChromaSubsampling;
using decode::JpegColor;
using decode::JpegEncodeOptions;
using testing::Drain;
using testing::Drained;
using testing::LogCapture;
using testing::SmallCpuOptions;
using testing::TempDir;
using testing::TempDirForTest;
using testing::ValidJpeg;
using testing::WriteFile;

Image Picture(int w, int h, int channels) {
  Image img;
  img.Resize(w, h, channels);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w * channels; ++x) {
      img.Row(y)[x] = static_cast<uint8_t>((x * 7 + y * 13) ^ (x * y));
    }
  }
  return img;
}

std::string Jpeg(int w, int h, int channels, const JpegEncodeOptions& o = {}) {
  return *decode::EncodeJpeg(Picture(w, h, channels).view(), o);
}

std::string Png(int w, int h, int channels, const decode::PngEncodeOptions& o = {}) {
  return *decode::EncodePng(Picture(w, h, channels).view(), o);
}

std::string JpegDeclaring(std::string jpeg, int width, int height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    const uint8_t m = static_cast<uint8_t>(jpeg[i + 1]);
    if (static_cast<uint8_t>(jpeg[i]) == 0xFF && (m == 0xC0 || m == 0xC2)) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width);
      return jpeg;
    }
  }
  ADD_FAILURE() << "no SOF marker";
  return jpeg;
}

uint32_t Crc32(const std::string& s, size_t begin, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = begin; i < begin + n; ++i) {
    crc ^= static_cast<uint8_t>(s[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string PngDeclaring(std::string png, uint32_t width, uint32_t height) {
  auto put = [&png](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put(16, width);
  put(20, height);
  put(29, Crc32(png, 12, 17));  // IHDR's CRC covers its type and data.
  return png;
}

// The files: key (relative path) → bytes, and what must happen to each.
struct HostileSet {
  std::map<std::string, std::string> good;         // Must be delivered once per epoch.
  std::map<std::string, std::string> bad_reason;   // key → expected skip reason.
};

class HostileFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = TempDirForTest("hostile_");
    ASSERT_EQ(::mkdir((root_ + "/a").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((root_ + "/b").c_str(), 0755), 0);
  }

  void Good(const std::string& key, const std::string& bytes) {
    WriteFile(root_ + "/" + key, bytes);
    set_.good[key] = bytes;
  }
  void Bad(const std::string& key, const std::string& bytes, const std::string& reason) {
    WriteFile(root_ + "/" + key, bytes);
    set_.bad_reason[key] = reason;
  }

  // MakeOddButValid writes files that are unusual yet valid images.
  void MakeOddButValid() {
    JpegEncodeOptions o;
    o.progressive = true;
    Good("a/progressive.jpg", Jpeg(60, 40, 3, o));
    Good("a/gray.jpg", Jpeg(40, 30, 1));
    o = {};
    o.color = JpegColor::kCmyk;
    Good("a/cmyk.jpg", Jpeg(50, 40, 3, o));
    o.color = JpegColor::kYcck;
    Good("a/ycck.jpg", Jpeg(40, 50, 3, o));
    o = {};
    o.subsampling = ChromaSubsampling::k444;
    Good("a/444.jpg", Jpeg(48, 48, 3, o));
    o = {};
    o.restart_interval = 2;
    Good("a/restarts.jpg", Jpeg(64, 32, 3, o));
    Good("a/1x1.jpg", Jpeg(1, 1, 3));
    Good("a/4000x12.jpg", Jpeg(4000, 12, 3));
    Good("a/12x4000.jpg", Jpeg(12, 4000, 3));
    Good("a/png_named.jpg", Png(30, 20, 3));
    decode::PngEncodeOptions p;
    p.palette = true;
    Good("a/palette.png", Png(8, 8, 1, p));
    Good("a/UPPER.JPEG", ValidJpeg(33, 21, 1));
    Good("a/with space.jpg", ValidJpeg(30, 30, 2));
    Good("a/caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC.jpg", ValidJpeg(31, 29, 3));  // café 日本
    Good("a/new\nline.jpg", ValidJpeg(29, 31, 4));
    Good("a/-leading-dash.jpg", ValidJpeg(28, 28, 5));
    ASSERT_EQ(::mkdir((root_ + "/a/dir.jpg").c_str(), 0755), 0);
    Good("a/dir.jpg/inside.jpg", ValidJpeg(27, 27, 6));
    for (int i = 0; i < 4; ++i) Good(absl::StrCat("b/good_", i, ".jpg"), ValidJpeg(40, 30, 10 + i));
  }

  // BadKey is where MakeBroken puts the bad file `name`: b/NN_name, NN even, with a good
  // file at every odd NN, so that no batch (batch_size 3, dataset order) is all bad.
  // (An all-bad batch hands out no batch and its skips travel with the next one; see
  // DISABLED_SkipsOfAnEpochsLastAllBadBatchAreReported.)
  static std::string BadKey(const std::string& name) {
    static const char* const kOrder[] = {
        "bomb.jpg",          "bomb.png",     "progressive_half.jpg", "png_half.png",
        "noise_with_soi.jpg", "soi_only.jpg", "dangling.jpg",         "loop.jpg",
        "unreadable.jpg",    "vanishes.jpg", "becomes_dir.jpg"};
    for (size_t i = 0; i < sizeof(kOrder) / sizeof(kOrder[0]); ++i) {
      if (name == kOrder[i]) return absl::StrFormat("b/%02d_%s", 2 * i, name);
    }
    ADD_FAILURE() << "no such bad file: " << name;
    return "";
  }

  // MakeBroken writes files that must be skipped (and the good ones between them).
  void MakeBroken() {
    for (int i = 0; i < 11; ++i) {
      Good(absl::StrFormat("b/%02d_good.jpg", 2 * i + 1), ValidJpeg(24, 20, 30 + i));
    }
    const std::string jpeg = Jpeg(64, 48, 3);
    JpegEncodeOptions o;
    o.progressive = true;
    const std::string progressive = Jpeg(64, 48, 3, o);
    const std::string png = Png(40, 30, 3);
    Bad(BadKey("bomb.jpg"), JpegDeclaring(jpeg, 65000, 65000), "too_many_pixels");
    Bad(BadKey("bomb.png"), PngDeclaring(png, 65000, 65000), "too_many_pixels");
    Bad(BadKey("progressive_half.jpg"), progressive.substr(0, progressive.size() / 2),
        "truncated");
    Bad(BadKey("png_half.png"), png.substr(0, png.size() / 2), "truncated");
    std::string noise = "\xFF\xD8\xFF";
    for (int i = 0; i < 2000; ++i) noise.push_back(static_cast<char>((i * 2654435761u) >> 13));
    Bad(BadKey("noise_with_soi.jpg"), noise, "corrupt");
    Bad(BadKey("soi_only.jpg"), "\xFF\xD8", "truncated");
    ASSERT_EQ(::symlink("does_not_exist.jpg", (root_ + "/" + BadKey("dangling.jpg")).c_str()), 0);
    set_.bad_reason[BadKey("dangling.jpg")] = "not_found";
    const std::string loop = BadKey("loop.jpg");
    ASSERT_EQ(::symlink(loop.substr(2).c_str(), (root_ + "/" + loop).c_str()), 0);  // Itself.
    set_.bad_reason[loop] = "not_found";  // ELOOP.
    const std::string unreadable = BadKey("unreadable.jpg");
    Bad(unreadable, ValidJpeg(20, 20, 7), "permission_denied");
    ASSERT_EQ(::chmod((root_ + "/" + unreadable).c_str(), 0), 0);
    if (::geteuid() == 0) env_.Inject(unreadable, Fault{EACCES, -1});  // Root reads anyway.
    ASSERT_EQ(::mkdir((root_ + "/b/empty_dir.png").c_str(), 0755), 0);  // Not a sample.
    // Listed at Create, gone (or a directory) by the time they are read (see Vandalize).
    Bad(BadKey("vanishes.jpg"), ValidJpeg(20, 20, 8), "not_found");
    Bad(BadKey("becomes_dir.jpg"), ValidJpeg(20, 20, 9), "not_a_file");
  }

  // Vandalize runs after Create: the files the listing saw change under the pipeline.
  void Vandalize(const std::string& root) {
    const std::string vanishes = root + "/" + BadKey("vanishes.jpg");
    const std::string becomes_dir = root + "/" + BadKey("becomes_dir.jpg");
    if (::access(vanishes.c_str(), F_OK) == 0) {
      ASSERT_EQ(::unlink(vanishes.c_str()), 0);
    }
    if (::access(becomes_dir.c_str(), F_OK) == 0) {
      ASSERT_EQ(::unlink(becomes_dir.c_str()), 0);
      ASSERT_EQ(::mkdir(becomes_dir.c_str(), 0755), 0);
    }
  }

  PipelineOptions Options() { return SmallCpuOptions(root_, /*batch_size=*/3, &env_); }

  LogCapture log_;
  std::string root_;
  HostileSet set_;
  FaultEnv env_{Env::Default()};
};

TEST_F(HostileFilesTest, OddButValidFilesAreDeliveredAndBadOnesSkippedWithTheirReason) {
  MakeOddButValid();
  MakeBroken();
  PipelineOptions o = Options();
  o.epochs = 2;
  o.shuffle = false;       // Dataset order: b/ (and the vandalized files) after a/ ...
  o.prefetch_batches = 1;  // ... is read only once the consumer took the earlier batches.
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  Vandalize(root_);
  const size_t n_samples = set_.good.size() + set_.bad_reason.size();
  EXPECT_EQ((*p)->samples_per_epoch(), static_cast<int64_t>(n_samples))
      << "the listing: every file above, no directory, once";

  std::vector<std::multiset<std::string>> delivered(2);
  std::vector<std::map<std::string, std::string>> reason_of(2);
  std::vector<std::string> skipped_messages;
  int epoch = 0;
  const size_t sample_floats = 3 * static_cast<size_t>(o.image_size) * o.image_size;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    const absl::Status s = (*p)->Next(&batch, &end);
    ASSERT_TRUE(s.ok()) << s;
    if (end) {
      if ((*p)->done()) break;
      ++epoch;
      continue;
    }
    ASSERT_LT(epoch, 2);
    ASSERT_EQ(batch->keys.size(), static_cast<size_t>(batch->size()));
    const float* px = static_cast<const float*>(batch->host_data());
    for (int64_t i = 0; i < batch->size(); ++i) {
      delivered[epoch].insert(batch->keys[i]);
      double sum = 0;
      for (size_t k = 0; k < sample_floats; ++k) sum += px[i * sample_floats + k];
      EXPECT_TRUE(std::isfinite(sum)) << batch->keys[i];
    }
    for (const SkippedSample& sk : batch->skipped) {
      EXPECT_TRUE(reason_of[epoch].emplace(sk.key, sk.reason).second) << "twice: " << sk.key;
      skipped_messages.push_back(sk.message);
      EXPECT_TRUE(absl::StrContains(sk.message, sk.key)) << sk.message;
    }
  }
  EXPECT_EQ(epoch, 1);
  for (int e = 0; e < 2; ++e) {
    SCOPED_TRACE(absl::StrCat("epoch ", e));
    // Every good sample exactly once, nothing else.
    for (const auto& [key, bytes] : set_.good) {
      EXPECT_EQ(delivered[e].count(key), 1u) << "good file not delivered once: " << key;
    }
    EXPECT_EQ(delivered[e].size(), set_.good.size());
    // Every bad one skipped, with its reason.
    for (const auto& [key, reason] : set_.bad_reason) {
      auto it = reason_of[e].find(key);
      if (it == reason_of[e].end()) {
        ADD_FAILURE() << "bad file not reported as skipped: " << key;
        continue;
      }
      EXPECT_EQ(it->second, reason) << key;
    }
    EXPECT_EQ(reason_of[e].size(), set_.bad_reason.size());
  }
  // The same in the stats, split by the stage that refused each file.
  const auto& stats = *(*p)->stats();
  EXPECT_EQ(stats.skipped.load(), 2 * set_.bad_reason.size());
  EXPECT_EQ(stats.samples.load(), 2 * set_.good.size());
  std::map<std::string, uint64_t> expected_read, expected_decode;
  for (const auto& [key, reason] : set_.bad_reason) {
    const bool read_side = reason == "not_found" || reason == "permission_denied" ||
                           reason == "not_a_file";
    (read_side ? expected_read : expected_decode)[reason] += 2;
  }
  EXPECT_EQ(stats.Stage("read")->Errors(), expected_read);
  EXPECT_EQ(stats.Stage("decode")->Errors(), expected_decode);
  EXPECT_EQ(stats.Stage("augment")->TotalErrors(), 0u);
  // Each bad file is logged once a run, naming it (both epochs skip it and count it).
  EXPECT_EQ(log_.LinesNaming(BadKey("bomb.jpg")), 1);
  EXPECT_EQ(log_.LinesNaming(BadKey("vanishes.jpg")), 1);
}

// Every skipped sample of an epoch is reported in that epoch's batches, also when the
// epoch's last batch is all bad. Dataset order (no shuffle, batch_size 3): [g0 g1 g2]
// [g3 x0 x1] [x2]: the last batch has no good sample, so it arrives with 0 rows and
// carries x2's skip (before that fix, x2 was reported in the next epoch or never).
TEST_F(HostileFilesTest, SkipsOfAnEpochsLastAllBadBatchAreReported) {
  for (int i = 0; i < 4; ++i) Good(absl::StrCat("a/g", i, ".jpg"), ValidJpeg(24, 24, i));
  for (int i = 0; i < 3; ++i) Bad(absl::StrCat("b/x", i, ".jpg"), "", "empty_file");
  PipelineOptions o = Options();
  o.shuffle = false;
  o.epochs = 2;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<std::set<std::string>> skipped(1);
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    ASSERT_TRUE((*p)->Next(&batch, &end).ok());
    if (end) {
      if ((*p)->done()) break;
      skipped.emplace_back();
      continue;
    }
    for (const auto& sk : batch->skipped) skipped.back().insert(sk.key);
  }
  ASSERT_EQ(skipped.size(), 2u);
  const std::set<std::string> all_bad = {"b/x0.jpg", "b/x1.jpg", "b/x2.jpg"};
  EXPECT_EQ(skipped[0], all_bad) << "epoch 0";
  EXPECT_EQ(skipped[1], all_bad) << "epoch 1 (the last)";
}

// The reader must not block on a FIFO named like an image: open() on a FIFO without a
// writer waits forever, a worker thread with it, and Stop() waits for that worker. A
// helper thread opens the FIFO for writing after kPatience so that this test ends either
// way, and fails if that was needed. (PosixEnv opens with O_NONBLOCK, then refuses
// anything but a regular file as not_a_file.)
TEST_F(HostileFilesTest, FifoNamedLikeAnImageIsSkippedWithoutBlocking) {
  constexpr auto kPatience = std::chrono::seconds(3);
  for (int i = 0; i < 3; ++i) Good(absl::StrCat("a/good_", i, ".jpg"), ValidJpeg(30, 30, i));
  const std::string fifo = root_ + "/b/fifo.jpg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::atomic<bool> finished{false};
  std::atomic<bool> rescued{false};
  std::thread rescuer([&] {
    const auto start = std::chrono::steady_clock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (std::chrono::steady_clock::now() - start < kPatience) continue;
      // A reader blocked in open() counts as a reader, so this succeeds and wakes it.
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        rescued.store(true);
        ::close(fd);
      }
    }
  });
  PipelineOptions o = Options();
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained run = Drain(p->get());
  const std::set<std::string> delivered(run.keys.begin(), run.keys.end());
  std::map<std::string, std::string> reason_of;
  for (const SkippedSample& sk : run.skipped) reason_of[sk.key] = sk.reason;
  finished.store(true);
  rescuer.join();
  EXPECT_FALSE(rescued.load()) << "reading b/fifo.jpg blocked until a writer appeared";
  EXPECT_EQ(delivered.size(), 3u);
  EXPECT_EQ(reason_of["b/fifo.jpg"], "not_a_file");
}

// A directory symlink that points back up the tree (a/self -> .) must not multiply the
// dataset, and two of them must not make Create enumerate 2^depth paths. (Before the
// walk skipped links back to a directory it is inside, one self-link listed each file 41
// times and two took 17 s, then failed with ELOOP.)
TEST_F(HostileFilesTest, SymlinkCyclesNeitherMultiplySamplesNorStallCreate) {
  // ListingBudgetEnv fails listings past a budget, so the unfixed code fails fast here
  // instead of walking for minutes.
  class ListingBudgetEnv : public ForwardingEnv {
   public:
    ListingBudgetEnv() : ForwardingEnv(Env::Default()) {}
    absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) override {
      if (++listings > 1000) return absl::ResourceExhaustedError("over 1000 directory listings");
      return ForwardingEnv::ListDirectory(path);
    }
    std::atomic<int> listings{0};
  };
  for (int i = 0; i < 3; ++i) Good(absl::StrCat("a/good_", i, ".jpg"), ValidJpeg(30, 30, i));
  Good("b/good.jpg", ValidJpeg(30, 30, 9));
  ASSERT_EQ(::symlink(".", (root_ + "/a/self").c_str()), 0);
  for (const char* second : {"", "a/self2"}) {
    SCOPED_TRACE(*second ? "two self-links" : "one self-link");
    if (*second) {
      ASSERT_EQ(::symlink(".", (root_ + "/" + second).c_str()), 0);
    }
    ListingBudgetEnv env;
    PipelineOptions o = Options();
    o.env = &env;
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)->samples_per_epoch(), 4);
  }
}

// on_error=fail stops at the first bad file with a status that names it and whose reason
// is the file's, for every kind of bad file (one dataset per kind: good files + it).
TEST_F(HostileFilesTest, FailPolicyNamesTheFileAndTheReasonForEveryKindOfBadFile) {
  struct Case {
    const char* name;
    const char* reason;
    const char* words;  // In the message.
  };
  const Case cases[] = {
      {"bomb.jpg", "too_many_pixels", "65000x65000"},
      {"bomb.png", "too_many_pixels", "65000x65000"},
      {"progressive_half.jpg", "truncated", "JPEG"},
      {"png_half.png", "truncated", "PNG"},
      {"noise_with_soi.jpg", "corrupt", "JPEG"},
      {"soi_only.jpg", "truncated", "JPEG"},
      {"dangling.jpg", "not_found", "No such file"},
      {"loop.jpg", "not_found", "symbolic links"},
      {"unreadable.jpg", "permission_denied", "ermission denied"},
      {"vanishes.jpg", "not_found", "No such file"},
      {"becomes_dir.jpg", "not_a_file", "directory"},
  };
  MakeBroken();
  const std::string all = root_;
  for (const Case& c : cases) {
    const std::string key = BadKey(c.name);
    SCOPED_TRACE(key);
    // A dataset of two good files and this one bad file (hard links keep the bytes).
    root_ = TempDir(absl::StrCat("hostile_fail_", &c - cases));
    ASSERT_EQ(::mkdir((root_ + "/a").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((root_ + "/b").c_str(), 0755), 0);
    WriteFile(root_ + "/a/good_0.jpg", ValidJpeg(30, 30, 1));
    WriteFile(root_ + "/a/good_1.jpg", ValidJpeg(30, 30, 2));
    const std::string src = all + "/" + key;
    const std::string dst = root_ + "/" + key;
    struct stat st;
    if (::lstat(src.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      char target[256] = {};
      ASSERT_GT(::readlink(src.c_str(), target, sizeof(target) - 1), 0);
      ASSERT_EQ(::symlink(target, dst.c_str()), 0);
    } else {
      ASSERT_EQ(::link(src.c_str(), dst.c_str()), 0) << std::strerror(errno);
    }
    PipelineOptions o = Options();
    o.on_error = ErrorPolicy::kFail;
    o.shuffle = false;
    o.batch_size = 1;
    o.prefetch_batches = 1;
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    Vandalize(root_);
    const Drained run = Drain(p->get(), /*max_calls=*/10);
    const absl::Status& status = run.status;
    ASSERT_FALSE(status.ok()) << "on_error=fail ran past the bad file";
    EXPECT_EQ(run.samples, 2) << "a/ sorts before b/: both good files come first";
    EXPECT_TRUE(absl::StrContains(status.message(), key)) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), c.words)) << status;
    EXPECT_EQ(ErrorReason(status), c.reason) << status;
  }
  root_ = all;
}

// max_errors as a count: reaching it is allowed, exceeding it stops with a message
// naming the limit. Dataset: 10 good files and 4 bad ones.
TEST_F(HostileFilesTest, MaxErrorsCountStopsOnlyWhenExceeded) {
  for (int i = 0; i < 10; ++i) Good(absl::StrCat("a/good_", i, ".jpg"), ValidJpeg(30, 30, i));
  const std::string jpeg = Jpeg(64, 48, 3);
  Bad("b/bomb_0.jpg", JpegDeclaring(jpeg, 65000, 65000), "too_many_pixels");
  Bad("b/bomb_1.jpg", JpegDeclaring(jpeg, 60000, 60000), "too_many_pixels");
  Bad("b/half.jpg", jpeg.substr(0, jpeg.size() / 2), "truncated");
  Bad("b/soi.jpg", "\xFF\xD8", "truncated");
  for (const int64_t limit : {int64_t{4}, int64_t{3}}) {
    SCOPED_TRACE(absl::StrCat("max_errors=", limit));
    PipelineOptions o = Options();
    o.max_errors = limit;
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    const Drained run = Drain(p->get());
    const absl::Status& status = run.status;
    if (limit == 4) {
      EXPECT_TRUE(status.ok()) << "4 errors with max_errors=4 must run: " << status;
      EXPECT_EQ(run.samples, 10);
      EXPECT_EQ((*p)->stats()->skipped.load(), 4u);
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
      EXPECT_TRUE(absl::StrContains(status.message(), "4 samples failed, more than max_errors=3"))
          << status;
      EXPECT_TRUE(absl::StrContains(status.message(), "last: ")) << status;
      EXPECT_TRUE(absl::StrContains(status.message(), "b/")) << "names a file: " << status;
    }
  }
}

// max_error_fraction: 12 bad among 120 (10%): a 0.15 limit lets the epoch finish, 0.05
// stops it once 100 samples were processed, saying which fraction and how many failed.
TEST_F(HostileFilesTest, MaxErrorFractionStopsAboveTheFractionOnly) {
  for (int i = 0; i < 108; ++i) {
    Good(absl::StrCat(i % 2 ? "a" : "b", "/good_", i, ".jpg"), ValidJpeg(24, 24, i));
  }
  for (int i = 0; i < 12; ++i) {
    Bad(absl::StrCat(i % 2 ? "a" : "b", "/bad_", i, ".jpg"), "not an image", "unknown_format");
  }
  for (const double fraction : {0.15, 0.05}) {
    SCOPED_TRACE(absl::StrCat("max_error_fraction=", fraction));
    PipelineOptions o = Options();
    o.batch_size = 8;
    o.max_error_fraction = fraction;
    auto p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    const Drained run = Drain(p->get());
    const absl::Status& status = run.status;
    if (fraction > 0.1) {
      EXPECT_TRUE(status.ok()) << status;
      EXPECT_EQ(run.samples, 108);
      EXPECT_EQ((*p)->stats()->skipped.load(), 12u);
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
      EXPECT_TRUE(absl::StrContains(status.message(), "more than max_errors=5% allows"))
          << status;
      EXPECT_TRUE(absl::StrContains(status.message(), "samples failed")) << status;
      EXPECT_TRUE(absl::StrContains(status.message(), "/bad_")) << status;
      EXPECT_LT(run.samples, 108);
    }
  }
}

}  // namespace
}  // namespace flowloader
