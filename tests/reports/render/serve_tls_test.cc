// `faultline serve --tls-dir` (harness/alerts/http_server.cc, docs/serve.md "HTTPS"): the real
// server process with the lab's certificates made by `faultline certs`; a TLS client that trusts
// only the lab CA and checks the address reads the API; a CA of another lab is refused, plain
// HTTP gets no answer, TLS 1.1 is refused; headless Chromium draws the overview over HTTPS.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "tests/reports/render/browser.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {
namespace {

struct HttpsResult {
  bool handshake = false;  // TLS set up and the server's certificate verified
  std::string reply;       // the whole HTTP reply
};

// One GET over TLS to 127.0.0.1:port, trusting only ca_file and checking that the certificate
// names 127.0.0.1; max_version limits the protocol (0: any).
HttpsResult HttpsGet(int port, const std::string& path, const std::string& ca_file,
                     int max_version = 0) {
  HttpsResult out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  REQUIRE(ctx != nullptr);
  REQUIRE(SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) == 1);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (max_version) SSL_CTX_set_max_proto_version(ctx, max_version);
  if (max_version && max_version < TLS1_2_VERSION) SSL_CTX_set_security_level(ctx, 0);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SSL* ssl = SSL_new(ctx);
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1 &&
      SSL_get_verify_result(ssl) == X509_V_OK) {
    out.handshake = true;
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (SSL_write(ssl, req.data(), static_cast<int>(req.size())) > 0) {
      char buf[16384];
      for (int n; (n = SSL_read(ssl, buf, sizeof buf)) > 0;) out.reply.append(buf, n);
    }
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  if (fd >= 0) close(fd);
  return out;
}

// Chromium's pin for a certificate: base64 of the SHA-256 of its SubjectPublicKeyInfo.
std::string SpkiPin(const std::string& cert_file) {
  FILE* f = std::fopen(cert_file.c_str(), "r");
  REQUIRE(f != nullptr);
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  REQUIRE(cert != nullptr);
  unsigned char* der = nullptr;
  const int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
  REQUIRE(len > 0);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  REQUIRE(EVP_Digest(der, static_cast<size_t>(len), digest, &dlen, EVP_sha256(), nullptr) == 1);
  OPENSSL_free(der);
  X509_free(cert);
  unsigned char b64[4 * EVP_MAX_MD_SIZE];
  const int blen = EVP_EncodeBlock(b64, digest, static_cast<int>(dlen));
  return std::string(reinterpret_cast<char*>(b64), static_cast<size_t>(blen));
}

void Faultline(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {FL_FAULTLINE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  auto res = testing::RunProcess(argv, log, std::chrono::seconds(30));
  INFO(testing::ReadAll(log));
  REQUIRE(res.exit_code == 0);
}

TEST_CASE(
    "faultline serve --tls-dir: HTTPS with the lab's certificates - another lab's CA, plain "
    "HTTP and TLS 1.1 are refused - Chromium draws the overview over HTTPS",
    "[integration]") {
  testing::TempDir dir;
  const std::string db = dir.File("results.db");
  testing::SyntheticRunSpec spec;
  spec.run_id = "20260921-010000-tls";
  spec.scenario = "flap";
  spec.duration_s = 20;
  RunData run = testing::MakeSyntheticRun(spec);
  run.run.tags["cluster"] = "rack7";
  run.run.tags["suite"] = "nightly";
  REQUIRE(testing::WriteRun(db, run).ok());

  const std::string tls = dir.File("tls"), other = dir.File("other");
  Faultline({"certs", "init", tls}, dir.File("certs.log"));
  Faultline({"certs", "issue", tls, "localhost", "--role", "coordinator", "--san", "127.0.0.1"},
            dir.File("certs.log"));
  Faultline({"certs", "init", other}, dir.File("certs.log"));

  // A directory with a CA but no coordinator certificate: refused before listening, naming it.
  {
    auto res = testing::RunProcess(
        {FL_FAULTLINE_BIN, "serve", "--db", db, "--listen", "127.0.0.1:0", "--tls-dir", other},
        dir.File("bad.log"), std::chrono::seconds(30));
    const std::string text = testing::ReadAll(dir.File("bad.log"));
    INFO(text);
    CHECK(res.exit_code != 0);
    CHECK(text.find("coordinator.crt") != std::string::npos);
  }

  ServeProcess serve(db, dir.path(), {"--tls-dir", tls});
  CHECK(testing::ReadAll(serve.log).find("https://127.0.0.1:") != std::string::npos);

  auto ok = HttpsGet(serve.port, "/healthz", tls + "/ca.crt");
  REQUIRE(ok.handshake);
  CHECK(ok.reply.rfind("HTTP/1.1 200", 0) == 0);
  auto api = HttpsGet(serve.port, "/api/v1/runs/" + spec.run_id, tls + "/ca.crt");
  CHECK(api.reply.find("\"" + spec.run_id + "\"") != std::string::npos);

  CHECK_FALSE(HttpsGet(serve.port, "/healthz", other + "/ca.crt").handshake);
  CHECK_FALSE(HttpsGet(serve.port, "/healthz", tls + "/ca.crt", TLS1_1_VERSION).handshake);
  CHECK(HttpGet(serve.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").find("HTTP/1.1") ==
        std::string::npos);

  // A real browser over HTTPS: it trusts the coordinator's key by its pin (Chromium has no
  // flag for a CA file), draws the overview, and logs no console error.
  Browser browser(ChromiumOrFail());
  auto res = browser.Run(
      "https://127.0.0.1:" + std::to_string(serve.port) + "/",
      {"--dump-dom", "--ignore-certificate-errors-spki-list=" + SpkiPin(tls + "/coordinator.crt")},
      dir.File("overview.html"));
  REQUIRE(res.exit_code == 0);
  const std::string dom = testing::ReadAll(dir.File("overview.html"));
  INFO(dom.substr(0, 2000));
  CHECK(RenderStatus(dom)["data-cells"] == "1");
  CHECK(dom.find("href=\"/runs/" + spec.run_id + "\"") != std::string::npos);
  CHECK(ConsoleErrors(dom).empty());

  CHECK(serve.StopAndWait() == 0);
}

}  // namespace
}  // namespace fl::reports::render
