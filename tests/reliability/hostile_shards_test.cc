// Hostile tar shards through a real pipeline: truncated archives, bad header checksums,
// samples without an image or a label, zero-byte members, files that are not tars (text,
// gzip, a FIFO, a directory), shards that vanish or shrink between listing and reading.
// Each is counted by its reason every epoch; no crash, no hang, no lost good sample.
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>  // NOLINT(build/c++11)
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"
#include "stages/reader/tar_writer.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Drain;
using testing::Drained;
using testing::LogCapture;
using testing::SmallCpuOptions;
using testing::TempDirForTest;
using testing::ValidJpeg;
using testing::WriteFile;

// BeforeFirstMemberRead is the real file system, running `change` once just before the
// first member read (ReadRange; indexing reads through NewRandomAccessFile). Changing the
// shards after Pipeline::Create returned would race its prefetching, which may already
// have read them (then a vanished shard's samples are delivered in the first epoch).
class BeforeFirstMemberRead : public ForwardingEnv {
 public:
  explicit BeforeFirstMemberRead(std::function<void()> change)
      : ForwardingEnv(Env::Default()), change_(std::move(change)) {}
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override {
    std::call_once(once_, change_);
    return ForwardingEnv::ReadRange(path, offset, length, contents);
  }

 private:
  std::function<void()> change_;
  std::once_flag once_;
};

class HostileShardsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TempDirForTest("hostile_shards_"); }

  // Shard writes `members` (name, bytes) as DIR/name with TarWriter and lists it.
  std::string Shard(const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& members) {
    const std::string path = dir_ + "/" + name;
    auto w = TarWriter::Create(path);
    EXPECT_TRUE(w.ok()) << w.status();
    for (const auto& [member, bytes] : members) EXPECT_TRUE((*w)->Add(member, bytes).ok());
    EXPECT_TRUE((*w)->Close().ok());
    List(path);
    return path;
  }
  // GoodSamples returns `n` webdataset samples named PREFIX<i> with a real JPEG each.
  static std::vector<std::pair<std::string, std::string>> GoodSamples(const std::string& prefix,
                                                                      int n) {
    std::vector<std::pair<std::string, std::string>> m;
    for (int i = 0; i < n; ++i) {
      m.emplace_back(absl::StrCat(prefix, i, ".jpg"), ValidJpeg(24 + i, 20, i + 1));
      m.emplace_back(absl::StrCat(prefix, i, ".cls"), absl::StrCat(i % 3));
    }
    return m;
  }
  // MemberOffset is where sample i's image data starts in the (still intact) shard.
  static int64_t MemberOffset(const std::string& shard, int64_t i) {
    absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({shard});
    EXPECT_TRUE(ds.ok()) << ds.status();
    return ds.ok() ? (*ds)->sample(i).offset : 0;
  }
  void List(const std::string& path) { absl::StrAppend(&list_, path, "\n"); }
  std::string ListFile() {
    const std::string path = dir_ + "/shards.txt";
    WriteFile(path, list_);
    return path;
  }

  LogCapture log_;
  std::string dir_;
  std::string list_;
};

TEST_F(HostileShardsTest, EveryKindOfBadShardIsCountedAndEveryGoodSampleDeliveredOnce) {
  // A GNU tar shard with a long name and a sample in a sub-directory: all good.
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p ", dir_, "/src/sub").c_str()), 0);
  const std::string long_key = "sub/" + std::string(150, 'k');
  WriteFile(dir_ + "/src/" + long_key + ".jpg", ValidJpeg(30, 30, 9));
  WriteFile(dir_ + "/src/" + long_key + ".cls", "1");
  WriteFile(dir_ + "/src/a.jpg", ValidJpeg(30, 30, 8));
  WriteFile(dir_ + "/src/a.cls", "2");
  ASSERT_EQ(std::system(absl::StrCat("cd ", dir_, "/src && tar -cf ", dir_,
                                     "/gnu.tar a.jpg a.cls sub").c_str()), 0);
  List(dir_ + "/gnu.tar");
  // Good and bad samples side by side.
  std::vector<std::pair<std::string, std::string>> mixed = GoodSamples("g", 2);
  mixed.insert(mixed.end(), {{"noimage.cls", "1"},
                             {"nolabel.jpg", ValidJpeg(20, 20, 3)},
                             {"zero.jpg", ""},
                             {"zero.cls", "1"},
                             {"zerocls.jpg", ValidJpeg(20, 20, 4)},
                             {"zerocls.cls", ""},
                             {"badlabel.jpg", ValidJpeg(20, 20, 5)},
                             {"badlabel.cls", "cat"},
                             {"text.jpg", "not a jpeg at all"},
                             {"text.cls", "0"}});
  Shard("mixed.tar", mixed);
  // Cut inside its third sample's image: the first two are kept.
  const std::string cut = Shard("cut.tar", GoodSamples("c", 3));
  ASSERT_EQ(::truncate(cut.c_str(), MemberOffset(cut, 2) + 10), 0);
  // A flipped byte in the second sample's image header: the first is kept.
  const std::string flipped = Shard("badsum.tar", GoodSamples("s", 3));
  std::string bytes = testing::ReadFile(flipped);
  bytes[MemberOffset(flipped, 1) - 512 + 3] ^= 0x20;  // A byte of the member's name.
  WriteFile(flipped, bytes);
  WriteFile(dir_ + "/text.tar", "this is a text file named like a tar shard\n");
  List(dir_ + "/text.tar");
  ASSERT_EQ(std::system(absl::StrCat("cd ", dir_, "/src && tar -czf ", dir_,
                                     "/gzip.tar a.jpg a.cls").c_str()), 0);
  List(dir_ + "/gzip.tar");
  ASSERT_EQ(::mkfifo((dir_ + "/fifo.tar").c_str(), 0644), 0);
  List(dir_ + "/fifo.tar");
  ASSERT_EQ(::mkdir((dir_ + "/dir.tar").c_str(), 0755), 0);
  List(dir_ + "/dir.tar");
  // Good when listed; one vanishes and one shrinks before the first read.
  const std::string vanishes = Shard("vanishes.tar", GoodSamples("v", 2));
  const std::string shrinks = Shard("shrinks.tar", GoodSamples("h", 3));
  const int64_t h0_middle = MemberOffset(shrinks, 0) + 100;  // Inside h0's image.

  BeforeFirstMemberRead env([&] {
    EXPECT_EQ(::unlink(vanishes.c_str()), 0);
    EXPECT_EQ(::truncate(shrinks.c_str(), h0_middle), 0);
  });
  PipelineOptions o = SmallCpuOptions(ListFile(), /*batch_size=*/4, &env);
  o.epochs = 2;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained run = Drain(p->get());
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(run.epochs, 2);

  std::map<std::string, int> delivered;
  for (const std::string& k : run.keys) ++delivered[k];
  const std::map<std::string, int> want_delivered = {
      {"gnu.tar/a.jpg", 2},     {"gnu.tar/" + long_key + ".jpg", 2},
      {"mixed.tar/g0.jpg", 2},  {"mixed.tar/g1.jpg", 2},
      {"cut.tar/c0.jpg", 2},    {"cut.tar/c1.jpg", 2},
      {"badsum.tar/s0.jpg", 2}};
  EXPECT_EQ(delivered, want_delivered);

  std::map<std::string, std::string> reason_of;
  std::map<std::string, int> times;
  for (const SkippedSample& s : run.skipped) {
    reason_of[s.key] = s.reason;
    ++times[s.key];
  }
  const std::map<std::string, std::string> want_reason = {
      {"mixed.tar/noimage", "missing_image"},
      {"mixed.tar/nolabel.jpg", "missing_label"},
      {"mixed.tar/zero.jpg", "empty_file"},
      {"mixed.tar/zerocls.jpg", "missing_label"},
      {"mixed.tar/badlabel.jpg", "missing_label"},
      {"mixed.tar/text.jpg", "unknown_format"},
      {"cut.tar", "truncated"},
      {"badsum.tar", "corrupt"},
      {"text.tar", "unknown_format"},
      {"gzip.tar", "unknown_format"},
      {"fifo.tar", "not_a_file"},
      {"dir.tar", "not_a_file"},
      {"vanishes.tar/v0.jpg", "not_found"},
      {"vanishes.tar/v1.jpg", "not_found"},
      {"shrinks.tar/h0.jpg", "truncated"},
      {"shrinks.tar/h1.jpg", "truncated"},
      {"shrinks.tar/h2.jpg", "truncated"},
  };
  EXPECT_EQ(reason_of, want_reason);
  for (const auto& [key, n] : times) EXPECT_EQ(n, 2) << key << " is skipped once an epoch";
}

// A shard directory with other things in it (logs/, a note) is still read as shards, and
// says so once; a member whose GNU long name or pax path is over 64 KiB (valid for GNU
// tar) is skipped alone and counted, its shard's later members kept; a second sample
// under the key of the one before it is counted as duplicate_key, never merged away.
TEST_F(HostileShardsTest, OddEntriesLongNamesAndDuplicateKeysSkipOnlyThemselves) {
  const std::string huge(70000, 'n');
  std::vector<std::pair<std::string, std::string>> gnu = GoodSamples("g", 1);
  gnu.insert(gnu.end(), {{huge + ".jpg", ValidJpeg(20, 20, 6)}, {huge + ".cls", "1"}});
  const auto g1 = GoodSamples("h", 1);
  gnu.insert(gnu.end(), g1.begin(), g1.end());
  Shard("gnu_long.tar", gnu);
  Shard("dup.tar", {{"dup.jpg", ValidJpeg(20, 20, 7)}, {"dup.cls", "0"},
                    {"dup.jpg", ValidJpeg(22, 20, 8)}, {"dup.cls", "1"},
                    {"d1.jpg", ValidJpeg(20, 22, 9)}, {"d1.cls", "2"}});
  // pax: Python's tarfile writes a 70 000-byte path record for the middle member.
  WriteFile(dir_ + "/x.jpg", ValidJpeg(20, 20, 10));
  const std::string py = absl::StrCat(
      "import tarfile\n"
      "with tarfile.open('", dir_, "/pax_long.tar', 'w', format=tarfile.PAX_FORMAT) as t:\n"
      "  for name in ['a0.jpg', 'p' * 70000 + '.jpg', 'a1.jpg']:\n"
      "    t.add('", dir_, "/x.jpg', arcname=name)\n"
      "    i = tarfile.TarInfo(name[:-4] + '.cls'); i.size = 1\n"
      "    import io; t.addfile(i, io.BytesIO(b'1'))\n");
  WriteFile(dir_ + "/pax.py", py);
  ASSERT_EQ(std::system(absl::StrCat("python3 ", dir_, "/pax.py").c_str()), 0);
  ASSERT_EQ(::unlink((dir_ + "/x.jpg").c_str()), 0);
  ASSERT_EQ(::mkdir((dir_ + "/logs").c_str(), 0755), 0);  // Beside the shards.

  PipelineOptions o = SmallCpuOptions(dir_, /*batch_size=*/4, nullptr);
  o.epochs = 2;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained run = Drain(p->get());
  ASSERT_TRUE(run.status.ok()) << run.status;
  std::map<std::string, int> delivered;
  for (const std::string& k : run.keys) ++delivered[k];
  EXPECT_EQ(delivered, (std::map<std::string, int>{{"dup.tar/d1.jpg", 2},
                                                   {"dup.tar/dup.jpg", 2},
                                                   {"gnu_long.tar/g0.jpg", 2},
                                                   {"gnu_long.tar/h0.jpg", 2},
                                                   {"pax_long.tar/a0.jpg", 2},
                                                   {"pax_long.tar/a1.jpg", 2}}));
  std::map<std::string, int> by_reason;
  for (const SkippedSample& s : run.skipped) ++by_reason[s.reason];
  // Per epoch: the two long-named members of each long shard, and dup's second sample.
  EXPECT_EQ(by_reason, (std::map<std::string, int>{{"unsupported", 2 * 4},
                                                   {"duplicate_key", 2 * 1}}));
  EXPECT_EQ(log_.LinesNaming("ignoring 2 other entries (logs/, pax.py)"), 1);
}

TEST_F(HostileShardsTest, FailPolicyNamesTheShardAndTheReason) {
  Shard("good.tar", GoodSamples("g", 3));
  const std::string cut = Shard("cut.tar", GoodSamples("c", 2));
  ASSERT_EQ(::truncate(cut.c_str(), MemberOffset(cut, 1) + 10), 0);
  PipelineOptions o = SmallCpuOptions(ListFile(), /*batch_size=*/2, nullptr);
  o.on_error = ErrorPolicy::kFail;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained run = Drain(p->get());
  ASSERT_FALSE(run.status.ok());
  EXPECT_TRUE(absl::StrContains(run.status.message(), "cut.tar")) << run.status;
  EXPECT_TRUE(absl::StrContains(run.status.message(), "cut short")) << run.status;
  EXPECT_EQ(ErrorReason(run.status), "truncated") << run.status;
}

}  // namespace
}  // namespace flowloader
