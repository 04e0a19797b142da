// `ddpbisect doctor SPEC [--json]`: the pre-flight checklist (src/probe/doctor.hpp).
#include <iostream>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/signals.hpp"
#include "probe/doctor.hpp"

namespace ddpbisect::cli {

int doctor(const DoctorCliOptions& o) {
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return exit_code::kBadInput;
  const Spec& spec = *loaded;
  if (!o.stage.empty() && !spec.find_stage(o.stage)) {
    std::cerr << "ddpbisect doctor: --stage: no stage named '" << o.stage << "' in " << spec.file
              << "\n";
    return exit_code::kBadInput;
  }
  DoctorOptions opt;
  opt.stage = o.stage;
  opt.out_dir = o.out.empty() ? spec.report_dir + "/doctor" : o.out;
  opt.sanity = !o.no_sanity;
  opt.comm = !o.no_comm;
  if (!o.json)
    std::cerr << "ddpbisect doctor: checking " << spec.file << " (launcher " << spec.launcher.kind
              << ")...\n";
  DoctorResult res = run_doctor(spec, opt);
  if (int sig = interrupt_signal()) {
    std::cerr << "ddpbisect doctor: interrupted by " << signal_name(sig) << "\n";
    return 128 + sig;
  }
  int fails = 0, warns = 0, passes = 0;
  for (const auto& f : res.findings)
    (f.status == FindingStatus::Fail ? fails : f.status == FindingStatus::Warn ? warns : passes)++;
  if (o.json) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : res.findings) findings.push_back(f.to_json());
    nlohmann::json j = {{"spec", spec.file},
                        {"findings", findings},
                        {"nodes", res.nodes},
                        {"comm", res.comm},
                        {"summary", {{"fail", fails}, {"warn", warns}, {"pass", passes}}}};
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& f : res.findings) {
      std::string tag = to_string(f.status);
      for (auto& ch : tag) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      std::cout << tag << "  " << f.check << ": " << f.message << "\n";
      if (!f.fix.empty() && f.status != FindingStatus::Pass)
        std::cout << "      fix: " << f.fix << "\n";
    }
    if (res.comm.contains("gloo") && !res.comm["gloo"].value("table", "").empty())
      std::cout << "\n" << res.comm["gloo"]["table"].get<std::string>();
    std::cout << "\ndoctor: " << fails << " failed, " << warns << " warning(s), " << passes
              << " passed\n";
  }
  return fails ? exit_code::kChecksFailed : exit_code::kOk;
}

}  // namespace ddpbisect::cli
