#include "lab_job.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fl::ccl::testing {

LabJob::LabJob(NetnsLab& lab, JobSpec spec) : lab_(lab), spec_(std::move(spec)) {
  char tmpl[] = "/tmp/flccl-job-XXXXXX";
  char* d = mkdtemp(tmpl);
  dir_ = d ? d : "/tmp";
}

LabJob::~LabJob() {
  lab_.KillAll();
  std::error_code ec;
  if (dir_ != "/tmp") std::filesystem::remove_all(dir_, ec);
}

Status LabJob::Start() {
  const int hosts = lab_.spec().hosts;
  const int n = hosts * spec_.ranks_per_host;
  for (int r = 0; r < n; ++r) {
    int h = r / spec_.ranks_per_host;
    std::string nics;
    std::vector<int> rails = spec_.rails;
    if (spec_.rail_per_rank) rails = {r % spec_.ranks_per_host % lab_.spec().nics};
    if (rails.empty()) {
      for (int k = 0; k < lab_.spec().nics; ++k) rails.push_back(k);
    }
    for (int k : rails) nics += (nics.empty() ? "" : ",") + NetnsLab::NicAddr(h, k);
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), spec_.env.begin(), spec_.env.end());
    argv.insert(argv.end(),
                {spec_.perf_binary, "--ccl", spec_.ccl, "--rank", std::to_string(r), "--world-size",
                 std::to_string(n), "--rendezvous", dir_ + "/rdv", "--job-id", lab_.prefix(),
                 "--nic-addrs", nics, "--events", dir_ + "/events." + std::to_string(r),
                 "--progress", dir_ + "/progress." + std::to_string(r)});
    argv.insert(argv.end(), spec_.args.begin(), spec_.args.end());
    FL_ASSIGN_OR_RETURN(pid_t pid, lab_.Spawn(h, argv, dir_ + "/log." + std::to_string(r)));
    pids_.push_back(pid);
  }
  return OkStatus();
}

int LabJob::Progress(int r) const {
  std::ifstream in(dir_ + "/progress." + std::to_string(r));
  int n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

int LabJob::MinProgress() const {
  int m = INT32_MAX;
  for (int r = 0; r < ranks(); ++r) m = std::min(m, Progress(r));
  return ranks() ? m : 0;
}

bool LabJob::WaitProgress(int n, Deadline d) const {
  return WaitUntil([&] { return MinProgress() >= n; }, d, 20 * kNsPerMs);
}

std::vector<std::string> LabJob::Events(const std::vector<std::string>& needles) const {
  std::vector<std::string> out;
  for (int r = 0; r < ranks(); ++r) {
    std::ifstream in(dir_ + "/events." + std::to_string(r));
    std::string line;
    while (std::getline(in, line)) {
      bool all = true;
      for (const auto& n : needles) all &= line.find(n) != std::string::npos;
      if (all) out.push_back(line);
    }
  }
  return out;
}

std::vector<int64_t> LabJob::ProgressTimes(int r) const {
  std::vector<int64_t> out;
  std::ifstream in(dir_ + "/progress." + std::to_string(r));
  int64_t t;
  std::string rest;
  while (in >> t) {
    out.push_back(t);
    std::getline(in, rest);
  }
  return out;
}

std::vector<int> LabJob::WaitAll(Deadline d) {
  std::vector<int> codes;
  for (pid_t p : pids_) {
    auto c = lab_.Wait(p, d);
    codes.push_back(c.ok() ? *c : -1);
  }
  return codes;
}

std::string LabJob::Log(int r) const {
  std::ifstream in(dir_ + "/log." + std::to_string(r));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

}  // namespace fl::ccl::testing
