// A real lldpd in a lab namespace for tests (lldp_test, inventory_discover_test): its control
// socket is a file of its own (the namespaces share one file system, and lldpd's default
// socket would be shared), the system name it advertises is the node's, and it sends every
// second. Stopped by pid in the destructor. The socket's folder must be 0755: lldpd's own
// unprivileged side opens it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace fl::testing {

class Lldpd {
 public:
  // Starts lldpd in netns on the interfaces matching `interfaces` (lldpd's -I: globs, comma
  // separated), advertising `name`; its socket is DIR/NAME.lldpd and its log DIR/NAME.lldpd.log.
  static StatusOr<std::unique_ptr<Lldpd>> Start(const std::string& netns, const std::string& dir,
                                                const std::string& name,
                                                const std::string& interfaces);
  ~Lldpd();
  Lldpd(const Lldpd&) = delete;
  Lldpd& operator=(const Lldpd&) = delete;

  const std::string& socket() const { return ctl_; }
  // lldpcli -u SOCKET ARGS in the namespace; Unavailable with its stderr on a non-zero exit.
  StatusOr<std::string> Cli(const std::vector<std::string>& args) const;
  std::string LogText() const;

 private:
  Lldpd() = default;
  int pid_ = -1;
  std::string ctl_, netns_, log_;
};

}  // namespace fl::testing
