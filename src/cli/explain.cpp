// `ddpbisect explain PATH... [--json]`: the root cause of a failed run from its logs alone.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/json_util.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "report/headline.hpp"

namespace ddpbisect::cli {

namespace {

void print_root(const Diagnosis& d) {
  const Event& r = d.root;
  std::cout << "root cause: "
            << (r.origin.rank ? "rank " + std::to_string(*r.origin.rank)
                              : "unknown rank (" + d.unknown_rank_why() + ")")
            << ", " << r.category << (is_primary(r.category) ? "" : " (no primary failure found)")
            << "\n";
  // The culprit's frame first: where to look.
  const Frame* at = r.user_frame();
  if (!at && !r.frames.empty()) at = &r.frames.back();
  if (at) std::cout << "  at " << at->file << ":" << at->line << " in " << at->function << "\n";
  // The message, every line indented under the root cause, PyTorch's C++ frames folded.
  std::string message = fold_cpp_frames(visible_text(r.message.substr(0, 4000)));
  replace_all(message, "\n", "\n    ");
  std::cout << "  " << (r.exception.empty() ? "" : r.exception + ": ") << message << "\n";
  if (r.origin.rank && !r.origin.rank_from.empty())
    std::cout << "  (rank from " << r.origin.rank_from << ")\n";
  if (!d.confidence.empty()) std::cout << "  confidence: " << d.confidence << "\n";
  std::vector<const Frame*> user;
  for (const auto& f : r.frames)
    if (f.user) user.push_back(&f);
  if (user.size() > 1) {
    std::cout << "  user frames (innermost last):\n";
    for (const Frame* f : user)
      std::cout << "    " << f->file << ":" << f->line << " in " << f->function << "\n";
  }
}

}  // namespace

int explain(const ExplainOptions& o) {
  PathInputs read = inputs_from_paths(o.paths);
  if (read.error) {
    error(*read.error);
    return bad_input();
  }
  DiagnosisInput& in = read.input;
  in.library_patterns = o.ignore_frames;
  Diagnosis d = diagnose(in);
  if (o.json) {
    std::cout << json_text(d.to_json(), 2) << "\n";
    return d.failed ? exit_code::kOk : exit_code::kNotReproduced;
  }
  if (!d.failed) {
    std::cout << "no failure found in " << in.logs.size() + in.error_files.size()
              << " log file(s)\n";
    return exit_code::kNotReproduced;
  }
  print_root(d);
  std::cout << "ranks:\n";
  for (const auto& s : d.ranks) {
    std::cout << "  rank " << s.rank << ": " << (s.category.empty() ? "" : s.category + " - ")
              << visible_text(s.summary);
    if (d.root.origin.rank && s.rank == *d.root.origin.rank)
      std::cout << "  <- root cause";
    else if (s.echo_of)
      std::cout << "  (echo of rank " << *s.echo_of << ")";
    if (!s.stuck_in.empty()) std::cout << "  [stuck in " << s.stuck_in << "]";
    std::cout << "\n";
  }
  std::cout << "signature: " << d.signature.to_string() << "\n"
            << visible_text(d.explanation) << "\n";
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
