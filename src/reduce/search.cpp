#include "reduce/search.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace ddpbisect {

namespace {

using Answers = std::map<std::string, bool>;  // by canonical configuration

struct Unanswered {  // thrown out of a replay at its first question without an answer
  TrialConfig config;
};

// Runs `search` on `answers` (and what the Oracle already knows): the first question left
// without an answer, or nullopt when the search ran to its end.
std::optional<TrialConfig> replay(const Oracle& oracle, const Search& search,
                                  const Answers& answers) {
  try {
    search([&](const TrialConfig& c) {
      if (auto it = answers.find(c.canonical()); it != answers.end()) return it->second;
      if (std::optional<bool> v = oracle.known(c)) return *v;
      throw Unanswered{c};
    });
  } catch (const Unanswered& u) {
    return u.config;
  }
  return std::nullopt;
}

// The questions the search may ask after `pending`, likeliest path first: best-first over
// assumed answers, each weighted by how often questions were interesting so far. Four times the
// slots, so that running speculative trials stay wanted while they are still on a likely path.
std::vector<TrialConfig> speculate(const Oracle& oracle, const Search& search,
                                   const Answers& answers, const TrialConfig& pending) {
  const int width = oracle.width(pending);
  if (width <= 1) return {};
  const size_t horizon = static_cast<size_t>(4 * width);
  const double yes = oracle.interesting_odds();
  struct Node {
    double chance;
    Answers assumed;
    TrialConfig question;
  };
  std::vector<Node> open = {{1.0, answers, pending}};
  std::vector<std::pair<double, TrialConfig>> found;
  std::set<std::string> seen = {pending.canonical()};
  for (int expanded = 0; !open.empty() && found.size() < horizon && expanded < 64; ++expanded) {
    auto top = std::max_element(open.begin(), open.end(),
                                [](const Node& a, const Node& b) { return a.chance < b.chance; });
    Node n = std::move(*top);
    open.erase(top);
    for (bool answer : {true, false}) {
      Answers assumed = n.assumed;
      assumed[n.question.canonical()] = answer;
      std::optional<TrialConfig> next = replay(oracle, search, assumed);
      if (!next) continue;
      const double chance = n.chance * (answer ? yes : 1.0 - yes);
      if (seen.insert(next->canonical()).second) found.push_back({chance, *next});
      open.push_back({chance, std::move(assumed), std::move(*next)});
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<TrialConfig> out;
  for (auto& [chance, config] : found) out.push_back(std::move(config));
  return out;
}

}  // namespace

void run_search(Oracle& oracle, const Search& search, const Search& lookahead) {
  Answers answers;
  while (std::optional<TrialConfig> q = replay(oracle, search, answers)) {
    std::vector<TrialConfig> ahead = speculate(oracle, lookahead ? lookahead : search, answers, *q);
    answers[q->canonical()] = oracle.interesting(*q, ahead);
  }
  if (!lookahead) oracle.settle();
}

}  // namespace ddpbisect
