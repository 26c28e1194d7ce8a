// schemes.cc: the table of remote schemes (see schemes.h).
#include "stages/reader/schemes.h"

#include <utility>

#include "absl/strings/match.h"
#include "stages/reader/s3_env.h"

namespace flowloader {
namespace {

absl::StatusOr<std::unique_ptr<HttpEnv>> CreateHttp(Env* base, const StorageOptions& options) {
  return HttpEnv::Create(base, options.http);
}

absl::StatusOr<std::unique_ptr<HttpEnv>> CreateS3(Env* base, const StorageOptions& options) {
  absl::StatusOr<std::unique_ptr<S3Env>> env = S3Env::Create(base, options.http, options.s3);
  if (!env.ok()) return env.status();
  return std::unique_ptr<HttpEnv>(std::move(*env));
}

constexpr Scheme kSchemes[] = {
    {"http", "http", /*can_list=*/false, CreateHttp},
    {"https", "http", /*can_list=*/false, CreateHttp},
    {"s3", "s3", /*can_list=*/true, CreateS3},
};

}  // namespace

absl::Span<const Scheme> Schemes() { return kSchemes; }

const Scheme* SchemeOf(absl::string_view path) {
  const size_t colon = path.find("://");
  if (colon == absl::string_view::npos) return nullptr;
  const absl::string_view name = path.substr(0, colon);
  for (const Scheme& scheme : kSchemes) {
    if (absl::EqualsIgnoreCase(name, scheme.name)) return &scheme;
  }
  return nullptr;
}

}  // namespace flowloader
