// Durations ("250ms", "90s", "5m", "2h", seconds): parsing never fails loudly, what parses is a
// non-negative number of milliseconds, and format_duration's text parses back to the same value.
#include <cstring>

#include "common/duration.hpp"
#include "fuzz_util.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto d = parse_duration(text)) {
    fuzz::check(d->count() >= 0, "a parsed duration is not negative", text);
    const std::string again = format_duration(*d);
    auto back = parse_duration(again);
    fuzz::check(back && *back == *d, "format_duration parses back", again);
  }
  // Any duration a spec can hold (up to 1e15 ms) survives format -> parse.
  if (size >= 8) {
    int64_t ms = 0;
    std::memcpy(&ms, data, sizeof ms);
    ms = static_cast<int64_t>(static_cast<uint64_t>(ms) % 1'000'000'000'000'001ull);
    const std::string t = format_duration(Millis(ms));
    auto back = parse_duration(t);
    fuzz::check(back && back->count() == ms, "every duration round-trips", t);
  }
  return 0;
}
