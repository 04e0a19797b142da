// Sample count: the shortest prefix of the sample list that still fails (binary search).
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class SampleCountPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    const int64_t n = best.samples.size();
    if (n <= 1) return {};
    auto with = [&](int64_t count) {
      TrialConfig c = best;
      c.samples = best.samples.prefix(count);
      return c;
    };
    const int64_t k = smallest_interesting(1, n, [&](int64_t v) { return v == n || ask(with(v)); });
    if (k >= n) return {};
    return {{name(), with(k)}};
  }
};
}  // namespace
std::unique_ptr<Pass> make_sample_count_pass() {
  return std::make_unique<SampleCountPass>();
}
}  // namespace ddpbisect
