// s3_xml.cc: the ListBucketResult / Error scanner and URI encoding (see s3_xml.h).
#include "stages/reader/internal/s3_xml.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowloader::s3_internal {
namespace {

// Decode replaces XML's entities (&amp; &lt; &gt; &quot; &apos; &#N; &#xN;) in `text`;
// an unknown or unterminated one is kept as written.
std::string Decode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out.push_back(text[i]);
      continue;
    }
    const size_t semi = text.find(';', i);
    if (semi == absl::string_view::npos || semi - i > 10) {
      out.push_back('&');
      continue;
    }
    const absl::string_view name = text.substr(i + 1, semi - i - 1);
    uint32_t code = 0;
    if (name == "amp") {
      out.push_back('&');
    } else if (name == "lt") {
      out.push_back('<');
    } else if (name == "gt") {
      out.push_back('>');
    } else if (name == "quot") {
      out.push_back('"');
    } else if (name == "apos") {
      out.push_back('\'');
    } else if (name.size() > 1 && name[0] == '#' &&
               ((name[1] == 'x' && absl::SimpleHexAtoi(name.substr(2), &code)) ||
                absl::SimpleAtoi(name.substr(1), &code)) &&
               code > 0 && code < 0x110000) {
      // UTF-8 of the code point.
      if (code < 0x80) {
        out.push_back(static_cast<char>(code));
      } else if (code < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (code >> 6)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
      } else if (code < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (code >> 12)));
        out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
      } else {
        out.push_back(static_cast<char>(0xF0 | (code >> 18)));
        out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
      }
    } else {
      out.append(text.data() + i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

// Element finds the next <tag>...</tag> at or after *pos; its inner text (raw) in
// *inner and *pos moved past it. False when there is none.
bool Element(absl::string_view xml, absl::string_view tag, size_t* pos, absl::string_view* inner) {
  const std::string open = absl::StrCat("<", tag, ">");
  const std::string close = absl::StrCat("</", tag, ">");
  const size_t start = xml.find(open, *pos);
  if (start == absl::string_view::npos) return false;
  const size_t body = start + open.size();
  const size_t end = xml.find(close, body);
  if (end == absl::string_view::npos) return false;
  *inner = xml.substr(body, end - body);
  *pos = end + close.size();
  return true;
}

}  // namespace

std::string XmlText(absl::string_view xml, absl::string_view tag) {
  size_t pos = 0;
  absl::string_view inner;
  return Element(xml, tag, &pos, &inner) ? Decode(inner) : std::string();
}

bool ParseListPage(absl::string_view xml, ListPage* page) {
  *page = ListPage();
  if (xml.find("<ListBucketResult") == absl::string_view::npos) return false;
  absl::string_view inner;
  for (size_t pos = 0; Element(xml, "Contents", &pos, &inner);) {
    ListPage::Object object;
    object.key = XmlText(inner, "Key");
    if (!absl::SimpleAtoi(XmlText(inner, "Size"), &object.size)) object.size = -1;
    page->objects.push_back(std::move(object));
  }
  for (size_t pos = 0; Element(xml, "CommonPrefixes", &pos, &inner);) {
    page->common_prefixes.push_back(XmlText(inner, "Prefix"));
  }
  page->truncated = absl::AsciiStrToLower(XmlText(xml, "IsTruncated")) == "true";
  page->next_token = XmlText(xml, "NextContinuationToken");
  return true;
}

std::string ErrorCode(absl::string_view xml) {
  return xml.find("<Error>") == absl::string_view::npos ? std::string() : XmlText(xml, "Code");
}

std::string ErrorMessage(absl::string_view xml) {
  return xml.find("<Error>") == absl::string_view::npos ? std::string() : XmlText(xml, "Message");
}

std::string UriEncode(absl::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

}  // namespace flowloader::s3_internal
