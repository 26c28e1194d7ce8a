// Tar index tests on archives written by GNU tar (ustar, GNU long names, pax) and by
// TarWriter, plus damaged ones: every member's offset must point at its bytes.
#include "stages/reader/tar_index.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "stages/core/sample_error.h"
#include "stages/reader/env.h"
#include "stages/reader/tar_writer.h"

namespace flowloader {
namespace {

class TarIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/tar_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf ", dir_, " && mkdir -p ", dir_, "/src").c_str()), 0);
  }
  void Write(const std::string& rel, const std::string& body) {
    const std::string path = dir_ + "/src/" + rel;
    ASSERT_EQ(std::system(absl::StrCat("mkdir -p \"$(dirname '", path, "')\"").c_str()), 0);
    std::ofstream(path, std::ios::binary) << body;
  }
  // Tar runs GNU tar in src/ over `members` with `flags`, writing `name`.
  std::string Tar(const std::string& name, const std::string& flags, const std::string& members) {
    const std::string out = dir_ + "/" + name;
    EXPECT_EQ(std::system(absl::StrCat("cd ", dir_, "/src && tar ", flags, " -cf ", out, " ",
                                       members).c_str()), 0);
    return out;
  }
  static TarIndex Index(const std::string& path, const TarIndexOptions& o = {}) {
    return IndexTar(
        [&path](int64_t offset, int64_t length, std::string* out) {
          return Env::Default()->ReadRange(path, offset, length, out);
        },
        path, o);
  }
  static std::string Bytes(const std::string& path, const TarMember& m) {
    std::string out;
    EXPECT_TRUE(Env::Default()->ReadRange(path, m.offset, m.size, &out).ok());
    return out;
  }
  std::string dir_;
};

TEST_F(TarIndexTest, IndexesGnuTarMembersInOrderWithTheirBytes) {
  Write("000001.jpg", "image one");
  Write("000001.cls", "3");
  Write("000002.jpg", std::string(1000, 'x'));
  Write("000002.cls", "7\n");
  const std::string tar = Tar("a.tar", "", "000001.jpg 000001.cls 000002.jpg 000002.cls");
  TarIndex index = Index(tar);
  ASSERT_TRUE(index.damage.ok()) << index.damage;
  ASSERT_EQ(index.members.size(), 4u);
  EXPECT_EQ(index.members[0].name, "000001.jpg");
  EXPECT_EQ(Bytes(tar, index.members[0]), "image one");
  EXPECT_EQ(index.members[2].size, 1000);
  EXPECT_EQ(Bytes(tar, index.members[2]), std::string(1000, 'x'));
  EXPECT_EQ(Bytes(tar, index.members[3]), "7\n");
}

TEST_F(TarIndexTest, ReadsLongNamesAndSubdirectoriesInEveryGnuTarFormat) {
  const std::string long_dir(120, 'd');
  const std::string long_name = long_dir + "/" + std::string(150, 'n') + ".jpg";
  Write(long_name, "long");
  Write("sub/dir/k.cls", "1");
  for (const char* format : {"gnu", "pax", "ustar", "posix"}) {
    SCOPED_TRACE(format);
    if (std::string(format) == "ustar") continue;  // ustar cannot hold a 150-byte base name.
    const std::string tar = Tar(absl::StrCat(format, ".tar"), absl::StrCat("--format=", format),
                                long_dir + " sub");
    TarIndex index = Index(tar);
    ASSERT_TRUE(index.damage.ok()) << index.damage;
    ASSERT_EQ(index.members.size(), 2u);  // Directories are not members.
    EXPECT_EQ(index.members[0].name, long_name);
    EXPECT_EQ(Bytes(tar, index.members[0]), "long");
    EXPECT_EQ(index.members[1].name, "sub/dir/k.cls");
  }
  // ustar keeps a long directory in its prefix field.
  const std::string mid_dir = std::string(90, 'p') + "/" + std::string(60, 'q');
  Write(mid_dir + "/x.jpg", "prefixed");
  const std::string tar = Tar("ustar.tar", "--format=ustar", mid_dir + "/x.jpg");
  TarIndex index = Index(tar);
  ASSERT_TRUE(index.damage.ok()) << index.damage;
  ASSERT_EQ(index.members.size(), 1u);
  EXPECT_EQ(index.members[0].name, mid_dir + "/x.jpg");
  EXPECT_EQ(Bytes(tar, index.members[0]), "prefixed");
}

TEST_F(TarIndexTest, KeepsRequestedSmallPayloadsOnly) {
  Write("a.jpg", "pixels");
  Write("a.cls", "12");
  const std::string tar = Tar("p.tar", "", "a.jpg a.cls");
  TarIndexOptions o;
  o.want_payload = [](const std::string& name) { return name == "a.cls"; };
  TarIndex index = Index(tar, o);
  ASSERT_EQ(index.members.size(), 2u);
  EXPECT_EQ(index.members[0].inline_payload, "");
  EXPECT_EQ(index.members[1].inline_payload, "12");
}

TEST_F(TarIndexTest, WindowedReadsServeManyHeadersPerRead) {
  std::string names;
  for (int i = 0; i < 50; ++i) {
    Write(absl::StrCat(i, ".cls"), absl::StrCat(i));
    absl::StrAppend(&names, " ", i, ".cls");
  }
  const std::string tar = Tar("w.tar", "", names);
  int reads = 0;
  TarIndexOptions o;
  o.read_ahead_bytes = 1 << 20;
  TarIndex index = IndexTar(
      [&](int64_t offset, int64_t length, std::string* out) {
        ++reads;
        return Env::Default()->ReadRange(tar, offset, length, out);
      },
      tar, o);
  ASSERT_TRUE(index.damage.ok()) << index.damage;
  EXPECT_EQ(index.members.size(), 50u);
  EXPECT_EQ(reads, 1);  // 50 headers + data = 51 KB: one window.
}

TEST_F(TarIndexTest, TarWriterArchivesReadBackByGnuTarAndTheIndex) {
  const std::string path = dir_ + "/written.tar";
  auto writer = TarWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string long_name = std::string(130, 'L') + ".jpg";
  ASSERT_TRUE((*writer)->Add("k1.jpg", "abc").ok());
  ASSERT_TRUE((*writer)->Add(long_name, std::string(600, 'z')).ok());
  ASSERT_TRUE((*writer)->Add("k1.cls", "").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  ASSERT_EQ(std::system(absl::StrCat("cd ", dir_, " && mkdir -p x && tar -xf written.tar -C x && "
                                     "test \"$(cat x/k1.jpg)\" = abc && "
                                     "test $(stat -c %s x/", long_name, ") = 600").c_str()), 0);
  TarIndex index = Index(path);
  ASSERT_TRUE(index.damage.ok()) << index.damage;
  ASSERT_EQ(index.members.size(), 3u);
  EXPECT_EQ(index.members[1].name, long_name);
  EXPECT_EQ(Bytes(path, index.members[1]), std::string(600, 'z'));
  EXPECT_EQ(index.members[2].size, 0);
}

// Damaged archives: the members before the damage stay, the damage has a reason.
struct DamageCase {
  const char* name;
  std::function<void(std::string&)> damage;
  absl::string_view reason;
  size_t members_kept;
};

TEST_F(TarIndexTest, DamagedArchivesKeepTheMembersBeforeTheDamage) {
  Write("a.jpg", std::string(700, 'a'));
  Write("b.jpg", std::string(700, 'b'));
  Write("c.jpg", std::string(700, 'c'));
  const std::string tar = Tar("good.tar", "", "a.jpg b.jpg c.jpg");
  std::ifstream in(tar, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string good = ss.str();
  // Layout: header 0, data 512..1535 (700 B + pad), header 1536, data 2048, header 3072.
  const DamageCase cases[] = {
      {"cut_in_last_member", [](std::string& t) { t.resize(3072 + 512 + 100); },
       reason::kTruncated, 2},
      {"cut_in_a_header", [](std::string& t) { t.resize(1536 + 100); }, reason::kTruncated, 1},
      {"cut_after_a_member", [](std::string& t) { t.resize(3072); }, reason::kTruncated, 2},
      {"bad_checksum_second_header", [](std::string& t) { t[1536 + 10] ^= 1; }, reason::kCorrupt,
       1},
      {"bad_size_field", [](std::string& t) { t.replace(1536 + 124, 3, "9x9"); },
       reason::kCorrupt, 1},
      {"not_a_tar", [](std::string& t) { t = std::string(5000, 'J'); }, reason::kUnknownFormat, 0},
      {"empty", [](std::string& t) { t.clear(); }, reason::kEmptyFile, 0},
  };
  for (const DamageCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bytes = good;
    c.damage(bytes);
    const std::string path = absl::StrCat(dir_, "/", c.name, ".tar");
    std::ofstream(path, std::ios::binary) << bytes;
    TarIndex index = Index(path);
    EXPECT_EQ(ErrorReason(index.damage), c.reason) << index.damage;
    EXPECT_EQ(index.members.size(), c.members_kept);
  }
  // A checksum fixed up after the size was changed to point past the end: truncated.
  std::string huge = good;
  huge.replace(1536 + 124, 11, "77777777777");
  std::memset(&huge[1536 + 148], ' ', 8);
  int64_t sum = 0;
  for (int i = 0; i < 512; ++i) sum += static_cast<unsigned char>(huge[1536 + i]);
  const std::string sum_text = absl::StrFormat("%06o", sum);
  huge.replace(1536 + 148, 6, sum_text);
  huge[1536 + 154] = '\0';
  const std::string path = dir_ + "/huge_size.tar";
  std::ofstream(path, std::ios::binary) << huge;
  TarIndex index = Index(path);
  EXPECT_EQ(ErrorReason(index.damage), reason::kTruncated) << index.damage;
  EXPECT_EQ(index.members.size(), 1u);
}

}  // namespace
}  // namespace flowloader
