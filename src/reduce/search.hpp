// A search asks whether candidates are interesting, one at a time, and computes its result from
// the answers alone (the engine's ddmin, culprit and binary searches, a pass's scan). run_search
// answers it through the Oracle, and with more than one slot it speculates: it replays the
// search under assumed answers to find the questions it would ask next (both outcomes of the
// pending one, the likelier first), and the Oracle starts those trials in free slots and cancels
// the ones an answer has made moot. A binary search over J slots so advances about log2(J+1)
// levels per trial, and the result is the sequential search's whatever --jobs says: only the
// Oracle's answers ever reach it.
#pragma once

#include <functional>

#include "reduce/oracle.hpp"

namespace ddpbisect {

using Ask = std::function<bool(const TrialConfig&)>;
// Must be deterministic given the answers `ask` returns, and may run many times: it should only
// compute, writing its result where the caller reads it after run_search returns.
using Search = std::function<void(const Ask& ask)>;

// `lookahead`, when given, is `search` followed by what the caller runs after it (the passes left
// in a round): it asks what `search` asks, in the same order, and only speculation replays it, so
// that free slots start the next search's likely questions while this one waits. Its trials are
// left running when `search` ends (the next questions keep or cancel them); without a lookahead
// the speculative trials are cancelled then.
void run_search(Oracle& oracle, const Search& search, const Search& lookahead = {});

}  // namespace ddpbisect
