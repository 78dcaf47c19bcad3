#include "ccl_under_test/api/rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "common/file_util.h"

namespace fl::ccl {

Status MemoryStore::Set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kv_[key] = value;
  }
  cv_.notify_all();
  return OkStatus();
}

StatusOr<std::string> MemoryStore::Get(const std::string& key, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto it = kv_.find(key);
    if (it != kv_.end()) return it->second;
    if (deadline.Expired()) return DeadlineExceededError("rendezvous: key '" + key + "' not set");
    cv_.wait_for(lock, std::chrono::nanoseconds(std::min<Nanos>(deadline.Remaining(), kNsPerSec)));
  }
}

std::string FileStore::PathOf(const std::string& key) const {
  std::string name;
  for (char c : key) name.push_back(c == '/' ? '%' : c);
  return dir_ + "/" + name;
}

Status FileStore::Set(const std::string& key, const std::string& value) {
  if (mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, "rendezvous: mkdir " + dir_);
  }
  std::string path = PathOf(key);
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(reinterpret_cast<uintptr_t>(&value));
  return ReplaceFile(path, tmp, value).Prepend("rendezvous");
}

StatusOr<std::string> FileStore::Get(const std::string& key, Deadline deadline) {
  std::string path = PathOf(key);
  Nanos poll = kNsPerMs;
  while (true) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
    if (deadline.Expired()) {
      return DeadlineExceededError("rendezvous: key '" + key + "' not found in " + dir_);
    }
    usleep(static_cast<useconds_t>(std::min(poll, deadline.Remaining()) / 1000 + 1));
    poll = std::min<Nanos>(poll * 2, 20 * kNsPerMs);
  }
}

Status StoreBarrier(Store& store, const std::string& prefix, int rank, int world_size,
                    Deadline deadline) {
  FL_RETURN_IF_ERROR(store.Set(prefix + "/" + std::to_string(rank), "1"));
  for (int r = 0; r < world_size; ++r) {
    auto v = store.Get(prefix + "/" + std::to_string(r), deadline);
    if (!v.ok()) return std::move(v).TakeStatus();
  }
  return OkStatus();
}

}  // namespace fl::ccl
