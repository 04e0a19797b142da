// The signature of a failure (what "fails the same way" means) and the JSON of a diagnosis.
#include <regex>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "diagnose/frames.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {
json rank_json(const std::optional<int>& r) {
  return r ? json(*r) : json(nullptr);
}
}  // namespace

std::string rank_words(const std::optional<int>& rank) {
  return rank ? "rank " + std::to_string(*rank) : "an unknown rank";
}

std::string rank_words(const Origin& origin) {
  return !origin.rank && !origin.process.empty() ? origin.process : rank_words(origin.rank);
}

json Signature::to_json() const {
  return {{"category", category}, {"exception", exception}, {"frame", frame},
          {"message", message},   {"ranks", ranks},         {"stuck", stuck}};
}

Signature Signature::from_json(const json& j) {
  Signature s;
  s.category = j.value("category", "");
  s.exception = j.value("exception", "");
  s.frame = j.value("frame", "");
  s.message = j.value("message", "");
  for (const auto& r : j.value("ranks", json::array()))
    if (r.is_number_integer() && r.get<int>() >= 0) s.ranks.push_back(r.get<int>());
  s.stuck = j.value("stuck", std::vector<std::string>{});
  return s;
}

std::string Signature::to_string() const {
  std::string s = category;
  if (!exception.empty()) s += " " + exception;
  if (!frame.empty()) s += " at " + frame;
  if (!stuck.empty()) s += " (stuck in " + join(stuck, ", ") + ")";
  return s;
}

bool same_failure(const Signature& target, const Signature& cand, const std::string& level,
                  const std::string& regex, const std::string& candidate_text) {
  if (target.category != cand.category) return false;
  if (!regex.empty()) {
    try {
      if (!std::regex_search(candidate_text + "\n" + cand.message, std::regex(regex))) return false;
    } catch (const std::regex_error&) {
      return false;
    }
  }
  if (level == "loose") return true;
  if (target.category == cat::hang) {
    // One hang, read more or less precisely: the same stuck frames, and the culprit's frame
    // where both readings name one.
    if (target.stuck != cand.stuck) return false;
    if (!target.frame.empty() && !cand.frame.empty() && target.frame != cand.frame) return false;
    return level != "strict" || target.message == cand.message;
  }
  if (target.exception != cand.exception || target.frame != cand.frame) return false;
  if (level == "strict") return target.message == cand.message;
  return true;
}

bool debug_rerun_explains(const Signature& target, const Signature& rerun) {
  if (same_failure(target, rerun, "loose")) return true;
  bool stuck = target.category == cat::hang || target.category == cat::comm_timeout ||
               target.category == cat::trial_timeout;
  return stuck && rerun.category == cat::collective_mismatch;
}

bool matches_pinned(const std::string& category, const std::string& exception,
                    const std::string& frame, const Signature& c) {
  if (category.empty()) return true;
  return c.category == category && (exception.empty() || c.exception == exception) &&
         (frame.empty() || c.frame == frame);
}

json Diagnosis::to_json() const {
  json ranks_json = json::array();
  for (const auto& r : ranks) {
    json j = {
        {"rank", r.rank}, {"category", r.category}, {"primary", r.primary}, {"summary", r.summary}};
    j["echo_of"] = r.echo_of ? json(*r.echo_of) : json(nullptr);
    if (!r.stuck_in.empty()) j["stuck_in"] = r.stuck_in;
    ranks_json.push_back(j);
  }
  json root_json = nullptr;
  if (failed) {
    const Frame* f = best_frame(root);
    json frames = json::array();
    for (const auto& fr : root.frames)
      frames.push_back(
          {{"file", fr.file}, {"line", fr.line}, {"function", fr.function}, {"user", fr.user}});
    root_json = {
        {"rank", rank_json(root.origin.rank)},
        {"rank_from", root.origin.rank ? json(root.origin.rank_from) : json(nullptr)},
        {"process", root.origin.rank || root.origin.process.empty() ? json(nullptr)
                                                                    : json(root.origin.process)},
        {"category", root.category},
        {"primary", is_primary(root.category)},
        {"exception", root.exception},
        {"message", root.message},
        {"frame", f ? json(frame_display(f)) : json(nullptr)},
        {"file", f ? json(f->file) : json(nullptr)},
        {"line", f ? json(f->line) : json(nullptr)},
        {"function", f ? json(f->function) : json(nullptr)},
        {"frames", frames},
        {"excerpt", root.excerpt},
        {"source", root.source},
        {"time", root.time >= 0 ? json(root.time) : json(nullptr)}};
    root_json["confidence"] = confidence;
    root_json["evidence"] = evidence;
    if (!rank_candidates.empty()) root_json["rank_candidates"] = rank_candidates;
    if (last_spawned_local_rank)
      root_json["rank_hint"] = {
          {"local_rank", *last_spawned_local_rank},
          {"from",
           "the launcher's failed command line: the last process it started, which is "
           "not necessarily the one that failed"}};
  }
  return {{"failed", failed},
          {"root_cause", root_json},
          {"signature", failed ? signature.to_json() : json(nullptr)},
          {"ranks", ranks_json},
          {"explanation", explanation}};
}

}  // namespace ddpbisect
