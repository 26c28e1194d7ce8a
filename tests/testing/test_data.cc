#include "tests/testing/test_data.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/sample_dataset.h"
#include "stages/decode/encoder.h"

namespace flowloader::testing {

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/", name);
  std::string cmd = absl::StrCat("rm -rf '", dir, "'");
  const int removed = std::system(cmd.c_str());  // A leftover that stays fails mkdir's users.
  (void)removed;
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

std::string TempDirForTest(const std::string& prefix) {
  return TempDir(prefix + ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

std::string MakeImageFolder(const std::string& root, int classes, int per_class,
                            uint64_t seed) {
  SampleDatasetOptions o;
  o.root = root;
  o.classes = classes;
  o.images_per_class = per_class;
  o.min_short_side = 64;
  o.max_short_side = 96;
  o.seed = seed;
  absl::Status s = GenerateSampleDataset(o);
  if (!s.ok()) std::abort();
  return root;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ValidJpeg(int width, int height, uint64_t seed) {
  const Image img = SynthesizeImage(width, height, 0, 5.0, seed, 0);
  return *decode::EncodeJpeg(img.view());
}

}  // namespace flowloader::testing
