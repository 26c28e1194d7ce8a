// s3_xml.h: reading the two XML documents S3 answers with here, ListObjectsV2's
// ListBucketResult and an <Error>, and the URI encoding its requests need (internal to
// s3_env.cc).
//
// S3's documents are flat and machine-written: elements without attributes that matter,
// text with the five predefined entities (and numeric ones). A scanner for the few
// elements wanted is all they need; it never reads past the text it was given.
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_S3_XML_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_S3_XML_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace flowloader::s3_internal {

// ListPage is one ListObjectsV2 response.
struct ListPage {
  struct Object {
    std::string key;
    int64_t size = 0;
  };
  std::vector<Object> objects;              // <Contents>: <Key>, <Size>.
  std::vector<std::string> common_prefixes;  // <CommonPrefixes><Prefix>, with the delimiter.
  bool truncated = false;                    // <IsTruncated>true</IsTruncated>.
  std::string next_token;                    // <NextContinuationToken>.
};

// ParseListPage reads a ListBucketResult; false when `xml` is not one.
bool ParseListPage(absl::string_view xml, ListPage* page);

// ErrorCode is an <Error>'s <Code> ("NoSuchKey", "SlowDown"), empty when there is none;
// ErrorMessage its <Message>.
std::string ErrorCode(absl::string_view xml);
std::string ErrorMessage(absl::string_view xml);

// XmlText is the text of the first <tag>...</tag> in `xml` with entities decoded, empty
// when there is none.
std::string XmlText(absl::string_view xml, absl::string_view tag);

// UriEncode percent-encodes everything but A-Z a-z 0-9 - _ . ~ (and '/' when
// `keep_slash`), as Signature V4's canonical request does: keys in paths keep '/', query
// values encode it.
std::string UriEncode(absl::string_view text, bool keep_slash);

}  // namespace flowloader::s3_internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_S3_XML_H_
