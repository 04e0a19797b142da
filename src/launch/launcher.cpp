// The launcher factory: one row per kind of spec/launchers.def, so a new kind is its file and
// its row there.
#include "launch/launcher.hpp"

#include <mutex>
#include <stdexcept>

#include "common/notice.hpp"

namespace ddpbisect {

std::string Launcher::warm_socket(const Spec& spec, const std::string& log) const {
  (void)log;
  if (spec.command && !spec.command->preload.empty() && !spec.command->preload_default) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      notice("ddpbisect: warning: workload.preload: the " + name() +
             " launcher starts ranks cold (warm starts need the local launcher)");
    });
  }
  return "";
}

std::unique_ptr<Launcher> make_launcher(const LauncherSpec& spec) {
  struct Factory {
    const char* kind;
    std::unique_ptr<Launcher> (*make)(const LauncherSpec&);
  };
  static const Factory factories[] = {
#define DDPBISECT_LAUNCHER(name, required, takes, runs_here, help) {#name, make_##name##_launcher},
#include "spec/launchers.def"
  };
  for (const auto& f : factories)
    if (spec.kind == f.kind) return f.make(spec);
  // The loader accepts only the kinds of spec/launchers.def.
  throw std::invalid_argument("no launcher of kind '" + spec.kind + "'");
}

}  // namespace ddpbisect
