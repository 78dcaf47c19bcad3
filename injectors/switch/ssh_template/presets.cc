// Where a preset named in an inventory lives (ResolveSwitchPreset, ssh_template_driver.h): the
// configs/switches lookup.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "common/file_util.h"
#include "common/name_chars.h"
#include "injectors/switch/ssh_template/internal.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"

namespace fl::injectors {

StatusOr<std::string> ResolveSwitchPreset(std::string_view name_or_path,
                                          const std::string& base_dir) {
  std::string arg(name_or_path);
  if (arg.empty()) return InvalidArgumentError("empty switch preset name");
  auto readable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), R_OK) == 0;
  };
  auto absolute = [](const std::string& p) {
    if (!p.empty() && p.front() == '/') return p;
    char buf[4096];
    if (getcwd(buf, sizeof buf) == nullptr) return p;
    return std::string(buf) + "/" + p;
  };
  if (AllNameChars(arg, "_-")) {  // a bare name
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("FAULTLINE_CONFIG_DIR"); env != nullptr && env[0] != '\0')
      dirs.push_back(env);
    std::string exe = SelfExeDir();
    std::string up = exe;
    for (int i = 0; i < 4; ++i) {
      up += "/..";
      dirs.push_back(up + "/configs");
    }
    dirs.push_back(exe + "/../share/faultline/configs");
    dirs.push_back("configs");
    std::string looked;
    for (const auto& d : dirs) {
      std::string p = d + "/switches/" + arg + ".yaml";
      if (readable(p)) {
        char buf[4096];
        if (realpath(p.c_str(), buf) != nullptr) return std::string(buf);
        return absolute(p);
      }
      looked += (looked.empty() ? "" : ", ") + p;
    }
    return InvalidArgumentError("switch preset '" + arg + "' not found (looked in " + looked + ")");
  }
  std::string p = arg;
  if (p.front() != '/') p = (base_dir.empty() ? std::string(".") : base_dir) + "/" + p;
  p = absolute(p);
  if (!readable(p))
    return InvalidArgumentError("switch preset '" + arg + "': no readable file " + p);
  return p;
}

}  // namespace fl::injectors
