#include "spec/passes.hpp"

#include <algorithm>

#include "common/text.hpp"

namespace ddpbisect {

const std::vector<StrategyInfo>& strategies() {
  static const std::vector<StrategyInfo> v = {
#define DDPBISECT_STRATEGY(name, help) {#name, help},
#include "spec/passes.def"
  };
  return v;
}

const std::vector<PassInfo>& passes() {
  static const std::vector<PassInfo> v = {
#define DDPBISECT_PASS(name, dimension, strategy, help) {#name, #dimension, #strategy, help},
#include "spec/passes.def"
  };
  return v;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategies()) names.emplace_back(s.name);
  return names;
}

bool is_strategy(const std::string& name) {
  const auto names = strategy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

const std::vector<std::string>& reduce_dimensions() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> dims;
    for (const auto& p : passes())
      if (std::find(dims.begin(), dims.end(), p.dimension) == dims.end())
        dims.emplace_back(p.dimension);
    return dims;
  }();
  return v;
}

std::string strategy_help() {
  std::string out;
  const auto& all = strategies();
  for (size_t i = 0; i < all.size(); ++i) {
    std::vector<std::string> order;
    for (const auto& p : passes())
      if (std::string(p.strategy) == all[i].name) order.emplace_back(p.name);
    out += (i == 0 ? "" : "; ") + std::string(all[i].name) + " (" + join(order, ", ") +
           "): " + all[i].help;
  }
  return out;
}

}  // namespace ddpbisect
