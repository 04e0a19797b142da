// The steps of `diagnose`, in order, each a function of what the step before produced (exposed
// for unit tests on hand-made events):
//   candidates  the failures worth considering: errors, crash dumps, exits a launcher or our
//               observer reported for ranks that printed nothing of their own, memory evidence
//               folded into the deaths it explains;
//   ranks       a rank for every event that lacks one: local ranks through launcher maps,
//               process ids, the rank a message names, copies of ranked events, the launcher's
//               report of the failed process, echoes that point, elimination;
//   hang        when nothing but timeouts and echoes remain, the wavefront: the rank that is not
//               where the others are, and its frame;
//   root        the root cause: real primaries before fragments and secondaries, earliest first;
//   echoes      what each rank saw, and whether it echoes the root cause;
//   explanation one paragraph for humans.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diagnose/diagnosis.hpp"
#include "diagnose/facts.hpp"

namespace ddpbisect {

std::vector<Event> find_candidates(std::vector<Event> events, const Facts& facts,
                                   const DiagnosisInput& input);

// After ranks are known: drops the exits a rank's own error explains, folds memory evidence
// into the deaths it explains.
void fold_exits(std::vector<Event>& candidates, const Facts& facts);

void attribute_ranks(std::vector<Event>& events, const Facts& facts);

// The ranks the job had, as far as the evidence tells.
std::set<int> known_world(const std::vector<Event>& events, const Facts& facts,
                          const DiagnosisInput& input);

struct HangVerdict {
  std::optional<int> culprit;
  std::vector<Frame> frames;                       // where the culprit was
  std::string reason;                              // how the evidence singles it out
  std::vector<int> waiting;                        // the ranks that waited for it
  std::vector<std::pair<int, std::string>> stuck;  // rank -> frame key, for the signature
};
// The wavefront over positions, stacks and echoes; nullopt when the evidence shows no hang.
std::optional<HangVerdict> attribute_hang(const std::vector<Event>& candidates,
                                          const std::vector<Event>& stacks, const Facts& facts,
                                          const std::set<int>& world, bool declared_hang);

// The ranks of `world` that printed no event, less those whose line the excerpt ends inside
// (they may have been saying anything): the candidates for "the rank that said nothing".
std::set<int> silent_ranks(const std::set<int>& world, const std::vector<Event>& events,
                           const Facts& facts);

// The rank most echoes point at ("Please check rank 0 logs", "closed by localRank 1").
std::optional<int> pointed_rank(const Facts& facts);
// The ranks that ran another collective than the rest at the first sequence number where ranks
// disagree (watchdog, Flight Recorder, DETAIL, agent); `why` says so in words.
std::vector<int> odd_ranks(const Facts& facts, std::string* why);

// Index of the root cause among `candidates`, nullopt when none is a failure.
std::optional<size_t> choose_root(const std::vector<Event>& candidates, bool launcher_failed);

std::vector<RankSummary> summarize_ranks(const std::vector<Event>& candidates, const Event& root,
                                         const std::set<int>& world, const DiagnosisInput& input,
                                         const std::optional<HangVerdict>& hang);

std::string explain_diagnosis(const Diagnosis& d);

// Whether an event is a real failure (a primary with an exception or a frame, not handled).
bool real_primary(const Event& e);

}  // namespace ddpbisect
