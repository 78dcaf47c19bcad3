#include "common/file_util.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>

namespace fl {

StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open " + path);
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return ErrnoStatus(err, "cannot read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

Status WriteAll(int fd, std::string_view data, std::string_view what) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, what);
    }
    off += static_cast<size_t>(n);
  }
  return OkStatus();
}

namespace {

// Writes tmp, fsyncs it when `durable`, renames it over path; tmp goes when a step fails.
Status WriteAndRename(const std::string& path, const std::string& tmp, std::string_view content,
                      bool durable) {
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot create " + tmp);
  if (Status s = WriteAll(fd, content, "cannot write " + tmp); !s.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  if (durable && fsync(fd) != 0) {
    int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return ErrnoStatus(err, "cannot fsync " + tmp);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(err, "cannot rename " + tmp + " to " + path);
  }
  return OkStatus();
}

}  // namespace

Status ReplaceFile(const std::string& path, const std::string& tmp, std::string_view content) {
  return WriteAndRename(path, tmp, content, false);
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  FL_RETURN_IF_ERROR(WriteAndRename(path, path + ".tmp", content, true));
  std::string dir = ".";
  if (auto slash = path.rfind('/'); slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return OkStatus();
}

Status MakeDirs(const std::string& path, unsigned mode) {
  if (path.empty()) return InvalidArgumentError("empty directory path");
  // A parent that another process removes between our mkdirs (two labs share
  // <cgroup2>/faultline, and the last one down removes it) gives ENOENT: start again from the
  // top. A busy machine can preempt us inside that window again and again (CI lost 9 tries in
  // a row), so count no tries: give up once the parent has kept vanishing for a whole second,
  // yielding the CPU before each try so that it starts on a fresh time slice.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    int err = 0;
    std::string failed;
    for (size_t pos = 1; pos <= path.size() && err == 0; ++pos) {
      if (pos == path.size() || path[pos] == '/') {
        std::string prefix = path.substr(0, pos);
        if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
          err = errno;
          failed = prefix;
        }
      }
    }
    if (err == 0) break;
    // ENOENT below a dangling symlink is no race: fail now. Anything else (the parent gone,
    // or gone and made again by another lab since) is one: try again.
    const size_t slash = failed.rfind('/');
    const std::string parent = slash == std::string::npos ? "."
                               : slash == 0               ? "/"
                                                          : failed.substr(0, slash);
    struct stat parent_st, target_st;
    const bool dangling = lstat(parent.c_str(), &parent_st) == 0 && S_ISLNK(parent_st.st_mode) &&
                          stat(parent.c_str(), &target_st) != 0;
    const bool vanished = err == ENOENT && !dangling;
    if (!vanished || std::chrono::steady_clock::now() > give_up)
      return ErrnoStatus(err, "cannot create directory " + failed);
    sched_yield();
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return FailedPreconditionError(path + " exists and is not a directory");
  return OkStatus();
}

std::vector<Mount> ListMounts() {
  std::vector<Mount> mounts;
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    // "id parent major:minor root mountpoint opts [optional fields] - fstype source superopts"
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    Mount m;
    std::istringstream(line.substr(dash + 3)) >> m.fstype;
    std::string id, parent, devno, root;
    std::istringstream(line.substr(0, dash)) >> id >> parent >> devno >> root >> m.mountpoint;
    mounts.push_back(std::move(m));
  }
  return mounts;
}

std::string SelfExeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::pair<int, int> LineColOf(std::string_view text, size_t byte_offset) {
  int line = 1, col = 1;
  for (size_t i = 0; i < text.size() && i < byte_offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::string PathBeside(const std::string& rel, const std::string& file) {
  if (rel.empty() || rel[0] == '/') return rel;
  auto slash = file.rfind('/');
  std::string dir = slash == std::string::npos ? "." : file.substr(0, slash);
  if (access((dir + "/" + rel).c_str(), F_OK) == 0) return dir + "/" + rel;
  if (access(rel.c_str(), F_OK) == 0) return rel;
  // Each folder above the file's: "configs/labs/x.yaml" named by
  // /usr/share/faultline/configs/scenarios/s.yaml is found from any working directory.
  for (int up = 0; up < 16 && !dir.empty() && dir != "/" && dir != "."; ++up) {
    slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    dir = dir.substr(0, slash);
    const std::string above = dir + "/" + rel;
    if (access(above.c_str(), F_OK) == 0) return above;
  }
  return rel;
}

}  // namespace fl
