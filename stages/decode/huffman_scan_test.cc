// huffman_scan_test.cc: flowloader's Huffman decoder against libjpeg-turbo's
// own, through the decoder (pixels must be identical: Huffman decoding is
// lossless, so any difference is a bug), and its pieces on hand-made inputs.
#include "stages/decode/internal/huffman_scan.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stages/core/rng.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/fast_entropy.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

using internal::BuildHuffmanTable;
using internal::HuffmanTable;
using internal::ScanData;
using internal::ScanDecoder;
using internal::UnstuffScan;
using testing::PhotoLike;

std::unique_ptr<Decoder> MakeDecoder(bool fast_huffman) {
  DecoderOptions options;
  options.fast_huffman = fast_huffman;
  auto d = Decoder::Create(options);
  EXPECT_TRUE(d.ok());
  return *std::move(d);
}

absl::Status Decode(const Decoder& d, const std::string& bytes, const RegionRequest* r,
                    DecodedImage* out) {
  auto info = d.ReadInfo(bytes);
  if (!info.ok()) return info.status();
  return d.Decode(bytes, *info, r, out);
}

struct FileCase {
  const char* name;
  int width, height, channels;
  ChromaSubsampling subsampling;
  int quality;
  bool optimize;
  int restart_interval;
  JpegColor color;
};

const FileCase kFiles[] = {
    {"q90_420", 451, 379, 3, ChromaSubsampling::k420, 90, false, 0, JpegColor::kDefault},
    {"q100_444", 203, 117, 3, ChromaSubsampling::k444, 100, false, 0, JpegColor::kDefault},
    {"q50_422_optimized", 300, 200, 3, ChromaSubsampling::k422, 50, true, 0, JpegColor::kDefault},
    {"q95_440", 129, 257, 3, ChromaSubsampling::k440, 95, false, 0, JpegColor::kDefault},
    {"q85_411", 333, 77, 3, ChromaSubsampling::k411, 85, true, 0, JpegColor::kDefault},
    {"gray", 250, 190, 1, ChromaSubsampling::k420, 90, false, 0, JpegColor::kDefault},
    {"restart_every_mcu", 170, 130, 3, ChromaSubsampling::k420, 90, false, 1, JpegColor::kDefault},
    {"restart_every_7", 451, 379, 3, ChromaSubsampling::k420, 92, true, 7, JpegColor::kDefault},
    {"cmyk", 160, 120, 3, ChromaSubsampling::k444, 90, false, 0, JpegColor::kCmyk},
    {"ycck", 161, 121, 3, ChromaSubsampling::k420, 90, false, 3, JpegColor::kYcck},
    {"one_pixel", 1, 1, 3, ChromaSubsampling::k420, 90, false, 0, JpegColor::kDefault},
    {"thin", 1, 300, 3, ChromaSubsampling::k420, 90, false, 0, JpegColor::kDefault},
};

absl::StatusOr<std::string> EncodeCase(const FileCase& c, uint64_t seed) {
  JpegEncodeOptions options;
  options.quality = c.quality;
  options.subsampling = c.subsampling;
  options.optimize_coding = c.optimize;
  options.restart_interval = c.restart_interval;
  options.color = c.color;
  return EncodeJpeg(PhotoLike(c.width, c.height, c.channels, seed).view(), options);
}

// RandomRequest draws a region anywhere in the image (fractional edges) and a square
// target of 1..299 px, so requests cover skipped rows, cropped columns and DCT scaling.
RegionRequest RandomRequest(const FileCase& c, SampleRng& rng) {
  const double w = rng.Uniform(1, c.width), h = rng.Uniform(1, c.height);
  const RectF region{rng.Uniform(0, c.width - w), rng.Uniform(0, c.height - h), w, h};
  const int target = static_cast<int>(rng.UniformInt(1, 300));
  return RegionRequest{region, target, target};
}

class SameAsLibjpegTest : public ::testing::TestWithParam<FileCase> {};

TEST_P(SameAsLibjpegTest, FullAndRegionDecodesGiveIdenticalPixels) {
  ASSERT_TRUE(internal::FastEntropyAvailable()) << "built against libjpeg-turbo 2.x";
  const FileCase& c = GetParam();
  const absl::StatusOr<std::string> bytes = EncodeCase(c, 11);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto ours = MakeDecoder(true);
  auto theirs = MakeDecoder(false);
  DecodedImage a, b;
  ASSERT_TRUE(Decode(*ours, *bytes, nullptr, &a).ok());
  ASSERT_TRUE(Decode(*theirs, *bytes, nullptr, &b).ok());
  EXPECT_EQ(a.image.pixels, b.image.pixels) << "full decode";
  // Regions exercise skipped rows (discarded MCUs), cropped columns and DCT
  // scaling.
  SampleRng rng(3, 0, 0);
  for (int i = 0; i < 40; ++i) {
    const RegionRequest request = RandomRequest(c, rng);
    const absl::Status sa = Decode(*ours, *bytes, &request, &a);
    const absl::Status sb = Decode(*theirs, *bytes, &request, &b);
    ASSERT_EQ(sa.ok(), sb.ok()) << sa << " vs " << sb;
    if (!sa.ok()) continue;
    EXPECT_EQ(a.image.width, b.image.width);
    EXPECT_EQ(a.image.height, b.image.height);
    EXPECT_EQ(a.scale_x, b.scale_x);
    EXPECT_EQ(a.image.pixels, b.image.pixels) << "region " << i;
  }
}

// Seek indexes: a decoder that has seen a file before starts decoding near the
// region; pixels must stay those of libjpeg's decode, epoch after epoch, for
// every region.
TEST_P(SameAsLibjpegTest, SeekIndexKeepsPixelsIdenticalOverEpochs) {
  const FileCase& c = GetParam();
  const absl::StatusOr<std::string> bytes = EncodeCase(c, 12);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  // Both upsampling paths: libjpeg's merged upsampler reads its context
  // differently.
  for (const bool fancy : {true, false}) {
    DecoderOptions with_index, without;
    with_index.fancy_upsampling = without.fancy_upsampling = fancy;
    without.fast_huffman = false;
    auto indexed = *Decoder::Create(with_index);
    auto theirs = *Decoder::Create(without);
    SampleRng rng(4, 0, 0);
    for (int epoch = 0; epoch < 6; ++epoch) {
      for (int i = 0; i < 25; ++i) {
        const RegionRequest request = RandomRequest(c, rng);
        DecodedImage a, b;
        const absl::Status sa = Decode(*indexed, *bytes, &request, &a);
        const absl::Status sb = Decode(*theirs, *bytes, &request, &b);
        ASSERT_EQ(sa.ok(), sb.ok()) << sa << " vs " << sb;
        if (!sa.ok()) continue;
        ASSERT_EQ(a.image.pixels, b.image.pixels)
            << "epoch " << epoch << " region " << i << " fancy " << fancy;
      }
    }
    // Files with restart markers, and 1-component files sampled other than 1×1,
    // are not indexed (their MCU is not the iMCU, or restarts would need more
    // state).
    EXPECT_EQ(indexed->seek_indexed_files(), c.restart_interval == 0 ? 1u : 0u);
  }
}

TEST(SeekIndexTest, BudgetBoundsTheIndexedFiles) {
  DecoderOptions options;
  options.seek_index_bytes = 7000;  // About one 451×379 file's index.
  auto d = Decoder::Create(options);
  ASSERT_TRUE(d.ok());
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto bytes = EncodeJpeg(PhotoLike(451, 379, 3, seed).view(), {});
    ASSERT_TRUE(bytes.ok());
    const RegionRequest request{RectF{100, 100, 200, 200}, 224, 224};
    DecodedImage out;
    ASSERT_TRUE(Decode(**d, *bytes, &request, &out).ok());
  }
  EXPECT_EQ((*d)->seek_indexed_files(), 1u);
  EXPECT_LE((*d)->seek_index_bytes(), 7000u);
  options.seek_index_bytes = -1;
  EXPECT_FALSE(Decoder::Create(options).ok());
}

INSTANTIATE_TEST_SUITE_P(Kinds, SameAsLibjpegTest, ::testing::ValuesIn(kFiles),
                         [](const auto& info) { return std::string(info.param.name); });

// Corrupting entropy-coded bytes must give an error (never a crash, never
// different pixels): both decoders treat libjpeg's "corrupt data" warnings as
// errors, and where both succeed the coefficients and so the pixels must agree.
TEST(FastHuffmanTest, CorruptedScansFailOrAgreeWithLibjpeg) {
  JpegEncodeOptions options;
  options.restart_interval = 4;
  auto bytes = EncodeJpeg(PhotoLike(200, 150, 3, 5).view(), options);
  ASSERT_TRUE(bytes.ok());
  auto ours = MakeDecoder(true);
  auto theirs = MakeDecoder(false);
  SampleRng rng(9, 0, 0);
  int failed = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bad = *bytes;
    const size_t at = 700 + rng.UniformInt(0, static_cast<int64_t>(bad.size()) - 702);
    bad[at] = static_cast<char>(rng.UniformInt(0, 256));
    DecodedImage a, b;
    const absl::Status sa = Decode(*ours, bad, nullptr, &a);
    const absl::Status sb = Decode(*theirs, bad, nullptr, &b);
    if (!sa.ok()) {
      ++failed;
      EXPECT_FALSE(ErrorReason(sa).empty()) << sa;
    }
    if (sa.ok() && sb.ok()) {
      EXPECT_EQ(a.image.pixels, b.image.pixels) << "byte " << at;
    }
  }
  EXPECT_GT(failed, 0);
}

// "FF FF ... FF 00" in a scan is one 0xFF data byte (libjpeg's documented reading of fill
// bytes before a stuffed zero): the file decodes as the one with a plain "FF 00" does.
TEST(FastHuffmanTest, FillBytesBeforeAStuffedZeroAreOneDataByte) {
  auto bytes = EncodeJpeg(PhotoLike(120, 90, 3, 8).view(), {});
  ASSERT_TRUE(bytes.ok());
  const size_t sos = bytes->find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  const size_t stuffed = bytes->find(std::string("\xFF\x00", 2), sos + 2);
  ASSERT_NE(stuffed, std::string::npos) << "no stuffed byte in the scan";
  std::string padded = *bytes;
  padded.insert(stuffed, "\xFF\xFF\xFF");
  DecodedImage ours, reference;
  ASSERT_TRUE(Decode(*MakeDecoder(true), padded, nullptr, &ours).ok());
  ASSERT_TRUE(Decode(*MakeDecoder(false), *bytes, nullptr, &reference).ok());
  EXPECT_EQ(ours.image.pixels, reference.image.pixels);
}

TEST(FastHuffmanTest, WrongRestartNumberIsCorrupt) {
  JpegEncodeOptions options;
  options.restart_interval = 2;
  auto bytes = EncodeJpeg(PhotoLike(64, 64, 3, 2).view(), options);
  ASSERT_TRUE(bytes.ok());
  std::string bad = *bytes;
  const size_t rst1 = bad.find("\xFF\xD1");
  ASSERT_NE(rst1, std::string::npos);
  bad[rst1 + 1] = '\xD5';  // RST5 where RST1 belongs: intervals were lost.
  DecodedImage out;
  EXPECT_EQ(ErrorReason(Decode(*MakeDecoder(true), bad, nullptr, &out)), reason::kCorrupt);
}

TEST(UnstuffScanTest, RemovesStuffingAndFillBytesAndSplitsAtRestarts) {
  const uint8_t data[] = {0x12, 0xFF, 0x00, 0x34, 0xFF, 0xFF, 0x00, 0x56, 0xFF,
                          0xD0, 0x78, 0xFF, 0xFF, 0xD1, 0x9A, 0xFF, 0xD9, 0xBC};
  ScanData scan;
  UnstuffScan(data, sizeof(data), &scan);
  ASSERT_EQ(scan.size, 7u);
  const uint8_t want[] = {0x12, 0xFF, 0x34, 0xFF, 0x56, 0x78, 0x9A};
  EXPECT_EQ(std::memcmp(scan.bytes.data(), want, sizeof(want)), 0);
  EXPECT_EQ(scan.segment_ends, (std::vector<size_t>{5, 6, 7}));
  EXPECT_EQ(scan.restart_numbers, (std::vector<uint8_t>{0, 1}));
  EXPECT_TRUE(scan.ended_at_marker);  // EOI; the byte after it is not scan data.
  ASSERT_GE(scan.bytes.size(), scan.size + ScanData::kPadding);
  for (size_t i = scan.size; i < scan.bytes.size(); ++i) ASSERT_EQ(scan.bytes[i], 0);
}

TEST(UnstuffScanTest, DataWithoutAnEndMarkerIsTruncated) {
  const uint8_t no_marker[] = {0x12, 0x34};
  const uint8_t dangling_ff[] = {0x12, 0xFF};
  ScanData scan;
  UnstuffScan(no_marker, sizeof(no_marker), &scan);
  EXPECT_FALSE(scan.ended_at_marker);
  EXPECT_EQ(scan.size, 2u);
  UnstuffScan(dangling_ff, sizeof(dangling_ff), &scan);
  EXPECT_FALSE(scan.ended_at_marker);
  EXPECT_EQ(scan.size, 1u);
}

TEST(BuildHuffmanTableTest, RefusesTablesLibjpegRefuses) {
  HuffmanTable table;
  uint8_t values[256] = {};
  uint8_t bits[17] = {};
  bits[1] = 3;  // Three 1-bit codes do not exist.
  EXPECT_FALSE(BuildHuffmanTable(bits, values, true, &table));
  std::memset(bits, 0, sizeof(bits));
  bits[1] = 2;  // Two 1-bit codes use up the code space, all-ones included: reserved.
  EXPECT_FALSE(BuildHuffmanTable(bits, values, true, &table));
  std::memset(bits, 0, sizeof(bits));
  bits[2] = 2;
  values[0] = 3;
  values[1] = 16;  // DC categories stop at 15.
  EXPECT_FALSE(BuildHuffmanTable(bits, values, /*is_ac=*/false, &table));
  EXPECT_TRUE(BuildHuffmanTable(bits, values, /*is_ac=*/true, &table));
  std::memset(bits, 0, sizeof(bits));
  bits[16] = 255;
  bits[15] = 2;  // 257 codes.
  EXPECT_FALSE(BuildHuffmanTable(bits, values, true, &table));
}

// A hand-coded one-block scan: DC table {0: "0", 2: "10"}, AC table {0x00 EOB:
// "0", 0x11 (run 1, size 1): "10", 0x04 (size 4): "110"}; bits: DC "10"+"11"
// (+3), AC "10"+"0" (run 1, -1), "110"+"1010" (10), "0" (EOB), padded with
// ones.
TEST(ScanDecoderTest, DecodesAHandCodedBlock) {
  uint8_t dc_bits[17] = {0, 1, 1}, dc_values[256] = {0, 2};
  uint8_t ac_bits[17] = {0, 1, 1, 1}, ac_values[256] = {0x00, 0x11, 0x04};
  HuffmanTable dc, ac;
  ASSERT_TRUE(BuildHuffmanTable(dc_bits, dc_values, false, &dc));
  ASSERT_TRUE(BuildHuffmanTable(ac_bits, ac_values, true, &ac));
  // 1011 100 1101010 0 1111111 -> 1011 1001 1010 1001 1111 1111 = 0xB9 0xA9
  // 0xFF ...
  const uint8_t data[] = {0xB9, 0xA9, 0xFF, 0x00, 0xFF, 0xD9};
  ScanData scan;
  UnstuffScan(data, sizeof(data), &scan);
  ScanDecoder decoder;
  decoder.Start(&scan, 0, 1);
  int16_t block[64] = {};
  int16_t* blocks[1] = {block};
  const int component_of[1] = {0};
  const HuffmanTable* dcs[1] = {&dc};
  const HuffmanTable* acs[1] = {&ac};
  ASSERT_EQ(decoder.DecodeMcu(blocks, 1, component_of, dcs, acs), ScanDecoder::Result::kOk);
  int16_t want[64] = {};
  want[0] = 3;    // DC
  want[8] = -1;   // zigzag 2 = natural 8 (run 1 skips zigzag 1)
  want[16] = 10;  // zigzag 3 = natural 16
  EXPECT_EQ(std::memcmp(block, want, sizeof(want)), 0);
  // The next block's DC predicts from this one; the data has only ones left,
  // which are no DC code here ("11" is unused), so the stream is corrupt.
  EXPECT_EQ(decoder.DecodeMcu(blocks, 1, component_of, dcs, acs), ScanDecoder::Result::kCorrupt);
}

// BitString appends codes MSB first; Bytes() pads the last byte with ones and stuffs.
class BitString {
 public:
  void Append(uint32_t code, int length) {
    for (int i = length - 1; i >= 0; --i) bits_.push_back((code >> i) & 1);
  }
  std::vector<uint8_t> Bytes() const {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < bits_.size(); i += 8) {
      uint8_t byte = 0;
      for (size_t j = 0; j < 8; ++j) {
        byte = static_cast<uint8_t>(byte << 1 | (i + j < bits_.size() ? bits_[i + j] : 1));
      }
      out.push_back(byte);
      if (byte == 0xFF) out.push_back(0x00);
    }
    return out;
  }

 private:
  std::vector<int> bits_;
};

// Two 31-bit AC symbols (a 16-bit code and 15 magnitude bits, which libjpeg accepts)
// back to back, then short ones: the decoder must refill before a step that could run
// out of bits. (A bit reader that let the second long symbol drain it read zeros for
// the third: a valid file decoded as corrupt.)
TEST(ScanDecoderTest, LongSymbolsBackToBackKeepEnoughBits) {
  // DC {0: "0"}; AC {0x00 EOB: "0", 0x01 (size 1): "10", 0x0F (size 15): 16 bits}.
  uint8_t dc_bits[17] = {0, 1}, dc_values[256] = {0};
  uint8_t ac_bits[17] = {0, 1, 1}, ac_values[256] = {0x00, 0x01, 0x0F};
  ac_bits[16] = 1;
  HuffmanTable dc, ac;
  ASSERT_TRUE(BuildHuffmanTable(dc_bits, dc_values, false, &dc));
  ASSERT_TRUE(BuildHuffmanTable(ac_bits, ac_values, true, &ac));
  const uint32_t kLongCode = 0xC000;  // "11" then 14 zeros: the only 16-bit code.
  BitString bits;
  for (int b = 0; b < 3; ++b) {  // Three blocks, so the long pair lands at every phase.
    bits.Append(0, 1);                                 // DC difference 0.
    for (int shift = 0; shift < b; ++shift) bits.Append(0b101, 3);  // +1s before.
    bits.Append(kLongCode, 16);
    bits.Append(0x7FFF, 15);  // +32767
    bits.Append(kLongCode, 16);
    bits.Append(0x0000, 15);  // -32767
    bits.Append(0b101, 3);    // +1
    bits.Append(0b100, 3);    // -1
    bits.Append(0, 1);        // EOB
  }
  std::vector<uint8_t> data = bits.Bytes();
  data.push_back(0xFF);
  data.push_back(0xD9);
  ScanData scan;
  UnstuffScan(data.data(), data.size(), &scan);
  ScanDecoder decoder;
  decoder.Start(&scan, 0, 1);
  const HuffmanTable* dcs[1] = {&dc};
  const HuffmanTable* acs[1] = {&ac};
  const int component_of[1] = {0};
  for (int b = 0; b < 3; ++b) {
    int16_t block[64] = {};
    int16_t* blocks[1] = {block};
    ASSERT_EQ(decoder.DecodeMcu(blocks, 1, component_of, dcs, acs), ScanDecoder::Result::kOk)
        << "block " << b;
    // Zigzag 1..6 are natural 1, 8, 16, 9, 2, 3.
    const int natural[] = {1, 8, 16, 9, 2, 3};
    int16_t want[64] = {};
    int z = 0;
    for (int shift = 0; shift < b; ++shift) want[natural[z++]] = 1;
    want[natural[z++]] = 32767;
    want[natural[z++]] = -32767;
    want[natural[z++]] = 1;
    want[natural[z++]] = -1;
    EXPECT_EQ(std::memcmp(block, want, sizeof(want)), 0) << "block " << b;
  }
}

}  // namespace
}  // namespace flowloader::decode
