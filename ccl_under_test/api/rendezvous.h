// Bootstrap: how the ranks of a job find each other. Each rank publishes its listening
// addresses (ports chosen by the kernel: port 0) under keys prefixed by the job id and reads
// its peers'; several jobs can therefore share one store and one machine without clashes.
//
// Store implementations:
//   FileStore    a directory (shared by all ranks: one machine, or namespaces on one machine,
//                or a shared filesystem); one file per key, written atomically by rename
//   MemoryStore  in-process, for ranks that run as threads (tests, ftccl-perf --ranks)
//   TcpStore     a TcpStoreServer over TCP, for hosts that share no filesystem (tcp_store.h)
//
// Thread-safety: all stores may be used from several threads.
// Blocking: Get waits for the key until its deadline, never longer.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace fl::ccl {

class Store {
 public:
  virtual ~Store() = default;
  // Overwrites an existing value.
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // Waits until key exists; DeadlineExceeded (naming the key) when it does not in time.
  virtual StatusOr<std::string> Get(const std::string& key, Deadline deadline) = 0;
};

class MemoryStore : public Store {
 public:
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> kv_;
};

class FileStore : public Store {
 public:
  // dir is created when missing.
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  const std::string& dir() const { return dir_; }

 private:
  std::string PathOf(const std::string& key) const;
  std::string dir_;
};

// The store a rank's --store SPEC names: "tcp://HOST:PORT" is a TcpStore authenticated with
// the token in token_file (required there); "file://DIR" or a plain DIR is a FileStore
// (token_file must then be empty). InvalidArgument for an empty spec, an unknown scheme, a
// bad address; the token file's errors (missing, empty) as ReadStoreToken gives them.
// Nothing is contacted here: the first Set or Get dials. Defined in open_store.cc, above the
// stores it makes.
StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& spec, const std::string& token_file);

// Every rank sets "<prefix>/<rank>" and waits for all the others: a simple store barrier.
Status StoreBarrier(Store& store, const std::string& prefix, int rank, int world_size,
                    Deadline deadline);

}  // namespace fl::ccl
