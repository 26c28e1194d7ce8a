// test_data.h: real image datasets for tests, made on the spot in TEST_TMPDIR.
//
// Thread-safety: not thread-safe; call from the test's main thread.
#ifndef FLOWLOADER_TESTS_TESTING_TEST_DATA_H_
#define FLOWLOADER_TESTS_TESTING_TEST_DATA_H_

#include <cstdint>
#include <string>

namespace flowloader::testing {

// TempDir returns a fresh directory under TEST_TMPDIR named after `name`.
std::string TempDir(const std::string& name);

// TempDirForTest is TempDir(prefix + the running test's name).
std::string TempDirForTest(const std::string& prefix);

// MakeImageFolder writes `classes` × `per_class` small real JPEGs (64–96 px shorter
// side, fast to decode) under `root` and returns `root`.
std::string MakeImageFolder(const std::string& root, int classes, int per_class,
                            uint64_t seed = 1);

// WriteFile writes `bytes` to `path`.
void WriteFile(const std::string& path, const std::string& bytes);
// ReadFile returns the contents of `path` ("" if unreadable).
std::string ReadFile(const std::string& path);

// ValidJpeg returns a real JPEG of width × height.
std::string ValidJpeg(int width, int height, uint64_t seed = 3);

}  // namespace flowloader::testing

#endif  // FLOWLOADER_TESTS_TESTING_TEST_DATA_H_
