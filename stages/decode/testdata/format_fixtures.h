// format_fixtures.h: the WebP/TIFF/GIF/BMP/PPM test files that make_format_fixtures.py
// writes with PIL, with PIL's decode of each good one, for the decoder's tests and the
// hostile-files suite.
//
// Thread-safety: free functions; MakeFormatFixtures writes only under its directory.
#ifndef FLOWLOADER_STAGES_DECODE_TESTDATA_FORMAT_FIXTURES_H_
#define FLOWLOADER_STAGES_DECODE_TESTDATA_FORMAT_FIXTURES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace flowloader::decode::testing {

// FormatFixture is one manifest line.
struct FormatFixture {
  std::string name;  // File name under the directory (its extension names the format).
  // "exact" (PIL's pixels), "hibyte16" (16-bit gray: the high byte), "spec" (the image
  // the file encodes, where PIL misreads it), or the reason a bad file is refused with.
  std::string expect;
  int width = 0;  // Good files only.
  int height = 0;

  bool good() const { return expect == "exact" || expect == "hibyte16" || expect == "spec"; }
  std::string path(const std::string& dir) const { return dir + "/" + name; }
  // The reference pixels' file (good files only): RGB bytes.
  std::string reference_path(const std::string& dir) const { return path(dir) + ".rgb"; }
};

// MakeFormatFixtures runs `script` (make_format_fixtures.py) with /usr/bin/python3 into
// `dir` and returns its manifest. Fails with the command's exit status.
absl::StatusOr<std::vector<FormatFixture>> MakeFormatFixtures(const std::string& script,
                                                              const std::string& dir);

// ReadBytes returns a file's contents (empty if it cannot be read).
std::string ReadBytes(const std::string& path);

}  // namespace flowloader::decode::testing

#endif  // FLOWLOADER_STAGES_DECODE_TESTDATA_FORMAT_FIXTURES_H_
