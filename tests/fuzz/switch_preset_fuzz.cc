// Fuzzes the switch preset loader of the ssh-template driver
// (injectors/switch/ssh_template/ssh_template_driver.h): OpenSshTemplateDriver with the input
// as the preset's text and a valid connection. It parses and checks; it never dials.
// Seeds: configs/switches/.
#include "injectors/switch/ssh_template/ssh_template_driver.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  injectors::SwitchConn conn;
  conn.name = "leaf1";
  conn.address = "198.19.3.201";
  conn.user = "admin";
  conn.known_hosts = "/nonexistent/known_hosts";
  conn.preset = "preset.yaml";
  conn.preset_text = std::string(fuzz::AsText(data, size));
  if (conn.preset_text.empty()) return 0;  // empty text means "read conn.preset"
  auto driver = injectors::OpenSshTemplateDriver(conn);
  if (!driver.ok()) fuzz::CheckLoaderError(driver.status(), "preset.yaml");
  return 0;
}
