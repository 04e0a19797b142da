// A reduction pass shrinks one dimension of the best configuration found so far, asking the
// Oracle whether each candidate is still interesting. One pass per file under passes/; the
// registry (passes/registry.cpp) lists them in the order they run, like llvm-reduce's
// DeltaPasses.def: adding a dimension is a new file and a line there.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "reduce/oracle.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct ReductionState {
  const Spec* spec = nullptr;
  TrialConfig best;  // the smallest interesting configuration so far
  std::vector<TraceEntry> trace;

  // Tests `candidate`; when interesting it becomes the best. Returns whether it did.
  bool try_accept(const TrialConfig& candidate, const std::string& pass, Oracle& oracle);
  void accept(const TrialConfig& candidate, const std::string& pass, const Oracle& oracle);
};

// ddmin over a list of names in the configuration (components, features), empty set first.
bool reduce_names(ReductionState& s, Oracle& oracle, std::vector<std::string> TrialConfig::*field,
                  const std::string& pass);

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // The `reduce.dimensions` key that switches the pass off.
  virtual std::string dimension() const = 0;
  // Shrinks state.best; returns whether it made progress.
  virtual bool run(ReductionState& state, Oracle& oracle) = 0;
};

// The passes of a strategy: "default" or "ddmin" (the textbook baseline: one ddmin over the
// sample, component and feature sets flattened together).
std::vector<std::unique_ptr<Pass>> make_passes(const std::string& strategy);

// Registry entries, one per file.
std::unique_ptr<Pass> make_topology_pass();
std::unique_ptr<Pass> make_steps_pass();
std::unique_ptr<Pass> make_sample_count_pass();
std::unique_ptr<Pass> make_sample_indices_pass();
std::unique_ptr<Pass> make_components_pass();
std::unique_ptr<Pass> make_features_pass();
std::unique_ptr<Pass> make_params_pass();
std::unique_ptr<Pass> make_flat_ddmin_pass();

}  // namespace ddpbisect
