#include "ccl_under_test/api/launch_env.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <climits>

namespace fl::ccl {
namespace {

struct VarSet {
  const char* source;
  const char* label;  // for messages
  const char* rank;
  const char* world;
  const char* world_alt;  // may be nullptr
  const char* local;
};

constexpr VarSet kSets[] = {
    {"faultline", "faultline", "FL_RANK", "FL_WORLD_SIZE", nullptr, "FL_LOCAL_RANK"},
    {"torch", "torch-style", "RANK", "WORLD_SIZE", nullptr, "LOCAL_RANK"},
    {"openmpi", "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", nullptr,
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"slurm", "Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID"},
};

const char* Get(const GetenvFn& getenv, const char* name) {
  if (!name) return nullptr;
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

StatusOr<int> ParseCount(const char* name, const char* text) {
  std::string s(text);
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return InvalidArgumentError(std::string(name) + "='" + s + "' is not a non-negative integer");
  return std::stoi(s);
}

struct Found {
  const VarSet* set;
  RankEnv env;
  std::string world_var;
  std::string Describe() const {
    std::string d = std::string(set->rank) + "=" + std::to_string(env.rank) + " " + world_var +
                    "=" + std::to_string(env.world_size);
    if (env.local_rank >= 0)
      d += " " + std::string(set->local) + "=" + std::to_string(env.local_rank);
    return d + " (" + set->label + ")";
  }
};

StatusOr<std::optional<Found>> ReadSet(const VarSet& vs, const GetenvFn& getenv) {
  const char* r = Get(getenv, vs.rank);
  if (!r) return std::optional<Found>();
  Found f{&vs, {}, vs.world};
  const char* w = Get(getenv, vs.world);
  if (!w && vs.world_alt) {
    w = Get(getenv, vs.world_alt);
    f.world_var = vs.world_alt;
  }
  if (!w)
    return InvalidArgumentError(std::string(vs.rank) + " is set but " + vs.world + " is not (" +
                                vs.label + " launcher variables)");
  FL_ASSIGN_OR_RETURN(f.env.rank, ParseCount(vs.rank, r));
  FL_ASSIGN_OR_RETURN(f.env.world_size, ParseCount(f.world_var.c_str(), w));
  if (f.env.world_size < 1)
    return InvalidArgumentError(f.world_var + "=" + w + ": the world size must be at least 1");
  if (f.env.rank >= f.env.world_size)
    return InvalidArgumentError(std::string(vs.rank) + "=" + r + " is not below " + f.world_var +
                                "=" + w);
  if (const char* l = Get(getenv, vs.local)) {
    FL_ASSIGN_OR_RETURN(f.env.local_rank, ParseCount(vs.local, l));
    if (f.env.local_rank >= f.env.world_size)
      return InvalidArgumentError(std::string(vs.local) + "=" + l + " is not below " + f.world_var +
                                  "=" + w);
  }
  f.env.source = vs.source;
  return std::optional<Found>(std::move(f));
}

}  // namespace

StatusOr<RankEnv> RankFromEnvironment(const GetenvFn& getenv) {
  std::vector<Found> found;
  for (const VarSet& vs : kSets) {
    FL_ASSIGN_OR_RETURN(std::optional<Found> f, ReadSet(vs, getenv));
    if (f) found.push_back(std::move(*f));
  }
  if (found.empty())
    return NotFoundError(
        "no rank in the environment (FL_RANK, RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID)");
  const Found& chosen = found[0];
  for (size_t i = 1; i < found.size(); ++i) {
    const Found& o = found[i];
    if (o.env.world_size < chosen.env.world_size) continue;  // an enclosing launcher
    bool same = o.env.rank == chosen.env.rank && o.env.world_size == chosen.env.world_size &&
                (o.env.local_rank < 0 || chosen.env.local_rank < 0 ||
                 o.env.local_rank == chosen.env.local_rank);
    if (!same)
      return InvalidArgumentError("launcher variables disagree: " + chosen.Describe() + " but " +
                                  o.Describe() + "; pass --rank and --world-size to choose");
  }
  return chosen.env;
}

StatusOr<RankEnv> ResolveRank(std::optional<int> flag_rank, std::optional<int> flag_world_size,
                              const GetenvFn& getenv) {
  if (flag_rank.has_value() != flag_world_size.has_value())
    return InvalidArgumentError(
        "give both --rank and --world-size, or neither (then they come "
        "from the launcher's environment)");
  if (!flag_rank) return RankFromEnvironment(getenv);
  if (*flag_world_size < 1)
    return InvalidArgumentError("--world-size " + std::to_string(*flag_world_size) +
                                ": must be at least 1");
  if (*flag_rank < 0 || *flag_rank >= *flag_world_size)
    return InvalidArgumentError("--rank " + std::to_string(*flag_rank) + " is not in 0.." +
                                std::to_string(*flag_world_size - 1));
  RankEnv e;
  e.rank = *flag_rank;
  e.world_size = *flag_world_size;
  e.source = "flags";
  // The local rank has no flag: take it from the environment when it is consistent.
  auto env = RankFromEnvironment(getenv);
  if (env.ok() && env->rank == e.rank && env->world_size == e.world_size)
    e.local_rank = env->local_rank;
  return e;
}

StatusOr<std::vector<InterfaceAddress>> ListInterfaceAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ErrnoStatus(errno, "getifaddrs");
  std::vector<InterfaceAddress> out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_name) continue;
    InterfaceAddress ia;
    ia.name = a->ifa_name;
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET) {
      char ip[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, ip, sizeof ip);
      ia.ipv4 = ip;
    }
    out.push_back(std::move(ia));
  }
  freeifaddrs(list);
  return out;
}

namespace {
bool IsIpv4(const std::string& s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}
}  // namespace

StatusOr<std::vector<std::string>> ResolveNicsWith(const std::vector<std::string>& entries,
                                                   const std::vector<InterfaceAddress>& ifs) {
  std::vector<std::string> out;
  for (const std::string& e : entries) {
    if (e.empty()) return InvalidArgumentError("NICs: an empty entry");
    if (IsIpv4(e)) {
      out.push_back(e);
      continue;
    }
    bool exists = false;
    std::string addr;
    for (const auto& ia : ifs) {
      if (ia.name != e) continue;
      exists = true;
      if (!ia.ipv4.empty()) {
        addr = ia.ipv4;
        break;
      }
    }
    if (addr.empty()) {
      if (exists) return InvalidArgumentError("NIC: interface '" + e + "' has no IPv4 address");
      std::string names;
      for (const auto& ia : ifs) {
        if (names.find(" " + ia.name + ",") != std::string::npos) continue;
        names += " " + ia.name + ",";
      }
      if (!names.empty()) names.pop_back();
      return InvalidArgumentError("NIC '" + e +
                                  "' is neither an IPv4 address nor an interface of this host "
                                  "(interfaces:" +
                                  names + ")");
    }
    out.push_back(addr);
  }
  return out;
}

StatusOr<std::vector<std::string>> ResolveNics(const std::vector<std::string>& entries) {
  bool any_name = false;
  for (const auto& e : entries) any_name |= !IsIpv4(e);
  if (!any_name) return entries;
  FL_ASSIGN_OR_RETURN(auto ifs, ListInterfaceAddresses());
  return ResolveNicsWith(entries, ifs);
}

}  // namespace fl::ccl
