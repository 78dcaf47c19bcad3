#include "harness/scenario/scenario_loader.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/event_kinds.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/name_chars.h"
#include "common/options.h"
#include "common/yaml_util.h"
#include "workloads/progress/formats.h"
#include "workloads/workload_plugins.h"

namespace fl::harness {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

Status ParseLab(const YamlDoc& doc, const YAML::Node& n, LabSpec* lab) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "lab"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"topology", "inventory", "slurm"}, "lab"));
  FL_ASSIGN_OR_RETURN(lab->topology, doc.GetOr<std::string>(n, "topology", ""));
  FL_ASSIGN_OR_RETURN(lab->inventory, doc.GetOr<std::string>(n, "inventory", ""));
  if (doc.Has(n, "slurm")) {
    FL_RETURN_IF_ERROR(doc.ExpectMap(n["slurm"], "slurm"));
    lab->slurm_yaml = doc.text();  // the lab reads lab.slurm from it, with its positions
  }
  if (!lab->topology.empty() + !lab->inventory.empty() + !lab->slurm_yaml.empty() != 1)
    return doc.Error(n,
                     "lab needs exactly one of 'topology' (a local lab), 'inventory' (real hosts) "
                     "or 'slurm' (an allocation); --lab FILE replaces it");
  lab->where = doc.Where(n);
  return OkStatus();
}

// The workloads whose schema declares `key`.
std::vector<std::string> WorkloadsTaking(const std::string& key) {
  std::vector<std::string> takers;
  for (const workloads::WorkloadPlugin* w : workloads::WorkloadPlugins())
    if (w->options.Find(key)) takers.push_back(w->name);
  return takers;
}

bool IsEnvKey(std::string_view k) {
  return IsNameOf(k, 128, "_", Letters::kUpper) && !(k[0] >= '0' && k[0] <= '9');
}

// job.env: NAME: value for every rank (faultline-worker or a command).
Status ParseJobEnv(const YamlDoc& doc, const YAML::Node& n, JobSpec* job) {
  if (!doc.Has(n, "env")) return OkStatus();
  const YAML::Node e = n["env"];
  FL_RETURN_IF_ERROR(doc.ExpectMap(e, "env"));
  if (e.size() > limits::kMaxEnv)
    return doc.Error(e, "job.env holds at most " + std::to_string(limits::kMaxEnv) + " variables");
  for (auto it = e.begin(); it != e.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (!IsEnvKey(key))
      return doc.Error(it->first, "env key '" + key +
                                      "' is not a variable name ([A-Z_][A-Z0-9_]*, at most 128)");
    if (!it->second.IsScalar())
      return doc.Error(it->second, "env values must be single values (env." + key + ")");
    const std::string value = it->second.Scalar();
    if (value.size() > limits::kMaxEnvValueBytes || value.find('\0') != std::string::npos)
      return doc.Error(it->second, "env." + key + " is longer than " +
                                       std::to_string(limits::kMaxEnvValueBytes) +
                                       " bytes or holds a NUL");
    if (key.rfind("FAULTLINE_", 0) == 0 || key == "RANK" || key == "WORLD_SIZE" ||
        key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" || key == "MASTER_ADDR")
      return doc.Error(it->first, "env." + key + " is set by faultline for every rank");
    job->env[key] = value;
  }
  return OkStatus();
}

// A command job: `command: [argv...]`, `ranks_per_host`, `progress: {format}`, `env`, and
// the keys that bound any job (ccl as a label, iterations or duration or neither,
// warmup_iterations, hang_timeout).
Status ParseCommandJob(const YamlDoc& doc, const YAML::Node& n, JobSpec* job) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "job"));
  const auto worker_only = [&](const YAML::Node& at, const std::string& key) {
    return doc.Error(at, "'" + key +
                             "' configures faultline-worker's workload: a command job sets it "
                             "in its own arguments");
  };
  // Any workload's option (job.compute, ...) is the built-in worker's.
  for (auto it = n.begin(); it != n.end(); ++it)
    if (!WorkloadsTaking(it->first.Scalar()).empty())
      return worker_only(it->second, it->first.Scalar());
  FL_RETURN_IF_ERROR(doc.CheckKeys(
      n,
      {"command", "env", "ranks_per_host", "progress", "ccl", "iterations", "duration",
       "warmup_iterations", "hang_timeout", "workload", "size", "dtype", "check_every", "failover",
       "collective_timeout", "ccl_options", "on_rank_loss", "shrink_grace"},
      "job"));
  for (const char* key : {"workload", "size", "dtype", "check_every", "failover",
                          "collective_timeout", "ccl_options", "on_rank_loss", "shrink_grace"})
    if (doc.Has(n, key)) return worker_only(n[key], key);
  const YAML::Node c = n["command"];
  FL_RETURN_IF_ERROR(doc.ExpectSequence(c, "command"));
  if (c.size() == 0) return doc.Error(c, "command must name a program (an absolute path)");
  if (c.size() > limits::kMaxCommandArgs)
    return doc.Error(
        c, "command takes at most " + std::to_string(limits::kMaxCommandArgs) + " arguments");
  for (const auto& a : c) {
    FL_ASSIGN_OR_RETURN(std::string v, doc.As<std::string>(a, "command argument"));
    if (v.size() > 4096 || v.find('\0') != std::string::npos)
      return doc.Error(a, "a command argument is longer than 4096 bytes or holds a NUL");
    if (job->command.empty() && (v.empty() || v[0] != '/'))
      return doc.Error(a, "command[0] must be an absolute path (no PATH lookup), not '" + v + "'");
    job->command.push_back(std::move(v));
  }
  FL_ASSIGN_OR_RETURN(job->ccl, doc.GetOr<std::string>(n, "ccl", job->ccl));
  // A label here, but one of the CCLs (the descriptors' list, ccls.cmake).
  if (auto ccl = ccl::FindCclPlugin(job->ccl); !ccl.ok())
    return doc.Error(n["ccl"], ccl.status().message());
  FL_ASSIGN_OR_RETURN(job->ranks_per_host,
                      doc.GetBoundedOr<uint32_t>(n, "ranks_per_host", 0, 1, 1024));
  FL_ASSIGN_OR_RETURN(job->iterations,
                      doc.GetBoundedOr<uint64_t>(n, "iterations", 0, 1, limits::kMaxIterations));
  FL_ASSIGN_OR_RETURN(job->duration_ns,
                      doc.GetDurationIn(n, "duration", 0, kNsPerMs, limits::kMaxJobDuration));
  if (job->iterations > 0 && job->duration_ns > 0)
    return doc.Error(n,
                     "a command job takes 'iterations' or 'duration' (or neither: it runs "
                     "until the command exits), not both");
  FL_ASSIGN_OR_RETURN(job->warmup_iterations,
                      doc.GetBoundedOr<uint64_t>(n, "warmup_iterations", job->warmup_iterations, 0,
                                                 limits::kMaxWarmupIterations));
  FL_ASSIGN_OR_RETURN(
      job->hang_timeout_ns,
      doc.GetDurationIn(n, "hang_timeout", job->hang_timeout_ns, kNsPerMs, limits::kMaxTimeout));
  job->progress_format = std::string(workloads::progress::kDefaultProgressFormat);
  if (doc.Has(n, "progress")) {
    const YAML::Node p = n["progress"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(p, "progress"));
    FL_RETURN_IF_ERROR(doc.CheckKeys(p, {"format"}, "progress"));
    FL_ASSIGN_OR_RETURN(job->progress_format,
                        doc.GetOr<std::string>(p, "format", job->progress_format));
    if (!workloads::progress::FindProgressFormat(job->progress_format))
      return doc.Error(p["format"], "progress.format must be " +
                                        workloads::progress::ProgressFormatNames(", ", " or ") +
                                        ", not '" + job->progress_format + "'");
  }
  return ParseJobEnv(doc, n, job);
}

// The job keys of a workload job that are not one workload's options (kCommonJobKeys and the
// job's bounds), in the order error messages list them.
const std::vector<std::string>& WorkerJobKeys() {
  static const auto* keys = new std::vector<std::string>{"workload",
                                                         "ccl",
                                                         "size",
                                                         "dtype",
                                                         "iterations",
                                                         "duration",
                                                         "warmup_iterations",
                                                         "check_every",
                                                         "failover",
                                                         "collective_timeout",
                                                         "hang_timeout",
                                                         "ccl_options",
                                                         "on_rank_loss",
                                                         "shrink_grace",
                                                         "env"};
  return *keys;
}

// A workload job's own options: every key the job's workload declares in its schema
// (workload_plugins.h), its value checked there (at the value: out of range, wrong type); a
// key another workload declares is "applies to workload X only" (at its value); any other key
// is unknown (at the key).
Status ParseWorkloadOptions(const YamlDoc& doc, const YAML::Node& n,
                            const workloads::WorkloadPlugin& workload, JobSpec* job) {
  const OptionSchema& schema = workload.options;
  const std::vector<std::string>& common = WorkerJobKeys();
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (std::find(common.begin(), common.end(), key) != common.end()) continue;
    if (!schema.Find(key)) {
      if (std::vector<std::string> takers = WorkloadsTaking(key); !takers.empty())
        return doc.Error(
            it->second,
            key + " applies to workload " + Join(takers) + " only (" + workload.name + " takes " +
                (schema.specs().empty() ? std::string("no options") : Join(schema.Names())) + ")");
      std::vector<std::string> allowed = common;
      for (const auto& name : schema.Names()) allowed.push_back(name);
      return doc.Error(it->first,
                       "unknown key '" + key + "' in job (allowed: " + Join(allowed) + ")");
    }
    if (!it->second.IsScalar())
      return doc.Error(it->second, key + " must be a single value (" + workload.name + " option)");
    if (std::string why = schema.Check(key, it->second.Scalar()); !why.empty())
      return doc.Error(it->second, why);
    job->workload_options[key] = it->second.Scalar();
  }
  return OkStatus();
}

Status ParseJob(const YamlDoc& doc, const YAML::Node& n, JobSpec* job) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "job"));
  if (doc.Has(n, "command")) return ParseCommandJob(doc, n, job);
  for (const char* key : {"ranks_per_host", "progress"})
    if (doc.Has(n, key))
      return doc.Error(n[key],
                       std::string("'") + key + "' applies to a command job (job.command) only");
  FL_ASSIGN_OR_RETURN(job->workload, doc.GetOr<std::string>(n, "workload", job->workload));
  auto workload = workloads::FindWorkloadPlugin(job->workload);
  if (!workload.ok()) return doc.Error(n["workload"], workload.status().message());
  FL_RETURN_IF_ERROR(ParseWorkloadOptions(doc, n, **workload, job));
  FL_RETURN_IF_ERROR(ParseJobEnv(doc, n, job));
  FL_ASSIGN_OR_RETURN(job->ccl, doc.GetOr<std::string>(n, "ccl", job->ccl));
  auto ccl = ccl::FindCclPlugin(job->ccl);
  if (!ccl.ok()) return doc.Error(n["ccl"], ccl.status().message());
  if (doc.Has(n, "size")) {
    FL_ASSIGN_OR_RETURN(job->size_bytes,
                        doc.AsBytesIn(n["size"], "size", 1, limits::kMaxSizeBytes));
  }
  FL_ASSIGN_OR_RETURN(job->dtype, doc.GetOr<std::string>(n, "dtype", job->dtype));
  static const std::vector<std::string> kTypes = {"float32", "float16", "bfloat16", "int32",
                                                  "int64"};
  if (std::find(kTypes.begin(), kTypes.end(), job->dtype) == kTypes.end())
    return doc.Error(n["dtype"], "unknown dtype '" + job->dtype + "' (" + Join(kTypes) + ")");
  FL_ASSIGN_OR_RETURN(job->iterations,
                      doc.GetBoundedOr<uint64_t>(n, "iterations", 0, 1, limits::kMaxIterations));
  FL_ASSIGN_OR_RETURN(job->duration_ns,
                      doc.GetDurationIn(n, "duration", 0, kNsPerMs, limits::kMaxJobDuration));
  if ((job->iterations == 0) == (job->duration_ns == 0))
    return doc.Error(n, "job needs exactly one of 'iterations' (> 0) or 'duration'");
  FL_ASSIGN_OR_RETURN(job->warmup_iterations,
                      doc.GetBoundedOr<uint64_t>(n, "warmup_iterations", job->warmup_iterations, 0,
                                                 limits::kMaxWarmupIterations));
  FL_ASSIGN_OR_RETURN(
      job->check_every,
      doc.GetBoundedOr<uint64_t>(n, "check_every", job->check_every, 1, limits::kMaxIterations));
  FL_ASSIGN_OR_RETURN(job->failover, doc.GetOr<bool>(n, "failover", job->failover));
  FL_ASSIGN_OR_RETURN(job->on_rank_loss,
                      doc.GetOr<std::string>(n, "on_rank_loss", job->on_rank_loss));
  if (job->on_rank_loss != "abort" && job->on_rank_loss != "shrink")
    return doc.Error(n["on_rank_loss"],
                     "on_rank_loss must be abort or shrink, not '" + job->on_rank_loss + "'");
  if (job->on_rank_loss == "shrink" && !(*ccl)->may_shrink)
    return doc.Error(n["on_rank_loss"],
                     "on_rank_loss: shrink needs a CCL that can shrink its "
                     "communicator (nccl, with ncclCommShrink); " +
                         job->ccl + " cannot");
  if (doc.Has(n, "shrink_grace") && job->on_rank_loss != "shrink")
    return doc.Error(n["shrink_grace"], "shrink_grace applies with on_rank_loss: shrink only");
  FL_ASSIGN_OR_RETURN(job->shrink_grace_ns,
                      doc.GetDurationIn(n, "shrink_grace", 0, kNsPerMs, limits::kMaxTimeout));
  FL_ASSIGN_OR_RETURN(job->collective_timeout_ns,
                      doc.GetDurationIn(n, "collective_timeout", job->collective_timeout_ns,
                                        kNsPerMs, limits::kMaxTimeout));
  FL_ASSIGN_OR_RETURN(
      job->hang_timeout_ns,
      doc.GetDurationIn(n, "hang_timeout", job->hang_timeout_ns, kNsPerMs, limits::kMaxTimeout));
  if (doc.Has(n, "ccl_options")) {
    const YAML::Node p = n["ccl_options"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(p, "ccl_options"));
    const OptionSchema& schema = (*ccl)->options;
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (!it->second.IsScalar())
        return doc.Error(it->second, "ccl option values must be single values");
      const std::string k = it->first.Scalar();
      if (std::string why = schema.Check(k, it->second.Scalar()); !why.empty())
        return doc.Error(schema.Find(k) ? it->second : it->first, why);
      job->ccl_options[k] = it->second.Scalar();
    }
  }
  return OkStatus();
}

// after_event: {event: EVENT, fault: fN, delay: DUR}, or during: fN | {fault: fN, delay: DUR}
// (the anchor's fault_detected, while it is still in effect). That fN is an earlier fault of
// the file with one firing is checked once all faults are read (CheckAnchors).
Status ParseAnchor(const YamlDoc& doc, const YAML::Node& n, FaultTiming* t) {
  t->kind = FaultTiming::Kind::kAfterEvent;
  t->during = doc.Has(n, "during");
  const YAML::Node a = t->during ? n["during"] : n["after_event"];
  const char* what = t->during ? "during" : "after_event";
  if (t->during && a.IsScalar()) {
    t->anchor = a.Scalar();
  } else {
    FL_RETURN_IF_ERROR(doc.ExpectMap(a, what));
    if (t->during) {
      FL_RETURN_IF_ERROR(doc.CheckKeys(a, {"fault", "delay"}, "during"));
    } else {
      FL_RETURN_IF_ERROR(doc.CheckKeys(a, {"event", "fault", "delay"}, "after_event"));
    }
    FL_ASSIGN_OR_RETURN(t->anchor, doc.Get<std::string>(a, "fault"));
    FL_ASSIGN_OR_RETURN(t->anchor_delay_ns,
                        doc.GetDurationIn(a, "delay", 0, 0, limits::kMaxFaultTime));
  }
  if (t->during) {
    t->anchor_event = std::string(events::kFaultDetected);
    return OkStatus();
  }
  FL_ASSIGN_OR_RETURN(t->anchor_event, doc.Get<std::string>(a, "event"));
  const std::vector<std::string_view> anchors = events::AnchorNames();
  for (std::string_view e : anchors)
    if (t->anchor_event == e) return OkStatus();
  std::vector<std::string> known(anchors.begin(), anchors.end());
  return doc.Error(a["event"],
                   "unknown event '" + t->anchor_event + "' (known: " + Join(known) + ")");
}

// Every anchor names an earlier fault of the file ("f" and its index) that fires once.
Status CheckAnchors(const YamlDoc& doc, const YAML::Node& faults,
                    const std::vector<FaultSpec>& specs) {
  for (size_t i = 0; i < specs.size(); ++i) {
    const FaultTiming& t = specs[i].timing;
    if (t.kind != FaultTiming::Kind::kAfterEvent) continue;
    const YAML::Node fn = faults[i];
    const YAML::Node a = t.during ? fn["during"] : fn["after_event"];
    const YAML::Node at = a.IsMap() ? a["fault"] : a;
    size_t j = 0;
    const bool named = t.anchor.size() > 1 && t.anchor[0] == 'f' &&
                       t.anchor.find_first_not_of("0123456789", 1) == std::string::npos &&
                       t.anchor.size() < 8;
    if (named) j = std::stoul(t.anchor.substr(1));
    if (!named || j >= i)
      return doc.Error(at,
                       "'" + t.anchor + "' is not an earlier fault of this file (" +
                           (i == 0 ? std::string("the first fault has none")
                                   : "those before this one are f0 .. f" + std::to_string(i - 1)) +
                           ")");
    if (specs[j].timing.count > 1)
      return doc.Error(
          at, "fault " + t.anchor + " fires more than once: an anchor must be a single firing");
  }
  return OkStatus();
}

Status ParseFault(const YamlDoc& doc, const YAML::Node& n, FaultSpec* f) {
  FL_RETURN_IF_ERROR(
      doc.CheckKeys(n,
                    {"kind", "target", "target_class", "at", "after_iteration", "every",
                     "after_event", "during", "count", "jitter", "duration", "params"},
                    "fault"));
  f->where = doc.Where(n);
  FL_ASSIGN_OR_RETURN(f->kind, doc.Get<std::string>(n, "kind"));
  FL_ASSIGN_OR_RETURN(f->target, doc.GetOr<std::string>(n, "target", ""));
  FL_ASSIGN_OR_RETURN(f->target_class, doc.GetOr<std::string>(n, "target_class", ""));
  if (!f->target.empty() && !f->target_class.empty())
    return doc.Error(n, "a fault takes 'target' or 'target_class', not both");
  // `at` beside `every` is the first firing (default: one period in).
  const bool at_with_every = doc.Has(n, "at") && doc.Has(n, "every");
  int when = doc.Has(n, "at") + doc.Has(n, "after_iteration") + doc.Has(n, "every") +
             doc.Has(n, "after_event") + doc.Has(n, "during") - (at_with_every ? 1 : 0);
  if (when != 1)
    return doc.Error(n,
                     "a fault needs exactly one of 'at', 'after_iteration', 'every' (with 'at' "
                     "for its first firing), 'after_event' or 'during'");
  FaultTiming& t = f->timing;
  if (doc.Has(n, "after_event") || doc.Has(n, "during")) {
    FL_RETURN_IF_ERROR(ParseAnchor(doc, n, &t));
  } else if (doc.Has(n, "at") && !at_with_every) {
    t.kind = FaultTiming::Kind::kAt;
    FL_ASSIGN_OR_RETURN(t.at_ns, doc.AsDurationIn(n["at"], "at", 0, limits::kMaxFaultTime));
  } else if (doc.Has(n, "after_iteration")) {
    t.kind = FaultTiming::Kind::kAfterIteration;
    FL_ASSIGN_OR_RETURN(t.after_iteration,
                        doc.GetBounded<uint64_t>(n, "after_iteration", 0, limits::kMaxIterations));
  } else {
    t.kind = FaultTiming::Kind::kEvery;
    FL_ASSIGN_OR_RETURN(t.every_ns,
                        doc.AsDurationIn(n["every"], "every", kNsPerMs, limits::kMaxFaultTime));
  }
  FL_ASSIGN_OR_RETURN(t.count,
                      doc.GetBoundedOr<uint32_t>(n, "count", 1, 1, limits::kMaxFiringsPerFault));
  if (t.count > 1 && t.kind != FaultTiming::Kind::kEvery)
    return doc.Error(n["count"], "count > 1 needs 'every' (the period between firings)");
  if (t.kind == FaultTiming::Kind::kEvery) {
    t.at_ns = t.every_ns;
    if (at_with_every) {
      FL_ASSIGN_OR_RETURN(t.at_ns, doc.AsDurationIn(n["at"], "at", 0, limits::kMaxFaultTime));
    }
  }
  FL_ASSIGN_OR_RETURN(t.jitter_ns, doc.GetDurationIn(n, "jitter", 0, 0, limits::kMaxFaultTime));
  if (t.jitter_ns > 0 && t.kind == FaultTiming::Kind::kAfterEvent)
    return doc.Error(n["jitter"], "a fault timed by an event takes 'delay', not 'jitter'");
  FL_ASSIGN_OR_RETURN(f->duration_ns,
                      doc.GetDurationIn(n, "duration", 0, 0, limits::kMaxFaultTime));
  if (t.kind == FaultTiming::Kind::kEvery && f->duration_ns >= t.every_ns)
    return doc.Error(n["duration"], "duration must be shorter than the period 'every'");
  if (doc.Has(n, "params")) {
    const YAML::Node p = n["params"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(p, "params"));
    if (p.size() > limits::kMaxParams)
      return doc.Error(p,
                       "a fault takes at most " + std::to_string(limits::kMaxParams) + " params");
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (!it->second.IsScalar())
        return doc.Error(it->second, "parameter values must be single values");
      f->params[it->first.Scalar()] = it->second.Scalar();
    }
  }
  return OkStatus();
}

Status ParseExpect(const YamlDoc& doc, const YAML::Node& n, Expectations* e) {
  FL_RETURN_IF_ERROR(
      doc.CheckKeys(n,
                    {"survives", "max_detection_ms", "max_recovery_ms", "min_degraded_ratio",
                     "max_throughput_loss_s", "exact_correctness"},
                    "expectations"));
  if (doc.Has(n, "survives")) {
    FL_ASSIGN_OR_RETURN(e->survives, doc.Get<bool>(n, "survives"));
  }
  auto bounded = [&](const char* key, double hi, std::optional<double>* out) -> Status {
    if (!doc.Has(n, key)) return OkStatus();
    FL_ASSIGN_OR_RETURN(*out, doc.GetBounded<double>(n, key, 0.0, hi));
    return OkStatus();
  };
  FL_RETURN_IF_ERROR(bounded("max_detection_ms", limits::kMaxExpectMs, &e->max_detection_ms));
  FL_RETURN_IF_ERROR(bounded("max_recovery_ms", limits::kMaxExpectMs, &e->max_recovery_ms));
  // a fraction of the baseline
  FL_RETURN_IF_ERROR(bounded("min_degraded_ratio", 1.0, &e->min_degraded_ratio));
  FL_RETURN_IF_ERROR(
      bounded("max_throughput_loss_s", limits::kMaxThroughputLossS, &e->max_throughput_loss_s));
  FL_ASSIGN_OR_RETURN(e->exact_correctness, doc.GetOr<bool>(n, "exact_correctness", true));
  return OkStatus();
}

Status ParseRestart(const YamlDoc& doc, const YAML::Node& n, RestartPolicy* r) {
  FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"enabled", "max_restarts", "delay"}, "restart"));
  FL_ASSIGN_OR_RETURN(r->enabled, doc.GetOr<bool>(n, "enabled", true));
  FL_ASSIGN_OR_RETURN(r->max_restarts,
                      doc.GetBoundedOr<uint32_t>(n, "max_restarts", 1, 0, limits::kMaxRestarts));
  FL_ASSIGN_OR_RETURN(r->delay_ns, doc.GetDurationIn(n, "delay", 0, 0, limits::kMaxRestartDelay));
  return OkStatus();
}

Status FaultError(const std::string& where, const std::string& msg) {
  return InvalidArgumentError(where + ": " + msg);
}

}  // namespace

std::string CheckCclOptions(const std::string& ccl,
                            const std::map<std::string, std::string>& options) {
  auto plugin = ccl::FindCclPlugin(ccl);
  if (!plugin.ok()) return plugin.status().message();
  for (const auto& [k, v] : options)
    if (std::string why = (*plugin)->options.Check(k, v); !why.empty()) return why;
  return {};
}

void ApplyLabOverride(Scenario& scenario, const std::string& lab_file) {
  if (lab_file.empty()) return;
  scenario.lab = LabSpec{};
  scenario.lab.file = lab_file;
  scenario.lab.where = "--lab " + lab_file;
}

Status ApplyCclOverrides(Scenario& scenario, const std::string& ccl,
                         const std::map<std::string, std::string>& options) {
  if (!ccl.empty() && ccl != scenario.job.ccl) {
    if (auto plugin = ccl::FindCclPlugin(ccl); !plugin.ok())
      return InvalidArgumentError("--ccl: " + plugin.status().message());
    scenario.job.ccl = ccl;
    scenario.job.ccl_options.clear();
  }
  if (std::string why = CheckCclOptions(scenario.job.ccl, options); !why.empty())
    return InvalidArgumentError("--ccl-option: " + why);
  for (const auto& [k, v] : options) scenario.job.ccl_options[k] = v;
  return OkStatus();
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

StatusOr<Scenario> ParseScenario(std::string_view text, const std::string& name) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, name));
  const YAML::Node root = doc.root();
  FL_RETURN_IF_ERROR(doc.CheckKeys(
      root, {"name", "description", "seed", "lab", "job", "faults", "expectations", "restart"},
      "scenario"));
  Scenario s;
  s.path = name;
  s.text = std::string(text);
  char hash[20];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a64(text)));
  s.text_hash = hash;
  FL_ASSIGN_OR_RETURN(s.name, doc.Get<std::string>(root, "name"));
  FL_ASSIGN_OR_RETURN(s.description, doc.GetOr<std::string>(root, "description", ""));
  FL_ASSIGN_OR_RETURN(s.seed, doc.GetOr<uint64_t>(root, "seed", 1));
  if (!doc.Has(root, "lab")) return doc.Error(root, "missing required key 'lab'");
  FL_RETURN_IF_ERROR(ParseLab(doc, root["lab"], &s.lab));
  s.lab.topology = PathBeside(s.lab.topology, name);
  s.lab.inventory = PathBeside(s.lab.inventory, name);
  s.lab.file = s.lab.topology.empty() ? s.lab.inventory : s.lab.topology;
  if (!doc.Has(root, "job")) return doc.Error(root, "missing required key 'job'");
  FL_RETURN_IF_ERROR(ParseJob(doc, root["job"], &s.job));
  {
    FL_ASSIGN_OR_RETURN(const YAML::Node faults,
                        doc.GetListOr(root, "faults", 0, limits::kMaxFaults, "faults"));
    size_t firings = 0;
    for (const auto& fn : faults) {
      FaultSpec f;
      FL_RETURN_IF_ERROR(ParseFault(doc, fn, &f));
      firings += f.timing.count;
      if (firings > limits::kMaxPlannedFirings)
        return doc.Error(fn, "the faults fire more than " +
                                 std::to_string(limits::kMaxPlannedFirings) +
                                 " times in all (the sum of their counts)");
      s.faults.push_back(std::move(f));
    }
    FL_RETURN_IF_ERROR(CheckAnchors(doc, faults, s.faults));
  }
  if (doc.Has(root, "expectations"))
    FL_RETURN_IF_ERROR(ParseExpect(doc, root["expectations"], &s.expect));
  // A command job verifies nothing unless it says so (ok= in its progress lines): exact
  // correctness is expected only when the scenario asks for it.
  if (!s.job.command.empty() &&
      !(doc.Has(root, "expectations") && doc.Has(root["expectations"], "exact_correctness")))
    s.expect.exact_correctness = false;
  if (doc.Has(root, "restart")) FL_RETURN_IF_ERROR(ParseRestart(doc, root["restart"], &s.restart));
  // A job whose CCL fails over (with failover on) rides a path fault out: nothing to restart.
  const auto plugin = ccl::FindCclPlugin(s.job.ccl);  // known: checked with the job
  if (s.restart.enabled && s.job.command.empty() && s.job.failover && plugin.ok() &&
      (*plugin)->fails_over)
    return doc.Error(root["restart"],
                     "restart applies to fail-stop jobs: set job.failover: false or use ccl: gloo");
  return s;
}

StatusOr<Scenario> LoadScenarioFile(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kScenario));
  return ParseScenario(text, path);
}

Status ValidateAgainstCatalog(const Scenario& s, const FaultCatalog& catalog) {
  std::vector<std::string> kinds = catalog.Kinds();
  for (const FaultSpec& f : s.faults) {
    if (std::find(kinds.begin(), kinds.end(), f.kind) == kinds.end())
      return FaultError(f.where,
                        "unknown fault kind '" + f.kind + "' (known: " + Join(kinds) + ")");
    std::vector<std::string> classes = catalog.TargetClasses(f.kind);
    if (!f.target_class.empty()) {
      if (std::find(classes.begin(), classes.end(), f.target_class) == classes.end())
        return FaultError(f.where, "fault kind '" + f.kind + "' cannot aim at target class '" +
                                       f.target_class + "' (it takes: " + Join(classes) + ")");
      if (catalog.Targets(f.target_class).empty())
        return FaultError(f.where, "the lab has no targets of class '" + f.target_class + "'");
      continue;
    }
    if (f.target.empty())
      return FaultError(f.where, "fault needs 'target' (a name in the lab) or 'target_class'");
    bool found = false;
    std::vector<std::string> examples;
    for (const auto& cls : classes) {
      auto targets = catalog.Targets(cls);
      found = found || std::find(targets.begin(), targets.end(), f.target) != targets.end();
      for (size_t i = 0; i < targets.size() && examples.size() < 6; ++i)
        examples.push_back(targets[i]);
    }
    if (!found)
      return FaultError(f.where, "target '" + f.target + "' is not in the lab for fault kind '" +
                                     f.kind + "' (e.g. " + Join(examples) + ")");
  }
  return OkStatus();
}

void StaticFaultCatalog::AddKind(std::string kind, std::vector<std::string> classes) {
  kinds_[std::move(kind)] = std::move(classes);
}
void StaticFaultCatalog::AddTargets(std::string cls, std::vector<std::string> targets) {
  targets_[std::move(cls)] = std::move(targets);
}
std::vector<std::string> StaticFaultCatalog::Kinds() const {
  std::vector<std::string> v;
  for (const auto& [k, c] : kinds_) v.push_back(k);
  return v;
}
std::vector<std::string> StaticFaultCatalog::TargetClasses(const std::string& kind) const {
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? std::vector<std::string>{} : it->second;
}
std::vector<std::string> StaticFaultCatalog::Targets(const std::string& cls) const {
  auto it = targets_.find(cls);
  return it == targets_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace fl::harness
