// `ddpbisect explain PATH... [--json]`: the root cause of a failed run from its logs alone.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "diagnose/diagnosis.hpp"

namespace ddpbisect::cli {

int explain(const ExplainOptions& o) {
  DiagnosisInput in;
  in.library_patterns = o.ignore_frames;
  std::string err = inputs_from_paths(o.paths, in);
  if (!err.empty()) {
    error(err);
    return bad_input();
  }
  Diagnosis d = diagnose(in);
  if (o.json) {
    std::cout << d.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return d.failed ? exit_code::kOk : exit_code::kNotReproduced;
  }
  if (!d.failed) {
    std::cout << "no failure found in " << in.logs.size() + in.error_files.size()
              << " log file(s)\n";
    return exit_code::kNotReproduced;
  }
  const Event& r = d.root;
  std::cout << "root cause: rank " << r.rank << ", " << r.category
            << (is_primary(r.category) ? "" : " (no primary failure found)") << "\n";
  std::cout << "  " << (r.exception.empty() ? "" : r.exception + ": ") << r.message.substr(0, 600)
            << "\n";
  std::vector<const Frame*> user;
  for (const auto& f : r.frames)
    if (f.user) user.push_back(&f);
  if (!user.empty()) {
    std::cout << "  user frames (innermost last):\n";
    for (const Frame* f : user)
      std::cout << "    " << f->file << ":" << f->line << " in " << f->function << "\n";
  }
  std::cout << "ranks:\n";
  for (const auto& s : d.ranks) {
    std::cout << "  rank " << s.rank << ": " << (s.category.empty() ? "" : s.category + " - ")
              << s.summary;
    if (s.rank == r.rank)
      std::cout << "  <- root cause";
    else if (s.echo_of)
      std::cout << "  (echo of rank " << *s.echo_of << ")";
    if (!s.stuck_in.empty()) std::cout << "  [stuck in " << s.stuck_in << "]";
    std::cout << "\n";
  }
  std::cout << "signature: " << d.signature.to_string() << "\n" << d.explanation << "\n";
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
