// One rank's log through the streaming parser, in memory: any bytes give bounded events (at most
// 400, 200 frames and 80 excerpt lines each, lines cut at 2000 bytes), every error event has a
// category, and a line that a category rule accepts also passes the quick filter the log reader
// skips text with (otherwise that rule could never fire on a real log).
#include "diagnose/stream_parser.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/event.hpp"
#include "diagnose/frames.hpp"
#include "diagnose/line_hygiene.hpp"
#include "fuzz_util.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Origin origin;
  origin.rank = 0;
  StreamParser p(origin, "rank0.log", {"mylib/"});
  LineCleaner cleaner;
  std::vector<CleanLine> clean;
  std::string previous;
  long long order = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    const std::string owned(line);
    if (!classify_line(owned).empty())
      fuzz::check(could_matter(line), "a line with a category passes the quick filter", owned);
    clean.clear();
    cleaner.clean(line, previous, clean);
    previous = owned;
    for (const CleanLine& c : clean) {
      if (!classify_line(c.text).empty())
        fuzz::check(could_matter(c.text), "a clean line with a category passes the filter", c.text);
      p.line(c, order % 7 == 0 ? -1.0 : static_cast<double>(order) / 10, order);
      ++order;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  p.finish();
  fuzz::check(p.idle(), "finish() leaves the parser idle");
  fuzz::check(p.events().size() <= 400, "events are bounded");
  for (const Event& e : p.events()) {
    fuzz::check(e.frames.size() <= 200 && e.excerpt.size() <= 80, "an event is bounded", e.message);
    for (const auto& l : e.excerpt) fuzz::check(l.size() <= 2000, "excerpt lines are cut", l);
    if (e.kind == EventKind::Error)
      fuzz::check(!e.category.empty(), "every error has a category", e.message);
    normalize_message(e.message);
    e.user_frame();
  }
  return 0;
}
