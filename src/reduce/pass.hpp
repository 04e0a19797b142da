// A reduction pass shrinks one dimension of the best configuration found so far, asking the
// Oracle whether each candidate is still interesting, through a search (search.hpp) so that
// --jobs speeds up every pass. A pass is a pure function of the answers (`shrink`), so that the
// search can also look past its end: while a pass waits, free slots run the questions the passes
// after it would ask next (`run`'s lookahead). One pass per file under passes/; the list
// in spec/passes.def (like llvm-reduce's DeltaPasses.def) gives their names, dimensions, strategy
// and run order: adding a pass is a new file and a row there.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "reduce/oracle.hpp"
#include "reduce/search.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct ReductionState {
  const Spec* spec = nullptr;
  TrialConfig best;  // the smallest interesting configuration so far
  std::vector<TraceEntry> trace;

  void accept(const TrialConfig& candidate, const std::string& pass, const Oracle& oracle);
};

// What a pass accepted, in order, each under the name it is traced as (the pass's, or e.g.
// "params.batch_size"); the last one is the new best. Empty: no progress.
using Shrunk = std::vector<std::pair<std::string, TrialConfig>>;

// ddmin over a list of names in the configuration (components, features), empty set first.
Shrunk shrink_names(const TrialConfig& best, const Ask& ask,
                    std::vector<std::string> TrialConfig::*field, const std::string& pass);

class Pass {
 public:
  virtual ~Pass() = default;
  // The pass on `best`, asking `ask` about its candidates. Deterministic given the answers and
  // what `oracle` already knows: it may run many times, on configurations not accepted yet.
  virtual Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle& oracle) const = 0;
  // Shrinks state.best through the Oracle; returns whether it made progress. `lookahead` (may be
  // empty): this pass's search followed by what runs after it, for speculation only.
  bool run(ReductionState& state, Oracle& oracle, const Search& lookahead = {}) const;
  // Its row of spec/passes.def: the name, and the reduce.dimensions key that switches it off.
  const std::string& name() const { return name_; }
  const std::string& dimension() const { return dimension_; }

 private:
  friend std::vector<std::unique_ptr<Pass>> make_passes(const std::string& strategy);
  std::string name_, dimension_;
};

// The passes of a strategy of spec/passes.def, in run order (passes/registry.cpp).
std::vector<std::unique_ptr<Pass>> make_passes(const std::string& strategy);

// One per row of spec/passes.def, each defined in passes/NAME.cpp.
#define DDPBISECT_PASS(name, dimension, strategy, help) std::unique_ptr<Pass> make_##name##_pass();
#include "spec/passes.def"

}  // namespace ddpbisect
