// One run at a time on a lab of real hosts: a run claims its lab before it provisions it and
// holds the claim to its end. A second run on the same lab (same kind and name) from this
// machine is refused, naming the run that holds it. The claim is an flock(2) on
// STATE_DIR/claims/<kind>-<name>.claim ($FAULTLINE_STATE_DIR or /run/faultline), holding
// "pid P" and, once the run has an id, "run R": the kernel drops it when the holder dies (a
// kill -9 leaves no stale claim), and the file goes with the claim. The file of a holder
// killed -9 stays behind, unlocked: RemoveStaleClaims (run by every Take and by the clean-up
// after dead runs) removes it. Labs that each run builds for itself (the local lab:
// Lab::exclusive() is false) need no claim.
//
// Thread-safety: a LabClaim is owned by one thread.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace fl::harness::run {

class LabClaim {
 public:
  // FailedPrecondition "lab NAME is in use by run R (pid P)" when another process holds it.
  static StatusOr<std::unique_ptr<LabClaim>> Take(const std::string& kind, const std::string& name);
  ~LabClaim();  // removes the file, then lets go
  LabClaim(const LabClaim&) = delete;
  LabClaim& operator=(const LabClaim&) = delete;

  // The holder's run id, for whoever is refused next.
  Status SetRun(const std::string& run_id);
  const std::string& path() const { return path_; }

 private:
  LabClaim(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  Status Write(const std::string& text);

  std::string path_;
  UniqueFd fd_;
};

// Removes the claim files in STATE_DIR/claims that nobody holds (their holder was killed
// before it could remove its file); a held one is left alone. Returns how many it removed.
StatusOr<int> RemoveStaleClaims();

}  // namespace fl::harness::run
