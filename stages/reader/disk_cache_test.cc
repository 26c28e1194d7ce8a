// disk_cache_test.cc: DiskCache on a real directory: entries round-trip whole and by
// range, damaged files are misses (and removed), the budget evicts the least recently
// used, two caches on one directory keep one accounting that matches the disk, and an
// unusable directory is refused.
#include "stages/reader/internal/disk_cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace flowloader::internal {
namespace {

std::string TempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(root != nullptr ? root : "/tmp", "/", name, "_",
                                       ::getpid());
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

// Entries lists the entry files under `dir`'s cache, with sizes.
std::vector<std::pair<std::string, int64_t>> Entries(const std::string& dir) {
  std::vector<std::pair<std::string, int64_t>> out;
  const std::string root = dir + "/flowloader-cache";
  DIR* top = ::opendir(root.c_str());
  if (top == nullptr) return out;
  while (const dirent* d = ::readdir(top)) {
    const std::string sub = d->d_name;
    if (sub.size() != 2) continue;
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

std::unique_ptr<DiskCache> Open(const std::string& dir, int64_t bytes) {
  auto cache = DiskCache::Create(DiskCacheOptions{dir, bytes, 4096});
  EXPECT_TRUE(cache.ok()) << cache.status();
  return cache.ok() ? std::move(*cache) : nullptr;
}

TEST(DiskCacheTest, EntriesRoundTripWholeAndByRange) {
  const std::string dir = TempDir("roundtrip");
  auto cache = Open(dir, 1 << 20);
  ASSERT_NE(cache, nullptr);
  std::string out;
  EXPECT_FALSE(cache->Get("a", &out));
  cache->Put("a", "hello, cache");
  ASSERT_TRUE(cache->Get("a", &out));
  EXPECT_EQ(out, "hello, cache");
  out = "x";
  ASSERT_TRUE(cache->GetRange("a", 7, 100, &out));  // Appends, clipped at the end.
  EXPECT_EQ(out, "xcache");
  out.clear();
  ASSERT_TRUE(cache->GetRange("a", 0, 5, &out));  // Validated before: read by range.
  EXPECT_EQ(out, "hello");
  EXPECT_FALSE(cache->Get("b", &out));
  const DiskCacheStats s = cache->stats();
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(cache->used_bytes(), 12 + 32);
  EXPECT_EQ(DiskCache::UsedBytesIn(dir), 12 + 32);
  // A second cache on the directory (another process, a later run) finds it.
  auto later = Open(dir, 1 << 20);
  ASSERT_TRUE(later->Get("a", &out));
  EXPECT_EQ(out, "hello, cache");
}

TEST(DiskCacheTest, DamagedFilesAreMissesAndRemoved) {
  const std::string dir = TempDir("damaged");
  auto cache = Open(dir, 1 << 20);
  ASSERT_NE(cache, nullptr);
  cache->Put("cut", std::string(1000, 'c'));
  cache->Put("flipped", std::string(1000, 'f'));
  cache->Put("foreign", std::string(1000, 'g'));
  std::vector<std::pair<std::string, int64_t>> files = Entries(dir);
  ASSERT_EQ(files.size(), 3u);
  std::string out;
  // Damage each file in one way: find which is which by reading it back first.
  for (const auto& [path, size] : files) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes[0] == 'c') {
      ASSERT_EQ(::truncate(path.c_str(), size - 40), 0);
    } else if (bytes[0] == 'f') {
      bytes[500] = 'x';
      std::ofstream(path, std::ios::binary) << bytes;
    } else {
      // Another entry's file under this name: its trailer names another identity.
      std::ifstream other(files[0].first == path ? files[1].first : files[0].first,
                          std::ios::binary);
      std::string copy((std::istreambuf_iterator<char>(other)), std::istreambuf_iterator<char>());
      std::ofstream(path, std::ios::binary) << copy;
    }
  }
  auto fresh = Open(dir, 1 << 20);  // Nothing validated yet in this one.
  for (const char* name : {"cut", "flipped", "foreign"}) {
    EXPECT_FALSE(fresh->Get(name, &out)) << name;
  }
  EXPECT_EQ(fresh->stats().corrupt, 3);
  EXPECT_TRUE(Entries(dir).empty());
  EXPECT_EQ(fresh->used_bytes(), 0);
  fresh->Put("cut", "again");  // Fetched again and kept.
  ASSERT_TRUE(fresh->Get("cut", &out));
  EXPECT_EQ(out, "again");
}

TEST(DiskCacheTest, TheBudgetEvictsTheLeastRecentlyUsed) {
  const std::string dir = TempDir("evict");
  // Room for four 1000-byte entries (with their trailers).
  auto cache = Open(dir, 4 * 1032);
  ASSERT_NE(cache, nullptr);
  std::string out;
  for (int i = 0; i < 4; ++i) {
    cache->Put(absl::StrCat("e", i), std::string(1000, static_cast<char>('0' + i)));
    ::usleep(20000);  // Distinct mtimes.
  }
  ASSERT_TRUE(cache->Get("e0", &out));  // e0 used again: e1 is now the oldest.
  ::usleep(20000);
  cache->Put("e4", std::string(1000, '4'));  // Over: down to 90% of the budget.
  EXPECT_FALSE(cache->Get("e1", &out));
  EXPECT_FALSE(cache->Get("e2", &out));
  EXPECT_TRUE(cache->Get("e0", &out));
  EXPECT_TRUE(cache->Get("e4", &out));
  EXPECT_EQ(cache->stats().evicted, 2);
  int64_t held = 0;
  for (const auto& [path, size] : Entries(dir)) held += size;
  EXPECT_EQ(held, cache->used_bytes());
  EXPECT_LE(held, 4 * 1032);
  cache->Put("huge", std::string(5000, 'h'));  // Larger than the budget: not kept.
  EXPECT_FALSE(cache->Get("huge", &out));
}

TEST(DiskCacheTest, TwoCachesOnOneDirectoryKeepOneAccounting) {
  const std::string dir = TempDir("shared");
  auto a = Open(dir, 20000);
  auto b = Open(dir, 20000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto work = [](DiskCache* cache, int seed) {
    std::string out;
    for (int i = 0; i < 200; ++i) {
      const int k = (i * 7 + seed) % 50;  // Both write and read the same 50 entries.
      const std::string payload(500 + k, static_cast<char>('a' + k % 26));
      if (cache->Get(absl::StrCat("k", k), &out)) {
        EXPECT_EQ(out, payload);
      } else {
        cache->Put(absl::StrCat("k", k), payload);
      }
    }
  };
  std::thread other(work, b.get(), 3);
  work(a.get(), 0);
  other.join();
  int64_t held = 0;
  for (const auto& [path, size] : Entries(dir)) held += size;
  EXPECT_EQ(held, a->used_bytes());
  EXPECT_LE(held, 20000);
  EXPECT_GT(a->stats().evicted + b->stats().evicted, 0);
  EXPECT_EQ(a->stats().corrupt + b->stats().corrupt, 0);
}

TEST(DiskCacheTest, AnUnusableDirectoryIsRefusedInOneLine) {
  const std::string file = TempDir("refused") + "/a_file";
  std::ofstream(file) << "x";
  auto cache = DiskCache::Create(DiskCacheOptions{file, 1 << 20, 4096});
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.status().message().find("cache_dir " + file), std::string::npos);
  EXPECT_EQ(cache.status().message().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace flowloader::internal
