#include "spec/launchers.hpp"

#include <algorithm>

#include "common/text.hpp"

namespace ddpbisect {

namespace {
bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
}  // namespace

bool LauncherKind::requires_key(const std::string& key) const {
  return contains(requires_keys, key);
}

bool LauncherKind::takes(const std::string& key) const {
  return contains(takes_keys, key);
}

const std::vector<LauncherKind>& launcher_kinds() {
  static const std::vector<LauncherKind> v = {
#define DDPBISECT_LAUNCHER(name, required, takes, runs_here, help) \
  {#name, words(required), words(takes), runs_here, help},
#include "spec/launchers.def"
  };
  return v;
}

std::vector<std::string> launcher_kind_names() {
  std::vector<std::string> names;
  for (const auto& k : launcher_kinds()) names.push_back(k.name);
  return names;
}

const LauncherKind* find_launcher_kind(const std::string& name) {
  for (const auto& k : launcher_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

const std::vector<LauncherKey>& launcher_keys() {
  static const std::vector<LauncherKey> v = {
      {"hosts", "a list of hosts"},
      {"prefix", "a command prefix such as 'ip netns exec {host}'"},
      {"master_addr", "a master address"},
      {"options", "a list of options"},
      {"env", "variables per host"},
      {"cwd", "a working folder"}};
  return v;
}

nlohmann::json launcher_value(const LauncherSpec& l, const std::string& key) {
  using nlohmann::json;
  if (key == "hosts") return l.hosts.empty() ? json() : json(l.hosts);
  if (key == "prefix") return l.prefix.empty() ? json() : json(l.prefix);
  if (key == "master_addr") return l.master_addr.empty() ? json() : json(l.master_addr);
  if (key == "options") return l.options.empty() ? json() : json(l.options);
  if (key == "env") return l.host_env.empty() ? json() : json(l.host_env);
  if (key == "cwd") return l.cwd.empty() ? json() : json(l.cwd);
  return json();
}

}  // namespace ddpbisect
