// s3_config.h: resolving where S3 requests go and how they are signed, once, in the AWS
// CLI's order (internal to s3_env.cc; tested on its own with made-up environments).
//
//   credentials: s3_anonymous → none; s3_profile (the option) → that profile's files;
//     AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); then the profile
//     AWS_PROFILE names, else `default`, in the credentials file (AWS_SHARED_CREDENTIALS_FILE,
//     else ~/.aws/credentials), then in the config file (AWS_CONFIG_FILE, else
//     ~/.aws/config, sections `[default]` and `[profile NAME]`).
//   endpoint: s3_endpoint, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
//     `s3 = endpoint_url` then `endpoint_url`, else https://s3.REGION.amazonaws.com.
//   region: s3_region, AWS_REGION, AWS_DEFAULT_REGION, the profile's region, us-east-1.
//   addressing: s3_addressing, the profile's `s3 = addressing_style` (auto = default),
//     else virtual for AWS's endpoint and path for any other.
// EC2 instance roles, web identity, SSO and credential_process are not read (yet).
//
// Thread-safety: ResolveS3Config is a pure function of its arguments.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_S3_CONFIG_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_S3_CONFIG_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "stages/reader/s3_options.h"

namespace flowloader::s3_internal {

struct S3Config {
  std::string endpoint;  // scheme://host[:port], no trailing '/'.
  std::string region;
  bool path_style = true;
  bool anonymous = false;
  std::string access_key_id;
  std::string secret_access_key;  // Never printed, logged or put in a message.
  std::string session_token;
  // Where each came from, for messages, the summary and --verbose: "environment
  // (AWS_ACCESS_KEY_ID)", "profile dev in /root/.aws/credentials", "s3_anonymous", ...
  std::string credential_source;
  std::string endpoint_source;
};

// GetEnv looks an environment variable up; nullopt when it is not set.
using GetEnv = EnvLookup;

// ProcessEnv reads the real environment (getenv).
GetEnv ProcessEnv();

// ResolveS3Config resolves `options` and the environment as documented above. Refused
// in one line naming the knob: a named profile that neither file has, a profile with a
// key id and no secret, no credentials anywhere (suggests s3_anonymous), a bad endpoint
// URL or addressing value, list_page_keys outside 1..1000.
absl::StatusOr<S3Config> ResolveS3Config(const S3Options& options, const GetEnv& env);

// IniSections parses an AWS profile file: section name → key → value, with a nested
// block (`s3 =` then indented `key = value` lines) stored as "s3.key". Comments (#, ;)
// and blank lines are skipped; keys are lower-cased.
std::map<std::string, std::map<std::string, std::string>> IniSections(const std::string& text);

}  // namespace flowloader::s3_internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_S3_CONFIG_H_
