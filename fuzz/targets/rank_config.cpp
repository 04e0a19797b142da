// config.json as a rank reads it (the worker, through read_rank_config): any bytes give a
// configuration or errors naming the file, never an exception or a crash; a configuration read
// survives its own JSON (what ddpbisect writes for the next rank reads back the same).
#include "fuzz_util.hpp"
#include "spec/serialize.hpp"
#include "spec/trial_config.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = (fuzz::scratch() / "config.json").string();
  RankConfigRead r = read_rank_config(text, file);
  fuzz::check(r.config.has_value() == r.errors.empty(), "a configuration exactly without errors");
  for (const auto& e : r.errors)
    fuzz::check(e.rfind(file, 0) == 0, "every error names the file", e);
  if (!r.config) return 0;
  const TrialConfig& t = r.config->trial;
  describe_config(t);
  const std::string written = rank_config_json(r.config->spec, t)
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  RankConfigRead again = read_rank_config(written, file);
  fuzz::check(again.config.has_value(), "what ddpbisect writes reads back",
              (again.errors.empty() ? "" : again.errors[0]) + "\n" + written);
  fuzz::check(again.config->trial.canonical() == t.canonical(), "the trial reads back the same",
              written);
  return 0;
}
