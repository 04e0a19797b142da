// Sample count: the shortest prefix of the sample list that still fails (binary search).
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class SampleCountPass : public Pass {
 public:
  bool run(ReductionState& s, Oracle& oracle) override {
    const int64_t n = s.best.samples.size();
    if (n <= 1) return false;
    const IndexSet all = s.best.samples;
    auto with = [&](int64_t count) {
      TrialConfig c = s.best;
      c.samples = all.prefix(count);
      return c;
    };
    int64_t k = n;
    run_search(oracle, [&](const Ask& ask) {
      k = smallest_interesting(1, n, [&](int64_t v) { return v == n || ask(with(v)); });
    });
    if (k >= n) return false;
    s.accept(with(k), name(), oracle);
    return true;
  }
};
}  // namespace
std::unique_ptr<Pass> make_sample_count_pass() {
  return std::make_unique<SampleCountPass>();
}
}  // namespace ddpbisect
