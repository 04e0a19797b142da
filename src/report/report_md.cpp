#include "report/report_md.hpp"

#include <re2/re2.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/text.hpp"
#include "common/version.hpp"
#include "reduce/progress.hpp"

extern char** environ;

namespace ddpbisect {

using nlohmann::json;

std::string redact_value(const std::string& name, const std::string& value) {
  std::string upper = name;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* secret : {"TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL"})
    if (upper.find(secret) != std::string::npos) return "<redacted>";
  static const RE2 inline_secret(
      R"((?i)((?:token|secret|key|password|passwd|credential)s?[=:]\s*)[^\s,;&]+)");
  static const RE2 url_password(R"((://[^:/@\s]+:)[^@\s]+@)");
  std::string v = value;
  RE2::GlobalReplace(&v, inline_secret, "\\1<redacted>");
  RE2::GlobalReplace(&v, url_password, "\\1<redacted>@");
  return v;
}

namespace {
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

// The value of the first "prefix<sep>value" line (/proc/cpuinfo uses ':', /etc/os-release '=').
std::string first_line_of(std::ifstream& in, const std::string& prefix, char sep) {
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(sep);
    if (starts_with(line, prefix) && at != std::string::npos) {
      std::string v(trim(line.substr(at + 1)));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "";
}

void environment(std::ostringstream& md) {
  utsname u{};
  uname(&u);
  std::ifstream cpu("/proc/cpuinfo"), os("/etc/os-release");
  md << "| | |\n|---|---|\n";
  md << "| ddpbisect | " << kVersion << " |\n";
  md << "| OS | " << cell(first_line_of(os, "PRETTY_NAME", '=')) << " |\n";
  md << "| kernel | " << u.sysname << " " << u.release << " " << u.machine << " |\n";
  md << "| CPU | " << cell(first_line_of(cpu, "model name", ':')) << " ("
     << sysconf(_SC_NPROCESSORS_ONLN) << " online) |\n";
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    std::string name = kv.substr(0, eq);
    if (starts_with(name, "NCCL_") || starts_with(name, "TORCH_") || starts_with(name, "MASTER_") ||
        starts_with(name, "GLOO_") || starts_with(name, "CUDA_") || name == "OMP_NUM_THREADS")
      vars.push_back("| `" + name + "` | `" + cell(redact_value(name, kv.substr(eq + 1))) + "` |");
  }
  std::sort(vars.begin(), vars.end());
  for (const auto& v : vars) md << v << "\n";
}
}  // namespace

std::string report_markdown(const ReportInputs& r, const Oracle& oracle) {
  std::ostringstream md;
  const auto& st = oracle.stats();
  md << "# ddpbisect report: " << r.spec->name << "\n\n";
  if (r.status == "not_reproduced") {
    md << "No stage of `" << r.spec->file << "` failed (" << r.tried.size()
       << " trials), so there was nothing to reduce.\n\n";
    md << "| configuration | status |\n|---|---|\n";
    for (const auto& [c, status] : r.tried)
      md << "| " << cell(describe_config(c)) << " (" << c.stage << ") | " << status << " |\n";
    return md.str();
  }
  md << "**Root cause:** " << cell(r.target.to_string()) << "  \n";
  md << "**Status:** " << r.status << "; reproduced " << r.confirm_failures << "/" << r.confirm_runs
     << " times; " << st.trials << " trials in " << std::lround(oracle.elapsed_s()) << " s\n\n";
  md << "| | original (stage `" << r.stage << "`) | minimal |\n|---|---|---|\n";
  auto row = [&](const char* what, const std::string& a, const std::string& b) {
    md << "| " << what << " | " << cell(a) << " | " << cell(b) << " |\n";
  };
  row("ranks",
      std::to_string(r.original.nodes) + " node(s) x " + std::to_string(r.original.procs_per_node),
      std::to_string(r.minimal.nodes) + " node(s) x " + std::to_string(r.minimal.procs_per_node));
  row("samples", std::to_string(r.original.samples.size()),
      std::to_string(r.minimal.samples.size()) +
          (r.minimal.samples.size() <= 16 ? " (" + r.minimal.samples.to_string() + ")" : ""));
  row("components", join(r.original.components, ", "), join(r.minimal.components, ", "));
  row("features", join(r.original.features, ", "), join(r.minimal.features, ", "));
  for (const auto& [k, v] : r.original.params)
    row(k.c_str(), std::to_string(v),
        r.minimal.params.count(k) ? std::to_string(r.minimal.params.at(k)) : "");
  md << "\n## Reproduce\n\n```\nddpbisect check " << r.out_dir
     << "/repro/repro.yaml --expect fail\n"
     << "bash " << r.out_dir << "/repro/run.sh      # no ddpbisect needed\n```\n";
  // The root cause as the minimal trial diagnosed it.
  std::ifstream outcome(r.minimal_run.dir + "/outcome.json");
  json o = json::parse(outcome, nullptr, false);
  if (!o.is_discarded() && o.contains("diagnosis") && o["diagnosis"].is_object()) {
    const json& d = o["diagnosis"];
    md << "\n## Root cause\n\n" << cell(d.value("explanation", "")) << "\n\n```\n";
    for (const auto& line : d["root_cause"].value("excerpt", json::array()))
      md << redact_value("", line.get<std::string>()) << "\n";
    md << "```\n\n| rank | category | what it saw |\n|---|---|---|\n";
    for (const auto& rk : d.value("ranks", json::array())) {
      std::string what = rk.value("summary", "");
      if (rk["echo_of"].is_number())
        what += " (echo of rank " + std::to_string(rk["echo_of"].get<int>()) + ")";
      md << "| " << rk.value("rank", 0) << " | " << rk.value("category", "") << " | "
         << cell(redact_value("", what)) << " |\n";
    }
  }
  md << "\n## Environment\n\n";
  environment(md);
  md << "\n## Reduction\n\n| trial | pass | ranks | samples | components | features "
        "|\n|---|---|---|---|---|---|\n";
  for (const auto& t : r.trace)
    md << "| " << t.trial << " | " << t.pass << " | " << t.config.world_size() << " | "
       << t.config.samples.size() << " | " << t.config.components.size() << " | "
       << t.config.features.size() << " |\n";
  md << "\nTrials: " << st.trials << " run (" << st.failed << " failed, " << st.passed
     << " passed, " << st.infra << " infra), " << st.cached
     << " answered from the cache. Details: `report.json`, `journal.jsonl`, `trials/`.\n";
  return md.str();
}

}  // namespace ddpbisect
