// `ddpbisect validate SPEC`: all errors with file:line:column, or the normalized spec.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/json_util.hpp"
#include "launch/torchrun.hpp"
#include "spec/loader.hpp"
#include "spec/serialize.hpp"

namespace ddpbisect::cli {

int validate(const ValidateOptions& o) {
  auto spec = load_spec_or_report(o.spec);
  if (!spec) return bad_input();
  if (spec->command)
    for (const auto& n : launch_form_notes(spec->command->argv)) note("workload.command: " + n);
  auto j = spec_to_json(*spec);
  if (o.json)
    std::cout << json_text(j, 2) << "\n";
  else
    std::cout << json_to_yaml(j);
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
