#include "harness/control/certs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "common/enum_names.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/log.h"
#include "common/name_chars.h"

namespace fl::harness {
namespace {

// Owning handles for the OpenSSL objects used here.
struct Free {
  void operator()(BIO* p) const { BIO_free_all(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
template <typename T>
using Ptr = std::unique_ptr<T, Free>;

constexpr const char* kOrganization = "faultline lab";

// The OpenSSL error queue as one status (and emptied, so the next call starts clean).
Status SslError(std::string what) {
  unsigned long e;
  std::string detail;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    detail += (detail.empty() ? "" : "; ") + std::string(buf);
  }
  return InternalError(what + (detail.empty() ? "" : ": " + detail));
}

bool IsAddress(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// Host names only: the value goes into an OpenSSL extension string, where ',' and ':' mean
// something, and into file names.
bool IsHostName(const std::string& s) {
  return IsNameOf(s, 253, ".-_") && s[0] != '.' && s[0] != '-';
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Creates path exclusively with mode and writes text; a partial file is removed.
Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(errno, "cannot create " + path);
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = fsync(fd) == 0 && ok;
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return InternalError("short write to " + path);
  }
  return OkStatus();
}

// What write(bio) puts into a memory BIO, as text; `what` names it in the error.
template <typename Write>
StatusOr<std::string> WritePem(const char* what, Write write) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) return SslError(std::string("cannot encode ") + what);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  return WritePem("a private key", [&](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

StatusOr<std::string> CertPem(X509* cert) {
  return WritePem("a certificate", [&](BIO* bio) { return PEM_write_bio_X509(bio, cert); });
}

// The first PEM object in pem, read with OpenSSL's PEM_read_bio_<T>; `what` names it in the
// error.
template <typename T>
StatusOr<Ptr<T>> ReadPem(std::string_view pem, T* (*read)(BIO*, T**, pem_password_cb*, void*),
                         const char* what) {
  Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Ptr<T> object(bio ? read(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!object) {
    ERR_clear_error();
    return InvalidArgumentError(std::string("not a PEM ") + what);
  }
  return object;
}

StatusOr<Ptr<X509>> ParseCert(std::string_view pem) {
  return ReadPem<X509>(pem, PEM_read_bio_X509, "certificate");
}

StatusOr<Ptr<EVP_PKEY>> ParseKey(std::string_view pem) {
  return ReadPem<EVP_PKEY>(pem, PEM_read_bio_PrivateKey, "private key");
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ptr<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return SslError("cannot add extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
  return OkStatus();
}

// A certificate for key, signed by issuer_key (issuer null: self-signed).
StatusOr<Ptr<X509>> MakeCert(EVP_PKEY* key, const std::string& cn, const std::string& ou,
                             X509* issuer, EVP_PKEY* issuer_key, Nanos validity_ns) {
  Ptr<X509> cert(X509_new());
  Ptr<BIGNUM> serial(BN_new());
  if (!cert || !serial || X509_set_version(cert.get(), 2) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    return SslError("cannot start a certificate");
  // An hour's grace before now: lab hosts' clocks differ.
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity_ns / kNsPerSec)))
    return SslError("cannot set the validity");
  X509_NAME* name = X509_get_subject_name(cert.get());
  auto add = [&](const char* field, const std::string& v) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(v.c_str()), -1, -1,
                                      0) == 1;
  };
  if (!add("O", kOrganization) || !add("OU", ou) || !add("CN", cn))
    return SslError("cannot set the subject");
  X509* signer = issuer ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return SslError("cannot set the issuer");
  FL_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  FL_RETURN_IF_ERROR(
      AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  return cert;
}

Status Sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) <= 0) return SslError("cannot sign the certificate");
  return OkStatus();
}

StatusOr<Ptr<EVP_PKEY>> NewKey() {
  Ptr<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (!key) return SslError("cannot generate a P-256 key");
  return key;
}

// Writes the key (0600), then the certificate (0644), neither there before; a certificate that
// cannot be written takes the key with it, so a failed call leaves neither file.
Status WriteKeyAndCert(const CertFiles& files, EVP_PKEY* key, X509* cert) {
  FL_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key));
  FL_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(cert));
  FL_RETURN_IF_ERROR(WriteNewFile(files.key, key_pem, 0600));
  if (Status s = WriteNewFile(files.cert, cert_pem, 0644); !s.ok()) {
    unlink(files.key.c_str());
    return s;
  }
  return OkStatus();
}

std::string EntryText(X509_NAME* name, int nid) {
  int i = X509_NAME_get_index_by_NID(name, nid, -1);
  if (i < 0) return "";
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (tolower(static_cast<unsigned char>(a[i])) != tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string Hint(CertRole role, const std::string& dir, const std::string& name) {
  return role == CertRole::kCoordinator
             ? "faultline certs issue " + dir + " HOST --role coordinator"
             : "faultline certs issue " + dir + " " + name + " --role " +
                   std::string(CertRoleName(role));
}

}  // namespace

constexpr NamedValue<CertRole> kCertRoleNames[] = {{CertRole::kCoordinator, "coordinator"},
                                                   {CertRole::kAgent, "agent"},
                                                   {CertRole::kFabricAgent, "fabric-agent"}};

std::string_view CertRoleName(CertRole role) { return NameIn(kCertRoleNames, role, "?"); }

StatusOr<CertRole> ParseCertRole(std::string_view name) {
  if (auto r = ValueIn(kCertRoleNames, name)) return *r;
  return InvalidArgumentError("unknown certificate role '" + std::string(name) + "' (" +
                              NamesIn(kCertRoleNames) + ")");
}

CertFiles CaFiles(const std::string& dir) { return {dir + "/ca.crt", dir + "/ca.key"}; }

CertFiles LeafFiles(const std::string& dir, CertRole role, const std::string& name) {
  std::string base = role == CertRole::kCoordinator ? "coordinator" : name;
  return {dir + "/" + base + ".crt", dir + "/" + base + ".key"};
}

Status InitLabCa(const std::string& dir, Nanos validity_ns) {
  CertFiles ca = CaFiles(dir);
  if (Exists(ca.cert) || Exists(ca.key))
    return FailedPreconditionError(dir + " already holds a lab CA (" + ca.cert + ")");
  FL_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  FL_ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, NewKey());
  FL_ASSIGN_OR_RETURN(Ptr<X509> cert,
                      MakeCert(key.get(), "faultline lab CA", "ca", nullptr, nullptr, validity_ns));
  FL_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  FL_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  FL_RETURN_IF_ERROR(Sign(cert.get(), key.get()));
  return WriteKeyAndCert(ca, key.get(), cert.get());
}

StatusOr<CertFiles> IssueCertificate(const std::string& dir, const std::string& name,
                                     const IssueOptions& options) {
  if (!IsHostName(name) && !IsAddress(name))
    return InvalidArgumentError("'" + name + "' is not a host name ([A-Za-z0-9._-]) or address");
  if (options.role != CertRole::kCoordinator && (name == "coordinator" || name == "ca"))
    return InvalidArgumentError("'" + name + "' names the CA's or the coordinator's files");
  std::string san;
  std::vector<std::string> names = {name};
  names.insert(names.end(), options.extra_names.begin(), options.extra_names.end());
  for (const auto& n : names) {
    if (!IsHostName(n) && !IsAddress(n))
      return InvalidArgumentError("'" + n + "' is not a host name ([A-Za-z0-9._-]) or address");
    san += (san.empty() ? "" : ",") + std::string(IsAddress(n) ? "IP:" : "DNS:") + n;
  }
  CertFiles ca_files = CaFiles(dir);
  auto ca_cert_pem = ReadInputFile(ca_files.cert, InputKind::kCertificate);
  auto ca_key_pem = ReadInputFile(ca_files.key, InputKind::kCertificate);
  if (!ca_cert_pem.ok() || !ca_key_pem.ok())
    return FailedPreconditionError("no lab CA in " + dir +
                                   " (make one with: faultline certs init " + dir + ")");
  FL_ASSIGN_OR_RETURN(Ptr<X509> ca, ParseCert(*ca_cert_pem));
  FL_ASSIGN_OR_RETURN(Ptr<EVP_PKEY> ca_key, ParseKey(*ca_key_pem));
  CertFiles out = LeafFiles(dir, options.role, name);
  if (Exists(out.cert) || Exists(out.key))
    return FailedPreconditionError(out.cert + " already exists");

  FL_ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, NewKey());
  FL_ASSIGN_OR_RETURN(Ptr<X509> cert,
                      MakeCert(key.get(), name, std::string(CertRoleName(options.role)), ca.get(),
                               ca_key.get(), options.validity_ns));
  FL_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE"));
  FL_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca.get(), NID_key_usage, "critical,digitalSignature"));
  FL_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca.get(), NID_ext_key_usage,
                   options.role == CertRole::kCoordinator ? "serverAuth" : "clientAuth"));
  FL_RETURN_IF_ERROR(AddExtension(cert.get(), ca.get(), NID_subject_alt_name, san));
  FL_RETURN_IF_ERROR(Sign(cert.get(), ca_key.get()));
  FL_RETURN_IF_ERROR(WriteKeyAndCert(out, key.get(), cert.get()));
  return out;
}

StatusOr<CertIdentity> ReadCertificate(std::string_view pem) {
  FL_ASSIGN_OR_RETURN(Ptr<X509> cert, ParseCert(pem));
  CertIdentity id;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  id.common_name = EntryText(subject, NID_commonName);
  if (auto role = ParseCertRole(EntryText(subject, NID_organizationalUnitName)); role.ok())
    id.role = *role;
  struct tm end = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &end) == 1)
    id.not_after_wall_ns = static_cast<Nanos>(timegm(&end)) * kNsPerSec;
  Ptr<GENERAL_NAMES> sans(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans.get()); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans.get(), i);
    if (g->type == GEN_DNS) {
      const ASN1_STRING* s = g->d.dNSName;
      id.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                static_cast<size_t>(ASN1_STRING_length(s)));
    } else if (g->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = g->d.iPAddress;
      char buf[INET6_ADDRSTRLEN] = "";
      int len = ASN1_STRING_length(s);
      if (len == 4 || len == 16)
        inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s), buf, sizeof buf);
      if (buf[0]) id.ip_names.push_back(buf);
    }
  }
  return id;
}

bool CertNamesHost(const CertIdentity& id, std::string_view host) {
  if (host.empty()) return false;
  if (EqualsNoCase(id.common_name, host)) return true;
  for (const auto& n : id.dns_names)
    if (EqualsNoCase(n, host)) return true;
  for (const auto& n : id.ip_names)
    if (n == host) return true;
  return false;
}

StatusOr<TlsMaterial> LoadTlsMaterial(const std::string& dir, CertRole role,
                                      const std::string& name) {
  CertFiles ca_files = CaFiles(dir);
  CertFiles mine = LeafFiles(dir, role, name);
  TlsMaterial m;
  auto ca = ReadInputFile(ca_files.cert, InputKind::kCertificate);
  if (!ca.ok())
    return FailedPreconditionError("no lab CA certificate " + ca_files.cert +
                                   " (make one with: faultline certs init " + dir + ")");
  auto cert = ReadInputFile(mine.cert, InputKind::kCertificate);
  auto key = ReadInputFile(mine.key, InputKind::kCertificate);
  if (!cert.ok() || !key.ok())
    return FailedPreconditionError("no " + std::string(CertRoleName(role)) + " certificate " +
                                   mine.cert +
                                   " and key (make them with: " + Hint(role, dir, name) + ")");
  struct stat st;
  if (stat(mine.key.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
    FL_LOG(kWarn, "auth") << "private key " << mine.key << " is readable by others (chmod 600)";
  m.ca_pem = std::move(*ca);
  m.cert_pem = std::move(*cert);
  m.key_pem = std::move(*key);

  auto bad = [&](const std::string& file, const std::string& why) {
    return FailedPreconditionError(file + ": " + why);
  };
  auto ca_x = ParseCert(m.ca_pem);
  if (!ca_x.ok()) return bad(ca_files.cert, "not a PEM certificate");
  auto cert_x = ParseCert(m.cert_pem);
  if (!cert_x.ok()) return bad(mine.cert, "not a PEM certificate");
  auto key_x = ParseKey(m.key_pem);
  if (!key_x.ok()) return bad(mine.key, "not a PEM private key");
  if (X509_check_private_key(cert_x->get(), key_x->get()) != 1) {
    ERR_clear_error();
    return bad(mine.key, "does not belong to " + mine.cert);
  }
  Ptr<X509_STORE> store(X509_STORE_new());
  Ptr<X509_STORE_CTX> ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca_x->get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert_x->get(), nullptr) != 1)
    return SslError("cannot set up certificate verification");
  X509_STORE_CTX_set_purpose(ctx.get(), role == CertRole::kCoordinator ? X509_PURPOSE_SSL_SERVER
                                                                       : X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(ctx.get()) != 1) {
    std::string why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
    ERR_clear_error();
    return bad(mine.cert, "not accepted by the lab CA " + ca_files.cert + ": " + why);
  }
  FL_ASSIGN_OR_RETURN(CertIdentity id, ReadCertificate(m.cert_pem));
  if (id.role != role)
    return bad(mine.cert, "is not a " + std::string(CertRoleName(role)) + " certificate");
  if (role != CertRole::kCoordinator && !CertNamesHost(id, name))
    return bad(mine.cert, "does not name host " + name);
  return m;
}

std::string DefaultTlsDir(const std::string& token_file) {
  auto slash = token_file.rfind('/');
  std::string parent = slash == std::string::npos ? "." : token_file.substr(0, slash);
  return (parent.empty() ? "/" : parent + "/") + "tls";
}

}  // namespace fl::harness
