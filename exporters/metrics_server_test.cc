// metrics_server_test.cc: MetricsServer over real TCP: ephemeral ports, scrapes, bind
// failures as Status, shared servers and registration lifetimes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "exporters/metrics_exporter.h"
#include "exporters/testing/http_get.h"
#include "exporters/testing/synthetic_stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

using exporters_testing::HttpGet;
using exporters_testing::HttpResponse;
using ::testing::HasSubstr;
using ::testing::Not;

// ListeningSocket holds 127.0.0.1:<ephemeral> open, as another process would.
class ListeningSocket {
 public:
  ListeningSocket() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
      port_ = ntohs(sa.sin_port);
    }
  }
  ~ListeningSocket() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

std::string Scrape(int port) {
  absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", port, "/metrics");
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return "";
  EXPECT_EQ(r->status, 200);
  return r->body;
}

TEST(MetricsServerTest, ServesRegisteredPipelinesOnAnEphemeralPort) {
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  EXPECT_GT(port, 0);
  EXPECT_EQ((*server)->address(), absl::StrCat("127.0.0.1:", port));
  EXPECT_EQ((*server)->url(), absl::StrCat("http://127.0.0.1:", port, "/metrics"));

  auto train = exporters_testing::MakeTrainStats("train", absl::Now());
  exporters_testing::AdvanceTrain(*train, 1000, 1.0, absl::Now());
  ASSERT_TRUE((*server)->Register(train).ok());
  absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", port, "/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->headers, HasSubstr("text/plain"));
  EXPECT_THAT(r->body, HasSubstr("# TYPE flowloader_stage_items_out_total counter"));
  EXPECT_THAT(r->body, HasSubstr("flowloader_stage_items_out_total{pipeline=\"train\","
                                 "stage=\"reader\"} 1000"));
  EXPECT_THAT(r->body, HasSubstr("flowloader_stage_latency_seconds_bucket{pipeline=\"train\","
                                 "stage=\"decode\",le=\"+Inf\"} 1000"));
}

TEST(MetricsServerTest, SecondServerOnTheSamePortIsAnErrorNotACrash) {
  absl::StatusOr<std::unique_ptr<MetricsServer>> first = MetricsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string address = (*first)->address();
  absl::StatusOr<std::unique_ptr<MetricsServer>> second = MetricsServer::Start(address);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("cannot listen on ", address, ": address in use")));
  // The first one still serves.
  EXPECT_THAT(Scrape((*first)->port()), Not(HasSubstr("flowloader_")));
}

TEST(MetricsServerTest, PortHeldByAnotherSocketIsUnavailable) {
  ListeningSocket other;
  ASSERT_GT(other.port(), 0);
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start(absl::StrCat("127.0.0.1:", other.port()));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(server.status().message(), HasSubstr("address in use"));
}

TEST(MetricsServerTest, MalformedAddressesAreInvalidArgument) {
  for (const char* address : {"nonsense", "127.0.0.1:99999", "example.com:9464", "1.2.3:80",
                              "127.0.0.1:80s"}) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start(address);
    ASSERT_FALSE(server.ok()) << address;
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << address;
  }
}

TEST(MetricsServerTest, AddressNotOnThisMachineIsInvalidArgument) {
  // 192.0.2.0/24 is TEST-NET-1: never assigned to a local interface.
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start("192.0.2.1:0");
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("cannot listen on 192.0.2.1:0"));
}

TEST(MetricsServerTest, DestroyedPipelineLeavesTheScrape) {
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  auto train = exporters_testing::MakeTrainStats("train", absl::Now());
  ASSERT_TRUE((*server)->Register(train).ok());
  EXPECT_THAT(Scrape((*server)->port()), HasSubstr("pipeline=\"train\""));
  train.reset();
  EXPECT_THAT(Scrape((*server)->port()), Not(HasSubstr("pipeline=\"train\"")));
}

TEST(MetricsServerTest, SharedIsOneRefcountedServerPerAddress) {
  absl::StatusOr<std::shared_ptr<MetricsServer>> a = MetricsServer::Shared("127.0.0.1:0");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::shared_ptr<MetricsServer>> b = MetricsServer::Shared("127.0.0.1:0");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->get(), b->get());
  const int port = (*a)->port();

  auto p1 = exporters_testing::MakeTrainStats("one", absl::Now());
  auto p2 = exporters_testing::MakeStuckStats("two", absl::Now());
  ASSERT_TRUE((*a)->Register(p1).ok());
  ASSERT_TRUE((*b)->Register(p2).ok());
  const std::string body = Scrape(port);
  EXPECT_THAT(body, HasSubstr("flowloader_build_info{pipeline=\"one\""));
  EXPECT_THAT(body, HasSubstr("flowloader_build_info{pipeline=\"two\""));

  a->reset();  // b still holds the server.
  EXPECT_THAT(Scrape(port), HasSubstr("pipeline=\"two\""));
  b->reset();  // Last handle: the server stops and the port closes.
  absl::StatusOr<HttpResponse> gone =
      HttpGet("127.0.0.1", port, "/metrics", absl::Seconds(2));
  EXPECT_FALSE(gone.ok());
}

TEST(MetricsServerTest, SharedReportsBindFailuresAndRecovers) {
  auto other = std::make_unique<ListeningSocket>();
  const std::string address = absl::StrCat("127.0.0.1:", other->port());
  absl::StatusOr<std::shared_ptr<MetricsServer>> busy = MetricsServer::Shared(address);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kUnavailable);
  other.reset();  // The port is free now; a failed attempt must not poison the table.
  absl::StatusOr<std::shared_ptr<MetricsServer>> ok = MetricsServer::Shared(address);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)->address(), address);
}

TEST(MetricsServerTest, RegistrationUnregistersAndReleasesTheServer) {
  absl::StatusOr<std::shared_ptr<MetricsServer>> server = MetricsServer::Shared("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  std::shared_ptr<MetricsServer> keep = *server;
  auto stats = exporters_testing::MakeTrainStats("train", absl::Now());
  {
    absl::StatusOr<MetricsRegistration> reg = MetricsRegistration::Create(*server, stats);
    ASSERT_TRUE(reg.ok()) << reg.status();
    MetricsRegistration moved = std::move(*reg);
    EXPECT_EQ(moved.server(), keep.get());
    EXPECT_EQ(keep->collector().size(), 1);
    // Registering the same name twice fails while the first registration lives.
    EXPECT_EQ(MetricsRegistration::Create(keep, stats).status().code(),
              absl::StatusCode::kAlreadyExists);
  }
  EXPECT_EQ(keep->collector().size(), 0);
  EXPECT_EQ(MetricsRegistration::Create(nullptr, stats).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace flowloader
