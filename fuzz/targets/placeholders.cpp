// Placeholders in argv ({samples}, {NAME}, "{{" and "}}" for braces): a malformed argument is
// reported with its offset and left alone by substitution; each name found is written at its
// offset; and literal text escaped with doubled braces comes back unchanged.
#include "spec/placeholders.hpp"
#include "fuzz_util.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string arg(reinterpret_cast<const char*>(data), size);
  std::string error;
  size_t offset = SIZE_MAX;
  auto names = placeholder_names(arg, &error, &offset);
  if (!names) {
    fuzz::check(!error.empty() && offset < arg.size(), "a malformed placeholder says where", arg);
    fuzz::check(substitute_placeholders(arg, {{"x", "y"}}) == arg,
                "substitution leaves a malformed argument alone", arg);
  } else {
    std::map<std::string, std::string> empty_values;
    for (const auto& [name, at] : *names) {
      fuzz::check(arg.compare(at, name.size() + 2, "{" + name + "}") == 0,
                  "each placeholder is written at its offset", arg);
      empty_values[name] = "";
    }
    fuzz::check(substitute_placeholders(arg, empty_values).size() <= arg.size(),
                "substituting empty values never grows the text", arg);
  }
  std::string escaped;
  for (char c : arg) escaped += (c == '{' || c == '}') ? std::string(2, c) : std::string(1, c);
  auto none = placeholder_names(escaped);
  fuzz::check(none && none->empty(), "doubled braces hold no placeholder", escaped);
  fuzz::check(substitute_placeholders(escaped, {{"samples", "0-9"}}) == arg,
              "doubled braces substitute back to the literal text", escaped);
  return 0;
}
