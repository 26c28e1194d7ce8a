// A shard's index file (tar_index_file.h, shard_index_load.h): written by TarWriter as
// `flowloader pack` writes it, read back as the same member table the header scan finds,
// and refused (named, counted, the shard scanned instead) when it is stale or damaged.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "stages/core/log.h"
#include "stages/reader/dataset.h"
#include "stages/reader/shard_index_load.h"
#include "stages/reader/tar_index_file.h"
#include "stages/reader/tar_writer.h"

namespace flowloader {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// LogCapture keeps the log lines written while it lives (the tests run one thread).
class LogCapture {
 public:
  LogCapture() {
    previous_ = SetLogSink([this](LogLevel, absl::string_view line) {
      absl::StrAppend(&text_, line, "\n");
    });
  }
  ~LogCapture() { SetLogSink(previous_); }
  const std::string& text() const { return text_; }

 private:
  LogSink previous_;
  std::string text_;
};

class ShardIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/index_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf ", dir_, " && mkdir -p ", dir_).c_str()), 0);
  }

  // WriteShard writes shard `name` of `n` samples from key `first` (a .jpg, a .cls and a
  // .json; every fifth sample's key over ustar's 100 bytes, a GNU long name) and, with
  // `index`, its index file as `flowloader pack` does. Returns the shard's path.
  std::string WriteShard(const std::string& name, int first, int n, bool index = true) {
    const std::string path = absl::StrCat(dir_, "/", name);
    auto tar = TarWriter::Create(path);
    EXPECT_TRUE(tar.ok()) << tar.status();
    for (int i = first; i < first + n; ++i) {
      const std::string key = i % 5 == 0 ? absl::StrFormat("%0120d", i) : absl::StrCat("k", i);
      EXPECT_TRUE((*tar)->Add(key + ".jpg", std::string(100 + i * 37, static_cast<char>(i))).ok());
      EXPECT_TRUE((*tar)->Add(key + ".cls", absl::StrCat(i % 7)).ok());
      EXPECT_TRUE((*tar)->Add(key + ".json", absl::StrCat("{\"label\": ", i % 3, "}")).ok());
    }
    EXPECT_TRUE((*tar)->Close().ok());
    if (index) Spit(TarIndexFileName(path), FormatTarIndexFile((*tar)->index()));
    return path;
  }

  absl::StatusOr<std::unique_ptr<Dataset>> Open(const std::string& path, bool use_index,
                                                const std::string& label_key = "") {
    DatasetOptions o;
    o.path = path;
    o.use_shard_index = use_index;
    o.label_key = label_key;
    o.columns = {"json"};
    return Dataset::Open(o);
  }

  std::string dir_;
};

// Every field a run reads from a dataset: equal means equal batches and checksums.
void ExpectSameDataset(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.size(), b.size());
  for (int64_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("sample ", i));
    const SampleSource& x = a.sample(i);
    const SampleSource& y = b.sample(i);
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(x.label, y.label);
    EXPECT_EQ(x.shard, y.shard);
    EXPECT_EQ(x.offset, y.offset);
    EXPECT_EQ(x.size, y.size);
    EXPECT_EQ(x.error, y.error);
    ASSERT_EQ(a.members(i).size(), b.members(i).size());
    for (size_t m = 0; m < a.members(i).size(); ++m) {
      EXPECT_EQ(a.extensions()[a.members(i)[m].extension],
                b.extensions()[b.members(i)[m].extension]);
      EXPECT_EQ(a.members(i)[m].offset, b.members(i)[m].offset);
      EXPECT_EQ(a.members(i)[m].size, b.members(i)[m].size);
    }
    for (size_t c = 0; c < a.column_names().size(); ++c) EXPECT_EQ(a.column(i, c), b.column(i, c));
  }
}

TEST(TarIndexFileTest, RoundTripsAnyNameAndPayload) {
  TarIndexFile index;
  index.bytes = 10240;
  index.end = 4096;
  index.tail = 2048;
  index.members = {{"a\tb\nc\\d \"e\".jpg", 512, 1000, false, ""},
                   {"k.cls", 2560, 3, true, std::string("1\0\n", 3)}};
  absl::StatusOr<TarIndexFile> back = ParseTarIndexFile(FormatTarIndexFile(index));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bytes, 10240);
  EXPECT_EQ(back->end, 4096);
  EXPECT_EQ(back->tail, 2048);
  ASSERT_EQ(back->members.size(), 2u);
  EXPECT_EQ(back->members[0].name, index.members[0].name);
  EXPECT_FALSE(back->members[0].has_payload);
  EXPECT_EQ(back->members[1].payload, index.members[1].payload);
  EXPECT_EQ(TarIndexFileName("s3://b/x.tar"), "s3://b/x.tar.idx");
  EXPECT_EQ(TarIndexFileName("http://h/x.tar?sig=1"), "http://h/x.tar.idx?sig=1");
}

TEST(TarIndexFileTest, RefusesWhatIsNotAWholeIndexNamingTheLine) {
  TarIndexFile index;
  index.bytes = 10240;
  index.end = 4096;
  index.tail = 2048;
  index.members = {{"a.jpg", 512, 1000, false, ""}, {"a.cls", 2560, 1, true, "4"}};
  const std::string good = FormatTarIndexFile(index);
  const std::string bad[] = {
      "",
      "hello\n",
      good.substr(0, good.size() - 5),                                  // No "done".
      absl::StrReplaceAll(good, {{"members 2", "members 3"}}),          // Count.
      absl::StrReplaceAll(good, {{"2560\t1", "256\t1"}}),               // Out of order.
      absl::StrReplaceAll(good, {{"a.cls\t4", "a.cls\t44"}}),           // Payload size.
      absl::StrReplaceAll(good, {{"bytes 10240", "bytes 4096"}}),       // No end blocks.
  };
  for (const std::string& text : bad) {
    absl::StatusOr<TarIndexFile> parsed = ParseTarIndexFile(text);
    EXPECT_FALSE(parsed.ok()) << text;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.status().message().find("line "), std::string::npos);
    }
  }
}

// The index gives the scan's dataset exactly (keys, labels from .cls or .json, long
// names, columns, offsets), for every shard; a shard without one is scanned.
TEST_F(ShardIndexTest, AnIndexedShardOpensAsTheScanOpensIt) {
  WriteShard("s-0.tar", 0, 12);
  WriteShard("s-1.tar", 12, 9);
  WriteShard("s-2.tar", 21, 4, /*index=*/false);
  for (const std::string label_key : {"", "label"}) {
    SCOPED_TRACE(absl::StrCat("label_key '", label_key, "'"));
    auto indexed = Open(dir_ + "/s-{0..2}.tar", true, label_key);
    auto scanned = Open(dir_ + "/s-{0..2}.tar", false, label_key);
    ASSERT_TRUE(indexed.ok()) << indexed.status();
    ASSERT_TRUE(scanned.ok()) << scanned.status();
    EXPECT_EQ((*indexed)->shard_index_counts().used, 2);
    EXPECT_EQ((*indexed)->shard_index_counts().missing, 1);
    EXPECT_EQ((*scanned)->shard_index_counts().used, 0);
    ASSERT_EQ((*indexed)->size(), 25);
    ExpectSameDataset(**indexed, **scanned);
  }
  // A directory of shards: the index files beside them are not data.
  LogCapture log;
  auto listed = Open(dir_, true);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ((*listed)->shards().size(), 3u);
  EXPECT_EQ(log.text().find("ignoring"), std::string::npos) << log.text();
}

// A shard rewritten after its index (grown, cut, replaced by one of the same size whose
// last member differs): the index is stale, named, and the shard's headers are scanned.
TEST_F(ShardIndexTest, AStaleIndexIsNamedAndTheShardScanned) {
  const std::string shard = WriteShard("s.tar", 0, 10);
  const std::string index = Slurp(TarIndexFileName(shard));
  const std::string original = Slurp(shard);
  const std::string renamed = absl::StrReplaceAll(original, {{"k9.json", "k9.JSON"}});
  ASSERT_NE(renamed, original);
  struct Case {
    const char* what;
    std::function<void()> change;
    const char* why;
  };
  const Case cases[] = {
      {"grown", [&] { WriteShard("s.tar", 0, 11, false); }, "it is longer"},
      {"cut", [&] { Spit(shard, original.substr(0, original.size() - 512)); }, "it is shorter"},
      {"replaced", [&] { Spit(shard, renamed); }, "last member is not k9.json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Spit(shard, original);
    c.change();
    Spit(TarIndexFileName(shard), index);
    LogCapture log;
    auto indexed = Open(shard, true);
    auto scanned = Open(shard, false);
    ASSERT_TRUE(indexed.ok()) << indexed.status();
    ASSERT_TRUE(scanned.ok()) << scanned.status();
    EXPECT_EQ((*indexed)->shard_index_counts().stale, 1);
    EXPECT_EQ((*indexed)->shard_index_counts().used, 0);
    EXPECT_NE(log.text().find(absl::StrCat(shard, ".idx is stale")), std::string::npos)
        << log.text();
    EXPECT_NE(log.text().find(c.why), std::string::npos) << log.text();
    ExpectSameDataset(**indexed, **scanned);
  }
}

// An index cut short, edited or not an index at all: damaged, named, the shard scanned.
TEST_F(ShardIndexTest, ADamagedIndexIsNamedAndTheShardScanned) {
  const std::string shard = WriteShard("s.tar", 0, 10);
  const std::string index = Slurp(TarIndexFileName(shard));
  for (const std::string& text :
       {index.substr(0, index.size() / 2), std::string("not an index\n"),
        absl::StrReplaceAll(index, {{"\t1\tk1.cls\t1", "\t1\tk1.cls\t12"}}), std::string()}) {
    Spit(TarIndexFileName(shard), text);
    LogCapture log;
    auto indexed = Open(shard, true);
    auto scanned = Open(shard, false);
    ASSERT_TRUE(indexed.ok()) << indexed.status();
    ASSERT_TRUE(scanned.ok()) << scanned.status();
    EXPECT_EQ((*indexed)->shard_index_counts().damaged, 1) << text;
    EXPECT_NE(log.text().find(absl::StrCat(shard, ".idx is damaged (line ")), std::string::npos)
        << log.text();
    ExpectSameDataset(**indexed, **scanned);
  }
}

// The index is read and checked with two small reads, not a walk over the headers.
TEST_F(ShardIndexTest, OpeningFromTheIndexReadsOnlyTheIndexAndTheTail) {
  const std::string shard = WriteShard("s.tar", 0, 40);
  TarIndexOptions o;
  o.want_payload = [](const std::string& name) { return name.size() > 4 && name.substr(name.size() - 4) == ".cls"; };
  struct CountingFile : RandomAccessFile {
    std::unique_ptr<RandomAccessFile> file;
    int reads = 0;
    int64_t bytes = 0;
    absl::Status Read(int64_t offset, int64_t length, std::string* out) override {
      ++reads;
      absl::Status s = file->Read(offset, length, out);
      bytes += static_cast<int64_t>(out->size());
      return s;
    }
  } counting;
  counting.file = std::move(*Env::Default()->NewRandomAccessFile(shard));
  const LoadedIndex loaded = LoadTarIndexFile(Env::Default(), &counting, shard, o);
  ASSERT_EQ(loaded.outcome, IndexOutcome::kUsed) << loaded.why;
  EXPECT_EQ(counting.reads, 1);
  EXPECT_LE(counting.bytes, 4 * 512);  // The last header, its data, the two end blocks.
  int payloads = 0;
  for (const TarMember& m : loaded.index.members) payloads += m.inline_payload.empty() ? 0 : 1;
  EXPECT_EQ(payloads, 40);  // Every .cls, from the index.
  const TarIndex scanned = IndexTar(
      [&](int64_t offset, int64_t length, std::string* out) {
        return counting.file->Read(offset, length, out);
      },
      shard, o);
  ASSERT_EQ(scanned.members.size(), loaded.index.members.size());
  EXPECT_EQ(scanned.indexed_bytes, loaded.index.indexed_bytes);
  for (size_t i = 0; i < scanned.members.size(); ++i) {
    EXPECT_EQ(scanned.members[i].name, loaded.index.members[i].name);
    EXPECT_EQ(scanned.members[i].offset, loaded.index.members[i].offset);
    EXPECT_EQ(scanned.members[i].inline_payload, loaded.index.members[i].inline_payload);
  }
}

}  // namespace
}  // namespace flowloader
