// The launcher kinds as data, from spec/launchers.def: what `launcher.kind` accepts, which
// launcher.* keys each kind requires and reads, whether its ranks run on this machine.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace ddpbisect {

struct LauncherKind {
  std::string name;
  std::vector<std::string> requires_keys;  // launcher.* keys it cannot do without
  std::vector<std::string> takes_keys;     // every launcher.* key it reads
  bool runs_here = false;                  // ranks run on this machine
  std::string help;

  bool requires_key(const std::string& key) const;
  bool takes(const std::string& key) const;
};

const std::vector<LauncherKind>& launcher_kinds();
std::vector<std::string> launcher_kind_names();
// The kind of that name; nullptr when there is none.
const LauncherKind* find_launcher_kind(const std::string& name);
// Every launcher.* key any kind reads, besides `kind`, in the order the normalized spec writes
// them, with what an error says a launcher that requires it needs.
struct LauncherKey {
  std::string name;
  std::string needs;  // "a list of hosts"
};
const std::vector<LauncherKey>& launcher_keys();
// The value of launcher.KEY as the normalized spec writes it; null when it is not set.
nlohmann::json launcher_value(const LauncherSpec& launcher, const std::string& key);

}  // namespace ddpbisect
