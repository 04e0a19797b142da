#include "launch/helpers.hpp"

#include <filesystem>

#include "launch/agent_env.hpp"
#include "launch/isolation.hpp"
#include "launch/rank_plan.hpp"
#include "launch/warm_server.hpp"

namespace ddpbisect {

std::vector<Helper> helpers() {
  std::vector<Helper> out = {{"worker", "DDPBISECT_WORKER", worker_path(), false},
                             {"isolate", "DDPBISECT_ISOLATE", isolate_path(), false},
                             {"warm", "DDPBISECT_WARM", warm_stub_path(), false},
                             {"agent", "DDPBISECT_AGENT_DIR", agent_dir(), false}};
  std::error_code ec;
  for (Helper& h : out) h.found = !h.path.empty() && std::filesystem::exists(h.path, ec);
  return out;
}

}  // namespace ddpbisect
