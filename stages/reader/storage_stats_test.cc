// storage_stats_test.cc: StorageStats' counts, buckets, code cap and quantiles.
#include "stages/reader/storage_stats.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

TEST(StorageStatsTest, CountsBySchemeAndCode) {
  StorageStats stats;
  stats.Record("s3", 2'000'000, 100, "", false);          // 2 ms, ok.
  stats.Record("s3", 30'000'000, 0, "SlowDown", false);   // 30 ms.
  stats.Record("s3", 3'000'000, 50, "", true);            // The retry.
  stats.Record("https", 500'000, 7, "", false);
  const std::vector<StorageSchemeStats> read = stats.Read();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].scheme, "https");
  const StorageSchemeStats& s3 = read[1];
  EXPECT_EQ(s3.scheme, "s3");
  EXPECT_EQ(s3.requests, 3);
  EXPECT_EQ(s3.bytes, 150);  // Failed attempts' bytes are not counted.
  EXPECT_EQ(s3.retries, 1);
  EXPECT_EQ(s3.errors.at("SlowDown"), 1);
  EXPECT_EQ(s3.TotalErrors(), 1);
  uint64_t in_buckets = 0;
  for (uint64_t n : s3.buckets) in_buckets += n;
  EXPECT_EQ(in_buckets, 3u);
  EXPECT_EQ(s3.buckets[1], 1u);  // 2 ms: (1 ms, 2.5 ms].
  EXPECT_EQ(s3.buckets[2], 1u);  // 3 ms: (2.5 ms, 5 ms].
  EXPECT_EQ(s3.buckets[5], 1u);  // 30 ms: (20 ms, 35 ms].
  EXPECT_NEAR(s3.latency_sum_seconds, 0.035, 1e-9);
  const StorageSchemeStats total = stats.Total();
  EXPECT_EQ(total.requests, 4);
  EXPECT_EQ(total.bytes, 157);
}

TEST(StorageStatsTest, ErrorCodesAreCapped) {
  StorageStats stats;
  for (int i = 0; i < StorageStats::kMaxErrorCodes + 10; ++i) {
    stats.Record("http", 1000, 0, absl::StrCat("http_", 400 + i), false);
  }
  const StorageSchemeStats s = stats.Read()[0];
  EXPECT_EQ(s.errors.size(), static_cast<size_t>(StorageStats::kMaxErrorCodes) + 1);
  EXPECT_EQ(s.errors.at("other"), 10);
  EXPECT_EQ(s.TotalErrors(), StorageStats::kMaxErrorCodes + 10);
}

TEST(StorageStatsTest, QuantileInterpolatesInItsBucket) {
  StorageStats stats;
  EXPECT_EQ(stats.Total().LatencyQuantile(0.5), 0);
  // 10 requests in (20 ms, 35 ms]: the median is halfway through that bucket.
  for (int i = 0; i < 10; ++i) stats.Record("s3", 25'000'000, 1, "", false);
  EXPECT_NEAR(stats.Total().LatencyQuantile(0.5), 0.0275, 1e-9);
  // One 100 s request sits in +Inf: its quantile reads the last bound.
  stats.Record("s3", 100'000'000'000, 1, "", false);
  EXPECT_NEAR(stats.Total().LatencyQuantile(0.99), 30.0, 1e-9);
}

TEST(StorageStatsTest, SchemeLabels) {
  EXPECT_EQ(StorageStats::SchemeLabel("s3://b/k"), "s3");
  EXPECT_EQ(StorageStats::SchemeLabel("HTTPS://h/x"), "https");
  EXPECT_EQ(StorageStats::SchemeLabel("http://h/x"), "http");
  EXPECT_EQ(StorageStats::SchemeLabel("/local/path"), "other");
  EXPECT_EQ(StorageStats::SchemeLabel("we ird://x"), "other");
}

TEST(StorageStatsTest, ConcurrentRecordsAllCount) {
  StorageStats stats;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stats] {
      for (int i = 0; i < 1000; ++i) stats.Record("s3", 1'000'000, 1, "", false);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(stats.Total().requests, 4000);
  EXPECT_EQ(stats.Total().bytes, 4000);
}

}  // namespace
}  // namespace flowloader
