// The lab's certificates for mutual TLS on the control plane: a lab CA (made once per lab by
// `faultline certs init`), and certificates it signs for the coordinator, each agent and the
// fabric agent (`faultline certs issue`). OpenSSL's library API, no gRPC here.
//
// A certificate names its host in the subject CN and in a subjectAltName (DNS, or IP for an
// address); its role is the subject's OU ("coordinator", "agent", "fabric-agent") and its
// extended key usage (serverAuth for the coordinator, clientAuth for agents), so an agent's
// key cannot serve as the coordinator and the coordinator's cannot register as an agent.
//
// Layout of a TLS directory:
//   ca.crt, ca.key                      the lab CA (ca.key is needed only to issue)
//   coordinator.crt, coordinator.key    the coordinator (its host name is inside)
//   NAME.crt, NAME.key                  the agent (or fabric agent) of host NAME
// Keys are written mode 0600, certificates 0644; nothing existing is overwritten.
//
// Thread-safety: free functions, safe to call concurrently. Blocking: file I/O only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::harness {

enum class CertRole { kCoordinator, kAgent, kFabricAgent };

std::string_view CertRoleName(CertRole role);
// "coordinator", "agent", "fabric-agent"; anything else is InvalidArgument.
StatusOr<CertRole> ParseCertRole(std::string_view name);

struct CertFiles {
  std::string cert;
  std::string key;
};

CertFiles CaFiles(const std::string& dir);
// The coordinator's files are coordinator.{crt,key} whatever its host name; an agent's are
// NAME.{crt,key}.
CertFiles LeafFiles(const std::string& dir, CertRole role, const std::string& name);

// Makes dir (0700) and a fresh lab CA in it. FailedPrecondition when dir already holds one.
Status InitLabCa(const std::string& dir, Nanos validity_ns = 3650LL * 24 * 3600 * kNsPerSec);

struct IssueOptions {
  CertRole role = CertRole::kAgent;
  // More names for the subjectAltName (the coordinator's addresses as agents dial them, e.g.
  // 10.10.0.254 or coord.lab): IPv4/IPv6 addresses become IP entries, others DNS.
  std::vector<std::string> extra_names;
  Nanos validity_ns = 825LL * 24 * 3600 * kNsPerSec;
};

// Signs a certificate for host `name` with the lab CA in dir. InvalidArgument for a name that
// is not a host name ([A-Za-z0-9._-], or an address); FailedPrecondition without a CA or when
// the files already exist. Returns the files written.
StatusOr<CertFiles> IssueCertificate(const std::string& dir, const std::string& name,
                                     const IssueOptions& options);

// What one side of a TLS session presents and trusts, as PEM text.
struct TlsMaterial {
  std::string ca_pem;    // the lab CA: the only root trusted
  std::string cert_pem;  // this process's certificate
  std::string key_pem;   // and its private key
};

// Reads ca.crt and the role's files for `name` from dir and checks them before any network
// use: the key matches the certificate, the certificate is signed by the CA, is current and
// has the role. FailedPrecondition (naming the file and the `faultline certs` command that
// makes it) otherwise.
StatusOr<TlsMaterial> LoadTlsMaterial(const std::string& dir, CertRole role,
                                      const std::string& name);

struct CertIdentity {
  std::string common_name;
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_names;
  std::optional<CertRole> role;  // from the subject's OU
  Nanos not_after_wall_ns = 0;   // the end of its validity (wall clock, ns since the epoch)
};

// Parses one PEM certificate. InvalidArgument when it is not one.
StatusOr<CertIdentity> ReadCertificate(std::string_view pem);

// True when the identity names host: its CN or one of its subjectAltNames (exact, ASCII
// case-insensitive as DNS names are).
bool CertNamesHost(const CertIdentity& id, std::string_view host);

// Where an inventory's TLS files are by default: "tls" beside its token file.
std::string DefaultTlsDir(const std::string& token_file);

}  // namespace fl::harness
