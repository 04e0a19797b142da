#include "spec/fault_kinds.hpp"

#include <algorithm>

#include "common/text.hpp"

namespace ddpbisect {

const std::vector<FaultKey>& fault_option_keys() {
  static const std::vector<FaultKey> v = {{"message", "the message it raises"},
                                          {"exit_code", "the code it exits with"},
                                          {"mode", "what hangs"},
                                          {"delay", "the extra time per step"},
                                          {"path", "the node-local path it opens"},
                                          {"component", "the component that gets no gradient"}};
  return v;
}

bool FaultKindInfo::takes_key(const std::string& key) const {
  return std::find(takes.begin(), takes.end(), key) != takes.end();
}

const std::vector<FaultKindInfo>& fault_kinds() {
  static const std::vector<FaultKindInfo> v = {
#define DDPBISECT_FAULT(name, takes, required, meaning) \
  {FaultKind::name, words(takes), words(required), meaning},
#include "spec/fault_kinds.def"
#undef DDPBISECT_FAULT
  };
  return v;
}

const FaultKindInfo& fault_kind_info(FaultKind kind) {
  return fault_kinds()[static_cast<size_t>(kind)];
}

}  // namespace ddpbisect
