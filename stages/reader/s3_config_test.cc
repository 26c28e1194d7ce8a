// s3_config_test.cc: the S3 settings chain on made-up environments and profile files
// written by the test, the ListObjectsV2 / Error scanner and SigV4's URI encoding.
#include <map>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/reader/internal/s3_config.h"
#include "stages/reader/internal/s3_xml.h"
#include "stages/reader/s3_env.h"
#include "stages/reader/schemes.h"

namespace flowloader::s3_internal {
namespace {

class S3ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(std::system(("mkdir -p " + home_ + "/.aws").c_str()), 0);
    vars_["HOME"] = home_;
  }
  void Write(const std::string& name, const std::string& text) {
    FILE* f = std::fopen((home_ + "/.aws/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  absl::StatusOr<S3Config> Resolve(const S3Options& options = {}) {
    return ResolveS3Config(options, [this](const std::string& name) -> std::optional<std::string> {
      auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      return it->second;
    });
  }
  std::string home_;
  std::map<std::string, std::string> vars_;
};

TEST_F(S3ConfigTest, EnvironmentKeysComeFirstAndAwsIsTheDefaultEndpoint) {
  vars_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  vars_["AWS_SECRET_ACCESS_KEY"] = "secretenv";
  vars_["AWS_SESSION_TOKEN"] = "tok";
  Write("credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n");
  absl::StatusOr<S3Config> c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AKIDENV");
  EXPECT_EQ(c->session_token, "tok");
  EXPECT_EQ(c->credential_source, "environment (AWS_ACCESS_KEY_ID)");
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_FALSE(c->path_style);  // AWS: virtual-hosted.
}

TEST_F(S3ConfigTest, ProfileFilesGiveKeysRegionEndpointAndAddressing) {
  vars_["AWS_PROFILE"] = "ceph";
  Write("credentials", "[default]\naws_access_key_id = D\naws_secret_access_key = d\n"
                       "[ceph]\naws_access_key_id = AKIDCEPH\naws_secret_access_key = sc\n");
  Write("config", "[profile ceph]\nregion = eu-1\ns3 =\n  addressing_style = virtual\n"
                  "  endpoint_url = http://10.0.0.1:7480\n");
  absl::StatusOr<S3Config> c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AKIDCEPH");
  EXPECT_EQ(c->credential_source, "profile ceph in " + home_ + "/.aws/credentials");
  EXPECT_EQ(c->region, "eu-1");
  EXPECT_EQ(c->endpoint, "http://10.0.0.1:7480");
  EXPECT_FALSE(c->path_style);
}

TEST_F(S3ConfigTest, OptionsWinOverEnvironmentAndFiles) {
  vars_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  vars_["AWS_SECRET_ACCESS_KEY"] = "secretenv";
  vars_["AWS_REGION"] = "env-region";
  vars_["AWS_ENDPOINT_URL"] = "http://env:1";
  Write("config", "[profile minio]\naws_access_key_id = AKIDCFG\naws_secret_access_key = c\n");
  S3Options o;
  o.profile = "minio";  // Wins over AWS_ACCESS_KEY_ID, as the CLI's --profile does.
  o.region = "opt-region";
  o.endpoint = "http://127.0.0.1:9000/";
  o.addressing = "virtual";
  absl::StatusOr<S3Config> c = Resolve(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AKIDCFG");
  EXPECT_EQ(c->credential_source, "profile minio in " + home_ + "/.aws/config");
  EXPECT_EQ(c->region, "opt-region");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(c->endpoint_source, "s3_endpoint");
  EXPECT_FALSE(c->path_style);
}

TEST_F(S3ConfigTest, EndpointVariablesInOrderAndPathStyleOffAws) {
  vars_["AWS_ACCESS_KEY_ID"] = "A";
  vars_["AWS_SECRET_ACCESS_KEY"] = "S";
  vars_["AWS_DEFAULT_REGION"] = "r2";
  vars_["AWS_ENDPOINT_URL"] = "http://general:1";
  vars_["AWS_ENDPOINT_URL_S3"] = "http://s3only:2";
  absl::StatusOr<S3Config> c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint, "http://s3only:2");
  EXPECT_EQ(c->endpoint_source, "AWS_ENDPOINT_URL_S3");
  EXPECT_EQ(c->region, "r2");
  EXPECT_TRUE(c->path_style);
  vars_.erase("AWS_ENDPOINT_URL_S3");
  EXPECT_EQ(Resolve()->endpoint, "http://general:1");
}

TEST_F(S3ConfigTest, SharedFileVariablesNameTheFiles) {
  Write("elsewhere", "[default]\naws_access_key_id = AKIDELSE\naws_secret_access_key = e\n");
  vars_["AWS_SHARED_CREDENTIALS_FILE"] = home_ + "/.aws/elsewhere";
  absl::StatusOr<S3Config> c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AKIDELSE");
}

TEST_F(S3ConfigTest, RefusalsAreOneLineAndNameTheKnob) {
  absl::StatusOr<S3Config> none = Resolve();
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(absl::StrContains(none.status().message(), "s3_anonymous: true")) << none.status();
  S3Options anonymous;
  anonymous.anonymous = true;
  ASSERT_TRUE(Resolve(anonymous).ok());
  EXPECT_EQ(Resolve(anonymous)->credential_source, "none: unsigned requests (s3_anonymous)");

  S3Options missing;
  missing.profile = "nope";
  EXPECT_TRUE(absl::StrContains(Resolve(missing).status().message(),
                                "s3 profile 'nope' (from s3_profile) is in neither"));
  vars_["AWS_ACCESS_KEY_ID"] = "A";
  EXPECT_TRUE(absl::StrContains(Resolve().status().message(), "AWS_SECRET_ACCESS_KEY is not"));
  vars_["AWS_SECRET_ACCESS_KEY"] = "very-secret";
  S3Options bad_endpoint;
  bad_endpoint.endpoint = "127.0.0.1:9000";
  absl::Status s = Resolve(bad_endpoint).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "is not http(s)://HOST[:PORT]")) << s;
  S3Options bad_addressing;
  bad_addressing.addressing = "dns";
  EXPECT_TRUE(absl::StrContains(Resolve(bad_addressing).status().message(), "s3_addressing"));
  for (const absl::Status& refusal : {s, Resolve(bad_addressing).status()}) {
    EXPECT_FALSE(absl::StrContains(refusal.message(), "very-secret"));
    EXPECT_FALSE(absl::StrContains(refusal.message(), "\n"));
  }
}

TEST(IniSectionsTest, ReadsSectionsCommentsAndNestedBlocks) {
  const auto s = IniSections(
      "# comment\n[default]\nRegion = eu\n; more\n[profile x]\ns3 =\n  addressing_style = path\n"
      "\tendpoint_url=http://h:1\nregion=us\r\n");
  EXPECT_EQ(s.at("default").at("region"), "eu");
  EXPECT_EQ(s.at("profile x").at("s3.addressing_style"), "path");
  EXPECT_EQ(s.at("profile x").at("s3.endpoint_url"), "http://h:1");
  EXPECT_EQ(s.at("profile x").at("region"), "us");
}

TEST(S3XmlTest, ParsesAListingPageWithEntities) {
  ListPage page;
  ASSERT_TRUE(ParseListPage(
      "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name><Prefix>a/</Prefix>"
      "<IsTruncated>true</IsTruncated><Contents><Key>a/x &amp; y.jpg</Key><Size>12</Size>"
      "</Contents><Contents><Key>a/&#233;.png</Key><Size>3</Size></Contents>"
      "<CommonPrefixes><Prefix>a/cat/</Prefix></CommonPrefixes>"
      "<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>",
      &page));
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "a/x & y.jpg");
  EXPECT_EQ(page.objects[0].size, 12);
  EXPECT_EQ(page.objects[1].key, "a/\xC3\xA9.png");
  ASSERT_EQ(page.common_prefixes.size(), 1u);
  EXPECT_EQ(page.common_prefixes[0], "a/cat/");
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "tok+/=");
  EXPECT_FALSE(ParseListPage("<Error><Code>NoSuchBucket</Code></Error>", &page));
  EXPECT_EQ(ErrorCode("<Error><Code>SlowDown</Code><Message>m &lt;1&gt;</Message></Error>"),
            "SlowDown");
  EXPECT_EQ(ErrorMessage("<Error><Code>X</Code><Message>m &lt;1&gt;</Message></Error>"),
            "m <1>");
  EXPECT_EQ(ErrorCode("<html>502 Bad Gateway</html>"), "");
}

TEST(S3XmlTest, UriEncodesAsSignatureV4Wants) {
  EXPECT_EQ(UriEncode("a b/c+d~e_f.g-h", true), "a%20b/c%2Bd~e_f.g-h");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriEncode("\xC3\xA9", true), "%C3%A9");
}

TEST(SchemesTest, OneTableSaysWhichPathsAreRemote) {
  EXPECT_EQ(SchemeOf("/data/train"), nullptr);
  EXPECT_EQ(SchemeOf("relative/dir"), nullptr);
  ASSERT_NE(SchemeOf("S3://b/k"), nullptr);
  EXPECT_STREQ(SchemeOf("s3://b/k")->family, "s3");
  EXPECT_STREQ(SchemeOf("https://h/x.tar")->family, "http");
  EXPECT_TRUE(IsListablePath("s3://b/train"));
  EXPECT_FALSE(IsListablePath("http://h/shards"));
  EXPECT_TRUE(IsListablePath("/local"));
  EXPECT_FALSE(IsRemotePath("gs://b/k"));  // Not (yet) a scheme here: a local name.
}

}  // namespace
}  // namespace flowloader::s3_internal
