// The reduction vocabulary as data, from spec/passes.def: strategies, passes in run order and
// the dimensions they reduce. The loader validates `reduce.strategy` and `reduce.dimensions`
// against it; reduce/passes/registry.cpp builds the passes from the same list.
#pragma once

#include <string>
#include <vector>

namespace ddpbisect {

struct StrategyInfo {
  const char* name;
  const char* help;
};

struct PassInfo {
  const char* name;
  const char* dimension;  // the reduce.dimensions key that switches it off
  const char* strategy;
  const char* help;
};

const std::vector<StrategyInfo>& strategies();
const std::vector<PassInfo>& passes();  // every strategy's, each strategy's in run order

std::vector<std::string> strategy_names();
bool is_strategy(const std::string& name);
// The dimensions the passes reduce, each once, in run order: the reduce.dimensions keys.
const std::vector<std::string>& reduce_dimensions();
// "default (topology, steps, ...): HELP; ddmin (flat_ddmin): HELP" for --strategy's help.
std::string strategy_help();

}  // namespace ddpbisect
