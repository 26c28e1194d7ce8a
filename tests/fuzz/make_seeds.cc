// make_seeds: writes the fuzzer's seed corpus (seed_corpus.h) into a directory.
//
//   make_seeds OUT_DIR            one file per seed input (8-byte header + image)
//   make_seeds --raw OUT_DIR      the bare image files (to look at, or to feed the CLI)
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/fuzz/seed_corpus.h"

int main(int argc, char** argv) {
  const bool raw = argc == 3 && std::strcmp(argv[1], "--raw") == 0;
  if (argc != 2 && !raw) {
    std::fprintf(stderr, "usage: %s [--raw] OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[argc - 1];
  const auto files = raw ? flowloader::fuzz::SeedImages() : flowloader::fuzz::SeedCorpus();
  for (const auto& [name, bytes] : files) {
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "make_seeds: cannot write %s/%s\n", dir.c_str(), name.c_str());
      return 1;
    }
  }
  std::printf("%zu seed files in %s\n", files.size(), dir.c_str());
  return 0;
}
