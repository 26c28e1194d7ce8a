// s3_options.h: the settings of s3:// reads that a user can set (spec keys s3_endpoint,
// s3_region, s3_profile, s3_addressing, s3_anonymous; runtime/spec.cc), beside what the
// AWS CLI's environment variables and profile files say (stages/reader/s3_env.h).
#ifndef FLOWLOADER_STAGES_READER_S3_OPTIONS_H_
#define FLOWLOADER_STAGES_READER_S3_OPTIONS_H_

#include <functional>
#include <optional>
#include <string>

namespace flowloader {

struct S3Options {
  // The S3 endpoint URL ("http://127.0.0.1:7480", "https://ACCOUNT.r2.cloudflarestorage.com");
  // empty = AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS
  // (https://s3.REGION.amazonaws.com).
  std::string endpoint;
  // The signing region; empty = AWS_REGION, AWS_DEFAULT_REGION, the profile's region,
  // else us-east-1.
  std::string region;
  // The profile in ~/.aws/credentials and ~/.aws/config (or AWS_SHARED_CREDENTIALS_FILE /
  // AWS_CONFIG_FILE); empty = AWS_PROFILE, else `default`. Set, it wins over the
  // AWS_ACCESS_KEY_ID variables (as the CLI's --profile does).
  std::string profile;
  // "path" (ENDPOINT/BUCKET/KEY) or "virtual" (BUCKET.HOST/KEY); empty = the profile's
  // `s3 = addressing_style`, else virtual for AWS and path for any other endpoint
  // (MinIO, Ceph and most self-hosted stores answer path-style only).
  std::string addressing;
  // Unsigned requests, for public buckets: no credentials are looked up. Default false.
  bool anonymous = false;
  // Keys asked for per ListObjectsV2 page (max-keys); 1..1000 (S3's own cap). Default
  // 1000; tests use a small one so that paging is exercised.
  int list_page_keys = 1000;
  // Part size of a multipart upload (`flowloader pack --out=s3://`): an object written is
  // sent in parts of this many bytes (the memory an upload holds), one PUT when it is no
  // larger; 5 MiB..5 GiB (S3's limits). Default 8 MiB.
  int64_t upload_part_bytes = int64_t{8} << 20;
};

// EnvLookup looks an environment variable up (nullopt: not set); S3Env::CreateWith takes
// one so that tests can resolve settings against a made-up environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_S3_OPTIONS_H_
