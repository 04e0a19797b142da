// `ddpbisect doctor SPEC [--json]`: the pre-flight checklist (src/probe/doctor.hpp).
#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/interrupt.hpp"
#include "common/json_util.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "probe/doctor.hpp"

namespace ddpbisect::cli {

namespace {

void print_findings(const DoctorResult& res, std::map<FindingStatus, int>& n) {
  for (const auto& f : res.findings) {
    std::string tag = to_string(f.status);
    for (auto& ch : tag) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::cout << tag << "  " << f.check << ": " << visible_text(f.message) << "\n";
    if (!f.fix.empty() && (f.status == FindingStatus::Fail || f.status == FindingStatus::Warn))
      std::cout << "      fix: " << visible_text(f.fix) << "\n";
  }
  if (res.comm.contains("gloo") && !res.comm["gloo"].value("table", "").empty())
    std::cout << "\n" << res.comm["gloo"]["table"].get<std::string>();
  std::cout << "\ndoctor: " << n[FindingStatus::Fail] << " failed, "
            << plural(n[FindingStatus::Warn], "warning") << ", " << n[FindingStatus::Pass]
            << " passed, " << n[FindingStatus::Skip] << " skipped\n";
}

}  // namespace

int doctor(const DoctorCliOptions& o) {
  auto loaded = load_spec_or_report(o.spec);
  if (!loaded) return bad_input();
  const Spec& spec = *loaded;
  if (!o.stage.empty() && !spec.find_stage(o.stage)) {
    // The same message, list and suggestion as every --stage.
    trial_config_or_report(spec, o.stage, {});
    return bad_input();
  }
  DoctorOptions opt;
  opt.stage = o.stage;
  opt.out_dir = o.out.empty() ? spec.report_dir + "/doctor" : o.out;
  opt.sanity = !o.no_sanity;
  opt.comm = !o.no_comm;
  note("checking " + spec.file + " (launcher " + spec.launcher.kind + ")...");
  DoctorResult res = run_doctor(spec, opt);
  if (int sig = interrupt_signal()) {
    note(std::string("interrupted by ") + signal_name(sig));
    return exit_code::interrupted(sig);
  }
  std::map<FindingStatus, int> n;
  for (const auto& f : res.findings) ++n[f.status];
  if (o.json) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : res.findings) findings.push_back(f.to_json());
    nlohmann::json j = {{"spec", spec.file},
                        {"findings", findings},
                        {"nodes", res.nodes},
                        {"comm", res.comm},
                        {"summary",
                         {{"fail", n[FindingStatus::Fail]},
                          {"warn", n[FindingStatus::Warn]},
                          {"pass", n[FindingStatus::Pass]},
                          {"skip", n[FindingStatus::Skip]}}}};
    std::cout << json_text(j, 2) << "\n";
  } else {
    print_findings(res, n);
  }
  return n[FindingStatus::Fail] ? exit_code::kFailed : exit_code::kOk;
}

}  // namespace ddpbisect::cli
