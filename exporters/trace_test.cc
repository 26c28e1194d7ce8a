#include "exporters/trace.h"

#include <atomic>
#include <memory>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

TEST(TraceTest, SpansBecomeCompleteEventsWithStageNamesAndThreadRows) {
  PipelineStats stats("train");
  stats.AddStage("read", 2);
  stats.AddStage("decode", 2);
  stats.trace = std::make_unique<TraceBuffer>(3);
  stats.trace->Record(1, 5'000'000, 2'500, 42);  // decode, 2.5 µs.
  stats.trace->Record(-1, 4'000'000, 10'000, 0);  // consumer wait.
  stats.trace->Record(0, 6'000'000, 1'000, 43);
  stats.trace->Record(0, 7'000'000, 1'000, 44);  // Over capacity: dropped.
  const std::string json = ChromeTraceJson(stats);
  EXPECT_NE(json.find("{\"name\": \"decode\", \"cat\": \"stage\", \"ph\": \"X\", \"pid\": 1, "
                      "\"tid\": 1, \"ts\": 1000.000, \"dur\": 2.500, \"args\": {\"item\": 42}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"name\": \"consumer wait\", \"cat\": \"consumer\", \"ph\": \"X\", "
                      "\"pid\": 1, \"tid\": 0, \"ts\": 0.000"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("\"item\": 44"), std::string::npos) << "span past the window";
  EXPECT_NE(json.find("\"args\": {\"name\": \"consumer (Next)\"}"), std::string::npos);
  EXPECT_NE(json.find("\"pipeline\": \"train\""), std::string::npos);
}

TEST(TraceTest, OpSpansAreNamedAfterTheOpAndCarryTheirStage) {
  PipelineStats stats("train");
  StageStats* transforms = stats.AddStage("transforms", 2);
  transforms->set_op_costs({{"color_jitter", std::make_shared<std::atomic<int64_t>>(0),
                             std::make_shared<std::atomic<int64_t>>(0)},
                            {"color_jitter#2", std::make_shared<std::atomic<int64_t>>(0),
                             std::make_shared<std::atomic<int64_t>>(0)}});
  stats.trace = std::make_unique<TraceBuffer>(4);
  stats.trace->Record(0, 1'000'000, 3'000, 7, /*op=*/1);  // Inside the stage's span.
  stats.trace->Record(0, 1'000'000 - 500, 5'000, 7);
  stats.trace->Record(0, 2'000'000, 1'000, 8, /*op=*/5);  // No such row: the stage's.
  const std::string json = ChromeTraceJson(stats);
  EXPECT_NE(json.find("{\"name\": \"color_jitter#2\", \"cat\": \"op\", \"ph\": \"X\", "
                      "\"pid\": 1, \"tid\": 1, \"ts\": 0.500, \"dur\": 3.000, "
                      "\"args\": {\"item\": 7, \"stage\": \"transforms\"}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\": \"transforms\", \"cat\": \"stage\", \"ph\": \"X\", "
                      "\"pid\": 1, \"tid\": 1, \"ts\": 0.000, \"dur\": 5.000"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\": \"transforms\", \"cat\": \"stage\", \"ph\": \"X\", "
                      "\"pid\": 1, \"tid\": 1, \"ts\": 1000.500"),
            std::string::npos)
      << json;
}

TEST(TraceTest, NoTraceGivesAValidEmptyTrace) {
  PipelineStats stats("p");
  EXPECT_EQ(ChromeTraceJson(stats),
            "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"pipeline\": \"p\"}, "
            "\"traceEvents\": [\n\n]}\n");
}

}  // namespace
}  // namespace flowloader
