// The passes of a strategy, in run order: the rows of spec/passes.def, each made by the factory
// its file defines.
#include "reduce/pass.hpp"
#include "spec/passes.hpp"

namespace ddpbisect {

namespace {
struct Factory {
  const char* name;
  std::unique_ptr<Pass> (*make)();
};
const Factory kFactories[] = {
#define DDPBISECT_PASS(name, dimension, strategy, help) {#name, make_##name##_pass},
#include "spec/passes.def"
};
}  // namespace

std::vector<std::unique_ptr<Pass>> make_passes(const std::string& strategy) {
  std::vector<std::unique_ptr<Pass>> out;
  const auto& infos = passes();
  for (size_t i = 0; i < infos.size(); ++i) {
    if (strategy != infos[i].strategy) continue;
    out.push_back(kFactories[i].make());  // the same .def rows, in the same order
    out.back()->name_ = infos[i].name;
    out.back()->dimension_ = infos[i].dimension;
  }
  return out;
}

}  // namespace ddpbisect
