// OpenStore, the factory above the rendezvous contract (rendezvous.h): it alone knows the TCP
// store, so that rendezvous.cc, the contract's own code, does not include tcp_store.h (which
// includes rendezvous.h).
#include "ccl_under_test/api/rendezvous.h"
#include "ccl_under_test/api/tcp_store.h"

namespace fl::ccl {

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& spec, const std::string& token_file) {
  if (spec.empty())
    return InvalidArgumentError("store: empty spec (tcp://HOST:PORT or a directory)");
  auto scheme_end = spec.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : spec.substr(0, scheme_end);
  std::string rest = scheme_end == std::string::npos ? spec : spec.substr(scheme_end + 3);
  if (scheme == "tcp") {
    FL_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(rest));
    if (hp.port == 0) return InvalidArgumentError("store '" + spec + "': port 0");
    if (token_file.empty())
      return InvalidArgumentError("store '" + spec + "' needs a token file (--store-token-file)");
    FL_ASSIGN_OR_RETURN(std::string token, ReadStoreToken(token_file));
    return std::unique_ptr<Store>(std::make_unique<TcpStore>(rest, std::move(token)));
  }
  if (!scheme.empty() && scheme != "file")
    return InvalidArgumentError("store '" + spec + "': unknown scheme '" + scheme +
                                "://' (tcp:// or file:// or a directory)");
  if (rest.empty()) return InvalidArgumentError("store '" + spec + "': empty directory");
  if (!token_file.empty())
    return InvalidArgumentError("store '" + spec +
                                "' is a directory: a token file is only for tcp:// stores");
  return std::unique_ptr<Store>(std::make_unique<FileStore>(rest));
}

}  // namespace fl::ccl
