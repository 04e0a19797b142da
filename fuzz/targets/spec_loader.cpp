// The spec loader on any text: it never throws or crashes, returns a spec exactly when it
// reports no error, anchors every error inside the text, and a spec it accepts normalizes to
// YAML that it accepts again, normalizing to the same thing (what `validate` prints is a spec).
#include <algorithm>

#include "common/json_util.hpp"
#include "fuzz_util.hpp"
#include "spec/loader.hpp"
#include "spec/serialize.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = (fuzz::scratch() / "spec.yaml").string();
  LoadResult r = load_spec_text(text, file);
  fuzz::check(r.spec.has_value() == r.errors.empty(), "a spec is returned exactly without errors");
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const Diagnostic& d : r.errors) {
    fuzz::check(!d.message.empty(), "every error says what is wrong", d.to_string());
    fuzz::check(d.line >= 0 && d.line <= lines && d.column >= 0, "errors point inside the text",
                d.to_string());
  }
  if (!r.spec) return 0;
  const nlohmann::json norm = spec_to_json(*r.spec);
  const std::string yaml = json_to_yaml(norm);
  LoadResult again = load_spec_text(yaml, file);
  fuzz::check(again.spec.has_value(), "the normalized spec loads again",
              (again.errors.empty() ? std::string() : again.errors[0].to_string()) + "\n" + yaml);
  fuzz::check(spec_to_json(*again.spec) == norm, "normalizing twice changes nothing",
              json_text(norm) + "\n" + json_text(spec_to_json(*again.spec)));
  return 0;
}
