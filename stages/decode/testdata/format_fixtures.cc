// format_fixtures.cc: MakeFormatFixtures (see format_fixtures.h).
#include "stages/decode/testdata/format_fixtures.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace flowloader::decode::testing {

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::vector<FormatFixture>> MakeFormatFixtures(const std::string& script,
                                                              const std::string& dir) {
  const std::string command = absl::StrCat("/usr/bin/python3 '", script, "' '", dir, "'");
  if (const int rc = std::system(command.c_str()); rc != 0) {
    return absl::InternalError(absl::StrCat(command, " exited with status ", rc));
  }
  std::ifstream manifest(dir + "/manifest.tsv");
  std::vector<FormatFixture> fixtures;
  std::string line;
  while (std::getline(manifest, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    FormatFixture x;
    if (f.size() != 4 || !absl::SimpleAtoi(f[2], &x.width) || !absl::SimpleAtoi(f[3], &x.height)) {
      return absl::InternalError(absl::StrCat("bad manifest line: ", line));
    }
    x.name = f[0];
    x.expect = f[1];
    fixtures.push_back(x);
  }
  if (fixtures.empty()) return absl::InternalError(dir + "/manifest.tsv is empty");
  return fixtures;
}

}  // namespace flowloader::decode::testing
