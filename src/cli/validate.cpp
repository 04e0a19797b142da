// `ddpbisect validate SPEC`: all errors with file:line:column, or the normalized spec.
#include <iostream>

#include "cli/commands.hpp"
#include "common/exit_codes.hpp"
#include "spec/loader.hpp"
#include "spec/serialize.hpp"

namespace ddpbisect::cli {

int validate(const ValidateOptions& o) {
  LoadResult r = load_spec_file(o.spec);
  if (!r.spec) {
    for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
    std::cerr << r.errors.size() << (r.errors.size() == 1 ? " error" : " errors") << " in "
              << o.spec << "\n";
    return exit_code::kBadInput;
  }
  auto j = spec_to_json(*r.spec);
  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << json_to_yaml(j);
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
