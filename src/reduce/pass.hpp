// A reduction pass shrinks one dimension of the best configuration found so far, asking the
// Oracle whether each candidate is still interesting, through a search (search.hpp) so that
// --jobs speeds up every pass. One pass per file under passes/; the list
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

// ddmin over a list of names in the configuration (components, features), empty set first.
bool reduce_names(ReductionState& s, Oracle& oracle, std::vector<std::string> TrialConfig::*field,
                  const std::string& pass);

class Pass {
 public:
  virtual ~Pass() = default;
  // Shrinks state.best; returns whether it made progress.
  virtual bool run(ReductionState& state, Oracle& oracle) = 0;
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
