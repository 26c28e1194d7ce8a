// s3_config.cc: ResolveS3Config and the AWS profile-file parser (see s3_config.h).
#include "stages/reader/internal/s3_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace flowloader::s3_internal {
namespace {

using Sections = std::map<std::string, std::map<std::string, std::string>>;

// ProfileFile is one parsed profile file and its path (for messages).
struct ProfileFile {
  std::string path;
  bool exists = false;
  Sections sections;
};

ProfileFile ReadProfileFile(const std::string& path) {
  ProfileFile file{path, false, {}};
  std::ifstream in(path);
  if (!in) return file;
  std::stringstream text;
  text << in.rdbuf();
  file.exists = true;
  file.sections = IniSections(text.str());
  return file;
}

// Section finds profile `name`: `[name]` in the credentials file; `[profile name]` (or
// `[default]`) in the config file.
const std::map<std::string, std::string>* Section(const ProfileFile& file,
                                                  const std::string& name, bool config) {
  const std::string header = config && name != "default" ? "profile " + name : name;
  auto it = file.sections.find(header);
  return it == file.sections.end() ? nullptr : &it->second;
}

std::string Get(const std::map<std::string, std::string>* section, const std::string& key) {
  if (section == nullptr) return "";
  auto it = section->find(key);
  return it == section->end() ? "" : it->second;
}

std::string EnvOr(const GetEnv& env, const std::string& name, const std::string& fallback) {
  std::optional<std::string> v = env(name);
  return v.has_value() && !v->empty() ? *v : fallback;
}

// CheckEndpoint refuses an endpoint that is not http(s)://HOST[:PORT][/].
absl::StatusOr<std::string> CheckEndpoint(std::string endpoint, const std::string& source) {
  while (absl::EndsWith(endpoint, "/")) endpoint.pop_back();
  const bool scheme = absl::StartsWithIgnoreCase(endpoint, "http://") ||
                      absl::StartsWithIgnoreCase(endpoint, "https://");
  const size_t host = endpoint.find("://") + 3;
  if (!scheme || endpoint.size() <= host ||
      endpoint.find_first_of("/?#", host) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "s3 endpoint '", endpoint, "' (from ", source,
        ") is not http(s)://HOST[:PORT]; set s3_endpoint, e.g. http://127.0.0.1:9000"));
  }
  return endpoint;
}

}  // namespace

GetEnv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Sections IniSections(const std::string& text) {
  Sections sections;
  std::string section;
  std::string nested;  // The key of an open `s3 =` block, while its lines are indented.
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    raw = absl::StripSuffix(raw, "\r");
    const bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = std::string(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
      nested.clear();
      sections[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos || section.empty()) continue;
    const std::string key =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (indented && !nested.empty()) {
      sections[section][nested + "." + key] = value;
      continue;
    }
    nested = value.empty() ? key : "";
    if (!value.empty()) sections[section][key] = value;
  }
  return sections;
}

absl::StatusOr<S3Config> ResolveS3Config(const S3Options& options, const GetEnv& env) {
  if (options.list_page_keys < 1 || options.list_page_keys > 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "s3 list_page_keys must be in 1..1000, got ", options.list_page_keys));
  }
  if (!options.addressing.empty() && options.addressing != "path" &&
      options.addressing != "virtual") {
    return absl::InvalidArgumentError(absl::StrCat(
        "s3_addressing must be path or virtual, got '", options.addressing, "'"));
  }
  const std::string home = EnvOr(env, "HOME", "");
  const ProfileFile credentials =
      ReadProfileFile(EnvOr(env, "AWS_SHARED_CREDENTIALS_FILE", home + "/.aws/credentials"));
  const ProfileFile config = ReadProfileFile(EnvOr(env, "AWS_CONFIG_FILE", home + "/.aws/config"));
  // The profile: the option, then AWS_PROFILE, then default (which may be absent).
  const std::string profile_source =
      !options.profile.empty() ? "s3_profile" : env("AWS_PROFILE") ? "AWS_PROFILE" : "";
  const std::string profile = !options.profile.empty() ? options.profile
                                                       : EnvOr(env, "AWS_PROFILE", "default");
  const auto* cred_section = Section(credentials, profile, /*config=*/false);
  const auto* config_section = Section(config, profile, /*config=*/true);
  if (!profile_source.empty() && cred_section == nullptr && config_section == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "s3 profile '", profile, "' (from ", profile_source, ") is in neither ",
        credentials.path, credentials.exists ? "" : " (missing)", " nor ", config.path,
        config.exists ? "" : " (missing)", "; set s3_profile or AWS_PROFILE to one that is"));
  }

  S3Config out;
  out.anonymous = options.anonymous;
  if (options.anonymous) {
    out.credential_source = "none: unsigned requests (s3_anonymous)";
  } else {
    const std::optional<std::string> key_id = env("AWS_ACCESS_KEY_ID");
    if (options.profile.empty() && key_id.has_value() && !key_id->empty()) {
      out.access_key_id = *key_id;
      out.secret_access_key = EnvOr(env, "AWS_SECRET_ACCESS_KEY", "");
      out.session_token = EnvOr(env, "AWS_SESSION_TOKEN", "");
      out.credential_source = "environment (AWS_ACCESS_KEY_ID)";
      if (out.secret_access_key.empty()) {
        return absl::InvalidArgumentError(
            "s3: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both, or "
            "unset it to use a profile");
      }
    } else {
      for (const auto& [section, file] :
           {std::make_pair(cred_section, &credentials), std::make_pair(config_section, &config)}) {
        if (Get(section, "aws_access_key_id").empty()) continue;
        out.access_key_id = Get(section, "aws_access_key_id");
        out.secret_access_key = Get(section, "aws_secret_access_key");
        out.session_token = Get(section, "aws_session_token");
        out.credential_source = absl::StrCat("profile ", profile, " in ", file->path);
        if (out.secret_access_key.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "s3: ", out.credential_source, " has aws_access_key_id but no aws_secret_access_key"));
        }
        break;
      }
    }
    if (out.access_key_id.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "s3: no credentials: AWS_ACCESS_KEY_ID is not set and profile ", profile,
          " has no aws_access_key_id in ", credentials.path, " or ", config.path,
          "; set them, or s3_anonymous: true for a public bucket"));
    }
  }

  // Region.
  out.region = !options.region.empty() ? options.region
               : EnvOr(env, "AWS_REGION", EnvOr(env, "AWS_DEFAULT_REGION", ""));
  if (out.region.empty()) out.region = Get(config_section, "region");
  if (out.region.empty()) out.region = "us-east-1";

  // Endpoint.
  std::string endpoint;
  if (!options.endpoint.empty()) {
    endpoint = options.endpoint;
    out.endpoint_source = "s3_endpoint";
  } else if (std::string v = EnvOr(env, "AWS_ENDPOINT_URL_S3", ""); !v.empty()) {
    endpoint = v;
    out.endpoint_source = "AWS_ENDPOINT_URL_S3";
  } else if (std::string v = EnvOr(env, "AWS_ENDPOINT_URL", ""); !v.empty()) {
    endpoint = v;
    out.endpoint_source = "AWS_ENDPOINT_URL";
  } else if (std::string v = Get(config_section, "s3.endpoint_url"); !v.empty()) {
    endpoint = v;
    out.endpoint_source = absl::StrCat("profile ", profile, " s3 endpoint_url in ", config.path);
  } else if (std::string v = Get(config_section, "endpoint_url"); !v.empty()) {
    endpoint = v;
    out.endpoint_source = absl::StrCat("profile ", profile, " endpoint_url in ", config.path);
  }
  const bool aws = endpoint.empty();
  if (aws) {
    endpoint = absl::StrCat("https://s3.", out.region, ".amazonaws.com");
    out.endpoint_source = "AWS's endpoint for the region";
  }
  absl::StatusOr<std::string> checked = CheckEndpoint(endpoint, out.endpoint_source);
  if (!checked.ok()) return checked.status();
  out.endpoint = *checked;

  // Addressing.
  std::string style = options.addressing;
  if (style.empty()) style = Get(config_section, "s3.addressing_style");
  if (style.empty() || style == "auto") style = aws ? "virtual" : "path";
  if (style != "path" && style != "virtual") {
    return absl::InvalidArgumentError(absl::StrCat(
        "s3 addressing_style '", style, "' in ", config.path,
        " must be auto, path or virtual; or set s3_addressing"));
  }
  out.path_style = style == "path";
  return out;
}

}  // namespace flowloader::s3_internal
