// The baseline (--strategy ddmin): textbook ddmin (subsets, then complements, then finer
// granularity; Zeller and Hildebrandt 2002) over every dimension flattened into one set of
// units, as a generic reducer would see the configuration: each sample, component and feature is
// a unit; an integer (nodes, procs per node, each param) of value v is v units, its value being
// the number kept (at least 1).
#include "reduce/engine.hpp"
#include "reduce/pass.hpp"

namespace ddpbisect {
namespace {
class FlatDdminPass : public Pass {
 public:
  Shrunk shrink(const TrialConfig& best, const Ask& ask, const Oracle&) const override {
    enum Kind { Sample, Component, Feature, Nodes, Procs, Param };
    struct Unit {
      Kind kind;
      size_t index;  // into samples / components / features, or the param's position
    };
    const TrialConfig& base = best;
    const auto samples = base.samples.indices();
    std::vector<std::string> params;
    for (const auto& [k, v] : base.params) params.push_back(k);
    std::vector<Unit> units;
    for (size_t i = 0; i < samples.size(); ++i) units.push_back({Sample, i});
    for (size_t i = 0; i < base.components.size(); ++i) units.push_back({Component, i});
    for (size_t i = 0; i < base.features.size(); ++i) units.push_back({Feature, i});
    for (int64_t i = 0; i < base.nodes; ++i) units.push_back({Nodes, 0});
    for (int64_t i = 0; i < base.procs_per_node; ++i) units.push_back({Procs, 0});
    for (size_t p = 0; p < params.size(); ++p)
      for (int64_t i = 0; i < base.params.at(params[p]); ++i) units.push_back({Param, p});

    auto config_of = [&](const ItemSet& items) {
      TrialConfig c = base;
      std::vector<int64_t> picked;
      c.components.clear();
      c.features.clear();
      c.nodes = c.procs_per_node = 0;
      for (auto& [k, v] : c.params) v = 0;
      for (size_t i : items) {
        const Unit& u = units[i];
        switch (u.kind) {
          case Sample:
            picked.push_back(samples[u.index]);
            break;
          case Component:
            c.components.push_back(base.components[u.index]);
            break;
          case Feature:
            c.features.push_back(base.features[u.index]);
            break;
          case Nodes:
            ++c.nodes;
            break;
          case Procs:
            ++c.procs_per_node;
            break;
          case Param:
            ++c.params[params[u.index]];
            break;
        }
      }
      c.nodes = std::max<int64_t>(c.nodes, 1);
      c.procs_per_node = std::max<int64_t>(c.procs_per_node, 1);
      for (auto& [k, v] : c.params) v = std::max<int64_t>(v, 1);
      c.samples = IndexSet::from_indices(picked);
      return c;
    };
    ItemSet every(units.size());
    for (size_t i = 0; i < units.size(); ++i) every[i] = i;
    const ItemSet kept = ddmin(
        every,
        [&](const ItemSet& items) {
          TrialConfig c = config_of(items);
          return !c.samples.empty() && ask(c);  // no samples is not a configuration
        },
        /*try_empty=*/false, /*complement_first=*/false);
    TrialConfig result = config_of(kept);
    if (result.canonical() == base.canonical()) return {};
    return {{name(), result}};
  }
};
}  // namespace
std::unique_ptr<Pass> make_flat_ddmin_pass() {
  return std::make_unique<FlatDdminPass>();
}
}  // namespace ddpbisect
