// `faultline ccls`, `faultline workloads`: the plug-ins this faultline knows, with their
// options (name, type, range, default, doc), from their own descriptors
// (ccl_under_test/tools/ccl_plugins.h, workloads/workload_plugins.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/options.h"
#include "workloads/workload_plugins.h"

namespace fl::harness {
namespace {

struct Listed {
  std::string name, doc;
  const OptionSchema* options;
  std::map<std::string, std::string> default_env;  // CCLs: with no lab context
};

nlohmann::json ToJson(const std::vector<Listed>& all) {
  nlohmann::json out = nlohmann::json::array();
  for (const Listed& p : all) {
    nlohmann::json opts = nlohmann::json::array();
    for (const OptionSpec& s : p.options->specs()) {
      nlohmann::json o = {{"name", s.name},
                          {"type", std::string(OptionTypeName(s.type))},
                          {"default", s.default_text},
                          {"doc", s.doc}};
      if (s.type == OptionType::kEnum) o["choices"] = s.choices;
      if (s.type == OptionType::kInt || s.type == OptionType::kBytes ||
          s.type == OptionType::kDurationMs) {
        o["min"] = s.min;
        o["max"] = s.max;
      }
      if (!s.RangeText().empty()) o["range"] = s.RangeText();
      opts.push_back(std::move(o));
    }
    nlohmann::json j = {{"name", p.name}, {"doc", p.doc}, {"options", std::move(opts)}};
    if (!p.default_env.empty()) j["default_env"] = p.default_env;
    out.push_back(std::move(j));
  }
  return out;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void Print(const std::vector<Listed>& all) {
  for (const Listed& p : all) {
    std::printf("%s  %s\n", p.name.c_str(), p.doc.c_str());
    if (p.options->specs().empty()) std::printf("    (no options)\n");
    for (const OptionSpec& s : p.options->specs()) {
      std::string range = s.RangeText();
      std::printf("    %-18s %-12s %-22s default %-10s %s\n", s.name.c_str(),
                  std::string(OptionTypeName(s.type)).c_str(), range.empty() ? "-" : range.c_str(),
                  s.default_text.empty() ? "-" : s.default_text.c_str(), s.doc.c_str());
    }
    for (const auto& [k, v] : p.default_env)
      std::printf("    env %s=%s (default; job.env overrides)\n", k.c_str(), v.c_str());
  }
}

}  // namespace

void AddPluginCommands(CLI::App& app, int* exit_code) {
  auto json = std::make_shared<bool>(false);
  auto* ccls = app.add_subcommand(
      "ccls", "list the CCLs (job.ccl, --ccl) with their options (job.ccl_options, --ccl-option)");
  ccls->add_flag("--json", *json, "print them as JSON");
  ccls->callback([json, exit_code] {
    std::vector<Listed> all;
    for (const ccl::CclPlugin* p : ccl::CclPlugins()) {
      Listed l{p->name, p->doc, &p->options, {}};
      if (p->default_env) l.default_env = p->default_env(ccl::CclEnvContext{});
      all.push_back(std::move(l));
    }
    if (*json) {
      std::printf("%s\n", ToJson(all).dump(2).c_str());
    } else {
      Print(all);
    }
    *exit_code = 0;
  });
  auto* wls = app.add_subcommand(
      "workloads",
      "list the workloads (job.workload) with their options (job keys, checked at load)");
  wls->add_flag("--json", *json, "print them as JSON");
  wls->callback([json, exit_code] {
    std::vector<Listed> all;
    for (const workloads::WorkloadPlugin* p : workloads::WorkloadPlugins())
      all.push_back({p->name, p->doc, &p->options, {}});
    if (*json) {
      std::printf("%s\n", ToJson(all).dump(2).c_str());
    } else {
      Print(all);
      std::printf("(options are job keys; every workload also takes job.%s)\n",
                  Replace(workloads::kCommonJobKeys, ", ", ", job.").c_str());
    }
    *exit_code = 0;
  });
}

}  // namespace fl::harness
