// The planted fault kinds as data, from spec/fault_kinds.def: `FaultKind`, the names
// `workload.builtin.faults[].kind` accepts, and which fault keys each kind reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/vocabulary.hpp"

namespace ddpbisect {

enum class FaultKind {
#define DDPBISECT_FAULT(name, takes, required, meaning) name,
#include "spec/fault_kinds.def"
#undef DDPBISECT_FAULT
};

inline constexpr const char* kFaultKindNames[] = {
#define DDPBISECT_FAULT(name, takes, required, meaning) #name,
#include "spec/fault_kinds.def"
#undef DDPBISECT_FAULT
};

inline const char* to_string(FaultKind kind) {
  return vocabulary_name(kind, kFaultKindNames);
}
inline std::optional<FaultKind> parse_fault_kind(std::string_view text) {
  return vocabulary_parse<FaultKind>(text, kFaultKindNames);
}
inline std::vector<std::string> fault_kind_names() {
  return vocabulary_names(kFaultKindNames);
}

// What a hang fault stops: `mode: loader` (a deadlocked data thread) or `collectives`.
enum class HangMode { loader, collectives };
inline constexpr const char* kHangModeNames[] = {"loader", "collectives"};
inline const char* to_string(HangMode mode) {
  return vocabulary_name(mode, kHangModeNames);
}

// The keys of a fault that only some kinds read, and what an error says a kind needs.
struct FaultKey {
  std::string name;
  std::string needs;  // "the node-local path it opens"
};
const std::vector<FaultKey>& fault_option_keys();

struct FaultKindInfo {
  FaultKind kind;
  std::vector<std::string> takes, required;
  std::string meaning;
  bool takes_key(const std::string& key) const;
};
// Every kind, in the table's order; fault_kind_info(k) is its row.
const std::vector<FaultKindInfo>& fault_kinds();
const FaultKindInfo& fault_kind_info(FaultKind kind);

}  // namespace ddpbisect
