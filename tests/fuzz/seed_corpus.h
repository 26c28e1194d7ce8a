// seed_corpus.h: the fuzzer's seed inputs, made on the spot (no checked-in binaries).
//
// Real files of every kind the decoder handles: baseline / progressive / optimized JPEGs
// in 4:2:0, 4:2:2, 4:4:0, 4:1:1 and 4:4:4, grayscale, CMYK and YCCK, with restart
// markers; PNGs in gray (1..16 bit), gray+alpha, RGB, RGBA, palette (with tRNS) and
// Adam7; odd sizes (1×1, 4000×12, 12×4000, 17×9); and broken ones: truncated at several
// points, a corrupted entropy segment, empty, text, a JPEG and a PNG whose header
// declares 65000×65000 pixels (bombs), and one whose header declares a zero size.
// Each comes wrapped in fuzz_body.h's 8-byte header with a few option bits and seeds.
//
// Thread-safety: a pure function.
#ifndef FLOWLOADER_TESTS_FUZZ_SEED_CORPUS_H_
#define FLOWLOADER_TESTS_FUZZ_SEED_CORPUS_H_

#include <string>
#include <utility>
#include <vector>

namespace flowloader::fuzz {

// SeedImages returns (name, file bytes) pairs: the raw image files, without the header.
std::vector<std::pair<std::string, std::string>> SeedImages();

// SeedCorpus returns (file name, fuzz input) pairs: SeedImages wrapped in headers.
std::vector<std::pair<std::string, std::string>> SeedCorpus();

}  // namespace flowloader::fuzz

#endif  // FLOWLOADER_TESTS_FUZZ_SEED_CORPUS_H_
