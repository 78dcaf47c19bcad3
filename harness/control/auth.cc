#include "harness/control/auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/file_util.h"
#include "common/ids.h"
#include "common/input_file.h"
#include "common/log.h"

namespace fl::harness {

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kToken));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  size_t start = text.find_first_not_of(" \t\r\n");
  text = start == std::string::npos ? "" : text.substr(start);
  if (text.empty()) return InvalidArgumentError("token file " + path + " is empty");
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH))
    FL_LOG(kWarn, "auth") << "token file " << path << " is readable by everyone";
  return text;
}

StatusOr<std::string> CreateTokenFile(const std::string& path) {
  std::string token = RandomHex(24);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, "cannot create token file " + path);
  std::string line = token + "\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) return InternalError("short write to token file " + path);
  return token;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace fl::harness
