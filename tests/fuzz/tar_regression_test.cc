// Replays tests/fuzz/tar_regressions/ (passed as arguments by Bazel) through the tar fuzz
// body, then a deterministic sweep: archives GNU tar writes here in every format, cut at
// many lengths and with their header bytes overwritten. A broken contract aborts.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/fuzz/tar_fuzz_body.h"

namespace flowloader::fuzz {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Replay(const std::string& input) {
  RunTarIndexOne(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

// GnuTarArchives writes a few webdataset-like samples and archives them in each format.
std::vector<std::string> GnuTarArchives() {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/tar_seeds");
  const std::string long_name(130, 'n');
  const std::string script = absl::StrCat(
      "rm -rf ", dir, " && mkdir -p ", dir, "/src/sub && cd ", dir, "/src && ",
      "printf jpeg > 1.jpg && printf 3 > 1.cls && printf '{\"label\": 4}' > 1.json && ",
      ": > empty.jpg && printf x > sub/", long_name, ".png && ",
      "for f in gnu pax ustar; do tar --format=$f -cf ../$f.tar 1.jpg 1.cls 1.json empty.jpg ",
      "$( [ $f = ustar ] || echo sub ); done");
  EXPECT_EQ(std::system(script.c_str()), 0);
  return {Slurp(dir + "/gnu.tar"), Slurp(dir + "/pax.tar"), Slurp(dir + "/ustar.tar")};
}

TEST(TarFuzzRegressionTest, EveryCheckedInReproducerRunsClean) {
  const std::vector<std::string> argv = ::testing::internal::GetArgvs();
  for (size_t i = 1; i < argv.size(); ++i) {
    SCOPED_TRACE(argv[i]);
    Replay(Slurp(argv[i]));
  }
}

TEST(TarFuzzRegressionTest, CutAndOverwrittenGnuTarArchivesRunClean) {
  for (const std::string& archive : GnuTarArchives()) {
    ASSERT_GT(archive.size(), 2048u);
    for (size_t length = 0; length <= archive.size(); length += 97) Replay(archive.substr(0, length));
    // Every byte of the first three headers (the fields that matter), a few values each.
    for (size_t at = 0; at < 3 * 512 && at < archive.size(); ++at) {
      for (const char value : {'\0', '\xff', '7', ' ', 'x'}) {
        std::string mutated = archive;
        mutated[at] = value;
        Replay(mutated);
      }
    }
  }
}

}  // namespace
}  // namespace flowloader::fuzz
