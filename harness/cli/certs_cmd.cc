// `faultline certs init DIR`, `faultline certs issue DIR NAME`: the lab CA and the coordinator's
// and agents' certificates for mutual TLS on the control plane (harness/control/certs.h).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "harness/cli/command.h"
#include "harness/control/certs.h"

namespace fl::harness {

void AddCertsCommands(CLI::App& app, int* exit_code) {
  struct Args {
    std::string dir, name, role = "agent";
    std::vector<std::string> sans;
  };
  auto args = std::make_shared<Args>();
  auto* certs = AddCommandGroup(
      app, "certs",
      "the lab's TLS certificates: a lab CA, then one certificate for the coordinator and one\n"
      "per agent host (docs/control_plane.md)");
  auto fail = [exit_code](const Status& s) {
    std::fprintf(stderr, "faultline certs: %s\n", s.ToUserString().c_str());
    *exit_code =
        s.code() == Code::kInvalidArgument || s.code() == Code::kFailedPrecondition ? 2 : 3;
  };

  auto* init = certs->add_subcommand(
      "init", "make DIR (mode 0700) and a fresh lab CA in it: ca.crt, ca.key (0600)");
  init->add_option("dir", args->dir, "the lab's TLS directory")->required();
  init->callback([args, exit_code, fail] {
    if (Status s = InitLabCa(args->dir); !s.ok()) return fail(s);
    std::printf("lab CA: %s (copy it to every host), key %s (keep it here)\n",
                CaFiles(args->dir).cert.c_str(), CaFiles(args->dir).key.c_str());
    *exit_code = 0;
  });

  auto* issue = certs->add_subcommand("issue", HelpText(R"(
sign a certificate for host NAME with the lab CA in DIR: NAME.crt and NAME.key (0600),
or coordinator.crt/.key for --role coordinator. NAME goes in the subject CN and a
subjectAltName)"));
  issue->add_option("dir", args->dir, "the lab's TLS directory (faultline certs init)")->required();
  issue
      ->add_option("name", args->name,
                   "the host: an agent's topology/inventory host name (\"fabric\" for the\n"
                   "fabric agent), or the coordinator's host name or address")
      ->required();
  issue->add_option("--role", args->role, "coordinator | agent | fabric-agent")
      ->capture_default_str();
  issue->add_option("--san", args->sans,
                    "another name or address for the subjectAltName (repeatable): for the\n"
                    "coordinator, every address agents dial, e.g. --san 10.10.0.254");
  issue->callback([args, exit_code, fail] {
    auto role = ParseCertRole(args->role);
    if (!role.ok()) return fail(role.status());
    IssueOptions o;
    o.role = *role;
    o.extra_names = args->sans;
    auto files = IssueCertificate(args->dir, args->name, o);
    if (!files.ok()) return fail(files.status());
    std::printf("%s certificate for %s: %s, key %s\n", std::string(CertRoleName(*role)).c_str(),
                args->name.c_str(), files->cert.c_str(), files->key.c_str());
    *exit_code = 0;
  });
}

}  // namespace fl::harness
