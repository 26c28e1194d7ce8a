// Extra per-sample data and non-image samples: a list file whose `#columns:` header names
// columns after the label delivers them per row (Batch::columns, offsets + bytes), and a
// pipeline with no image stage at all (read, then a registered stage that turns the file's
// bytes into the output tensor) runs, so text or any other bytes can be samples.
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "graph/stage.h"
#include "runtime/pipeline.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::TempDir;
using testing::WriteFile;

constexpr int kTokens = 8;  // The text stage's output: the file's first 8 bytes, 0-padded.

// TextStage reads `bytes` (the read stage's) and writes `output`: no decode, no image.
class TextStage : public SampleStage {
 public:
  absl::Status Process(SampleContext& sample) const override {
    std::memset(sample.output(), 0, sample.output_bytes());
    std::memcpy(sample.output(), sample.bytes.data(),
                std::min(sample.bytes.size(), sample.output_bytes()));
    return absl::OkStatus();
  }
};

void RegisterTextStage() {
  static const bool registered = [] {
    StageSchema schema;
    schema.type = "test_text_tokens";
    schema.doc = "the file's first 8 bytes as a uint8 tensor (test)";
    schema.inputs = {{kBytesField, FieldKind::kBytes}};
    schema.outputs = {{kOutputField, FieldKind::kTensor}};
    absl::Status s = StageRegistry::Global().Register(
        schema, [](const StageArgs&, StageEnv& env) -> absl::StatusOr<std::unique_ptr<SampleStage>> {
          env.DeclareOutput(OutputSpec{{kTokens}, /*is_float=*/false, kTokens});
          return std::unique_ptr<SampleStage>(new TextStage());
        });
    EXPECT_TRUE(s.ok()) << s;
    return true;
  }();
  (void)registered;
}

// MakeTextList writes `n` text files and a list naming them with a caption and a url.
std::string MakeTextList(const std::string& dir, int n) {
  std::string list = "#columns: path label caption url\n";
  for (int i = 0; i < n; ++i) {
    WriteFile(absl::StrCat(dir, "/t", i, ".txt"), absl::StrCat("text", i));
    absl::StrAppend(&list, "t", i, ".txt\t", i % 3, "\ta caption, number ", i,
                    i == 4 ? " (caf\xc3\xa9)" : "", "\t", i == 2 ? "" : absl::StrCat("u", i), "\n");
  }
  WriteFile(dir + "/list.tsv", list);
  return dir + "/list.tsv";
}

PipelineOptions TextOptions(const std::string& list) {
  PipelineOptions o;
  o.data = list;
  o.batch_size = 4;
  o.num_workers = 2;
  o.seed = 3;
  o.device = DeviceChoice::kCpu;
  o.stages.resize(2);
  o.stages[0].type = "read";
  o.stages[1].type = "test_text_tokens";
  return o;
}

TEST(ExtraColumnsTest, ListColumnsArriveWithEachRowAndTextNeedsNoImageStage) {
  RegisterTextStage();
  const std::string list = MakeTextList(TempDir("columns_text"), 10);
  auto p = Pipeline::Create(TextOptions(list));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->output().sample_bytes, static_cast<size_t>(kTokens));
  int rows = 0;
  for (;;) {
    std::shared_ptr<const Batch> b;
    bool end = false;
    ASSERT_TRUE((*p)->Next(&b, &end).ok());
    if (end) break;
    ASSERT_EQ(b->columns.size(), 2u);
    EXPECT_EQ(b->columns[0].name, "caption");
    EXPECT_EQ(b->columns[1].name, "url");
    EXPECT_TRUE(b->skipped.empty()) << b->skipped[0].message;
    for (int64_t r = 0; r < b->size(); ++r) {
      const std::string& key = b->keys[r];
      const int i = std::stoi(key.substr(1));
      EXPECT_EQ(b->columns[0].value(r),
                absl::StrCat("a caption, number ", i, i == 4 ? " (caf\xc3\xa9)" : ""));
      EXPECT_EQ(b->columns[1].value(r), i == 2 ? "" : absl::StrCat("u", i));
      EXPECT_EQ(b->labels[r], i % 3);
      const char* row = static_cast<const char*>(b->host_data()) + r * kTokens;
      EXPECT_EQ(std::string(row, kTokens), absl::StrCat("text", i) + std::string(kTokens - 4 -
                                                                  absl::StrCat(i).size(), '\0'));
      ++rows;
    }
  }
  EXPECT_EQ(rows, 10);
}

TEST(ExtraColumnsTest, ColumnsStayWithTheirRowsWhenASampleIsSkipped) {
  RegisterTextStage();
  const std::string dir = TempDir("columns_skip");
  const std::string list = MakeTextList(dir, 6);
  ASSERT_EQ(std::remove((dir + "/t1.txt").c_str()), 0);  // Row t1 fails to read.
  PipelineOptions o = TextOptions(list);
  o.batch_size = 6;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::shared_ptr<const Batch> b;
  bool end = false;
  ASSERT_TRUE((*p)->Next(&b, &end).ok());
  ASSERT_EQ(b->size(), 5);
  ASSERT_EQ(b->columns[0].offsets.size(), 6u);
  for (int64_t r = 0; r < b->size(); ++r) {
    EXPECT_EQ(b->columns[1].value(r), b->keys[r] == "t2.txt" ? "" : "u" + b->keys[r].substr(1, 1));
  }
}

TEST(ExtraColumnsTest, SourcesWithDifferentColumnsShareTheUnion) {
  RegisterTextStage();
  const std::string a = MakeTextList(TempDir("columns_a"), 3);
  const std::string dir_b = TempDir("columns_b");
  WriteFile(dir_b + "/x.txt", "xx");
  WriteFile(dir_b + "/list.tsv", "#columns: path label lang\nx.txt\t0\tfr\n");
  PipelineOptions o = TextOptions("");
  o.sources = {{"a", a, 1.0}, {"b", dir_b + "/list.tsv", 1.0}};
  o.batch_size = 4;
  o.shuffle = false;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::shared_ptr<const Batch> b;
  bool end = false;
  ASSERT_TRUE((*p)->Next(&b, &end).ok());
  ASSERT_EQ(b->columns.size(), 3u);
  EXPECT_EQ(b->columns[2].name, "lang");
  for (int64_t r = 0; r < b->size(); ++r) {
    EXPECT_EQ(b->columns[2].value(r), b->sources[r] == 1 ? "fr" : "") << b->keys[r];
    EXPECT_EQ(b->columns[0].value(r).empty(), b->sources[r] == 1) << b->keys[r];
  }
}

}  // namespace
}  // namespace flowloader
