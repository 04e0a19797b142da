#include "diagnose/line_hygiene.hpp"

#include <re2/re2.h>

#include <array>
#include <memory>

#include "common/text.hpp"

namespace ddpbisect {

namespace {

enum class Tag { None, Rank, LocalRank, Pid, Host, Level, PyLevel };

struct Prefix {
  Tag tag;   // what the first capture group says
  Tag tag2;  // what the second says (None: nothing)
  const char* pattern;
};

// Anchored prefixes seen in front of what a rank printed; the first capture is `tag`.
const std::vector<Prefix>& prefixes() {
  static const std::vector<Prefix> v = {
      {Tag::Rank, Tag::None, R"(\[(?:rank)?(\d{1,6})\]: ?)"},                // torch 2.x, [3]:
      {Tag::LocalRank, Tag::None, R"(\[default(\d{1,6})\]: ?)"},             // torchrun --tee
      {Tag::Host, Tag::LocalRank, R"(\[([A-Za-z][\w.-]*):(\d{1,3})\]: ?)"},  // [host:local]:
      {Tag::Rank, Tag::None, R"(\[\d+,(?:mpirank:)?(\d+)(?:,[^\]]*)?\]<std(?:out|err)>: ?)"},
      {Tag::Rank, Tag::Pid, R"(\(\w+ rank=(\d+) pid=(\d+)[^)]*\) )"},    // vLLM workers
      {Tag::Pid, Tag::None, R"(\((?:\w+ )?pid=(\d+)[^)]*\) )"},          // Ray workers
      {Tag::None, Tag::None, R"((?:stdout|stderr): )"},                  // accelerate test
      {Tag::None, Tag::None, R"(\d+(?:\.\d+)?s\t\d+\t)"},                // Kaggle's columns
      {Tag::Rank, Tag::None, R"((\d{1,5}): )"},                          // srun --label
      {Tag::Rank, Tag::None, R"([A-Za-z][\w.-]*:(\d{1,5})(?::| \|) )"},  // host:RANK: or |
      {Tag::Rank, Tag::None, R"(\[(\d{1,5})\] )"},                       // [N] tags
      {Tag::Rank, Tag::None, R"([Rr]ank: *(\d{1,6}) \| )"},              // ParlAI's logger
      // Timestamps, alone or opening a logger's header.
      {Tag::PyLevel, Tag::None,
       R"((?:\[[A-Za-z][\w-]*\] )?\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?:\s*(?:- |\| )?(?:[\w.]+ (?:- |\| ))?\[?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?(?: - | \| [\w.]+ \| | \| |:? +))?\s*)"},
      {Tag::PyLevel, Tag::None, R"((DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:)"},  // logging
      {Tag::PyLevel, Tag::None,  // vLLM's logger: "ERROR 07-23 19:34:51 [file.py:487] "
       R"((DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.-]+:\d+\] ?)"},
      {Tag::PyLevel, Tag::None,
       R"([\w.]+: \[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\] )"},                          // torch 2.1
      {Tag::Level, Tag::None, R"(([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\] ]+\] )"},  // glog
      {Tag::Level, Tag::None, R"(\[([IWEF])(?:\d{4} \d\d:\d\d:\d\d\.\d+)? [^\] ]+\] ?)"},  // c10
      {Tag::PyLevel, Tag::None,
       R"(\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\|[^\]]*\] (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ >> )?)"},
      {Tag::PyLevel, Tag::None,
       R"(\[\d\d/\d\d/\d\d \d\d:\d\d:\d\d\] +(DEBUG|INFO|WARNING|ERROR|CRITICAL) +)"},
      {Tag::Level, Tag::None, R"( {10,}(DEBUG|INFO|WARNING|ERROR|CRITICAL) {2,})"},  // rich
      {Tag::PyLevel, Tag::None,
       R"(\d\d/\d\d/\d{4} \d\d:\d\d:\d\d \[(DEBUG|INFO|WARNING|ERROR)[^\]]*\]: )"},
      {Tag::PyLevel, Tag::None, R"(\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\] (?:\[[^\]]*\] )?)"},
  };
  return v;
}

const std::vector<std::unique_ptr<RE2>>& compiled_prefixes() {
  static const auto v = [] {
    std::vector<std::unique_ptr<RE2>> out;
    for (const auto& p : prefixes()) out.push_back(std::make_unique<RE2>(p.pattern));
    return out;
  }();
  return v;
}

char level_letter(const std::string& level) {
  if (level == "CRITICAL" || level == "FATAL" || level == "F") return 'E';
  return level.empty() ? 0 : level[0];
}

void record(Tag tag, const std::string& value, CleanLine& line) {
  if (tag == Tag::None || value.empty()) return;
  if (tag == Tag::Host) {
    line.host = value;
    return;
  }
  if (tag == Tag::Level || tag == Tag::PyLevel) {
    line.level = level_letter(value);
    line.python_log = tag == Tag::PyLevel;
    return;
  }
  long n = 0;
  for (char c : value) n = n * 10 + (c - '0');
  if (tag == Tag::Rank) line.rank = static_cast<int>(n);
  if (tag == Tag::LocalRank) line.local_rank = static_cast<int>(n);
  if (tag == Tag::Pid) line.pid = n;
}

const RE2& anchor_regex() {
  static const RE2 re(
      R"(\[(?:rank|default)\d{1,6}\]:|Traceback \(most recent call last\)|Exception ignored in|terminate called after|Fatal Python error|memory allocation of \d+ bytes failed|Killed\s*$|\[[IWEF](?:\d{4} \d\d:\d\d:\d\d\.\d+)? \w+\.(?:cpp|cc|hpp|h):\d+\])");
  return re;
}

// Where, after position 0, text starts that usually starts a line: another rank's prefix, a
// traceback, an abort, a c10 log record. 0 when none.
size_t anchor_at(std::string_view text, size_t from = 1) {
  re2::StringPiece input(text.data(), text.size()), whole;
  if (from >= text.size() ||
      !anchor_regex().Match(input, from, text.size(), RE2::UNANCHORED, &whole, 1))
    return 0;
  return static_cast<size_t>(whole.data() - text.data());
}

// Where a line of its own starts mid-line: another rank's prefixed output always; an anchor
// only after a progress bar, not inside a message ("Original Traceback", "is killed by
// signal: Killed") or a quoted path. 0 when nowhere.
size_t embedded_start(std::string_view text) {
  static const RE2 progress("\\d+%\\||it/s\\]|s/it\\]|\xe2\x96\x88");  // ...|█
  for (size_t at = anchor_at(text); at > 0; at = anchor_at(text, at + 1)) {
    std::string_view before = text.substr(0, at);
    char c = before.back();
    bool after_bar =
        c == ']' || c == '|' ||
        (c == ' ' && RE2::PartialMatch(re2::StringPiece(before.data(), before.size()), progress));
    bool rank_prefix =
        starts_with(text.substr(at), "[rank") || starts_with(text.substr(at), "[default");
    if (rank_prefix || after_bar) return at;
  }
  return 0;
}

// Whether `text` starts with a prefix of shape `shape`; its length in `len`.
bool shape_match(std::string_view text, const std::string& shape, size_t& len) {
  size_t i = 0, j = 0;
  while (j < shape.size()) {
    if (i >= text.size()) return false;
    if (shape[j] == '9') {
      if (text[i] < '0' || text[i] > '9') return false;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
      ++j;
      continue;
    }
    if (text[i] != shape[j]) return false;
    ++i, ++j;
  }
  len = i;
  return true;
}

bool boundary(char c) {
  return c == ' ' || c == '\t' || c == ':' || c == ']' || c == ')' || c == '|' || c == '>';
}

}  // namespace

std::string prefix_shape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      out += '9';
      while (i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool strip_known_prefix(std::string_view& text, CleanLine& line) {
  const auto& re = compiled_prefixes();
  for (size_t i = 0; i < re.size(); ++i) {
    re2::StringPiece input(text.data(), text.size());
    std::string a, b;
    RE2::Arg arg_a(&a), arg_b(&b);
    const RE2::Arg* args[] = {&arg_a, &arg_b};
    if (!RE2::ConsumeN(&input, *re[i], args, re[i]->NumberOfCapturingGroups())) continue;
    size_t used = static_cast<size_t>(input.data() - text.data());
    if (used == 0) continue;
    const Prefix& p = prefixes()[i];
    if (used == text.size() && p.tag == Tag::Rank) continue;  // "[0]:" is a banner entry
    // "train.py:411: UserWarning:" is a warning's location, not a host and a rank.
    if (p.tag == Tag::Rank && text.substr(0, used).find(".py:") != std::string_view::npos) continue;
    // "[N] " tags are followed by text, not by more spaces (bash's "[1]+  Killed" is a job).
    if (p.tag == Tag::Rank && text[0] == '[' && used >= 2 && text[used - 2] == ']' &&
        text[used - 1] == ' ' && used < text.size() && text[used] == ' ')
      continue;
    record(p.tag, a, line);
    record(p.tag2, b, line);
    text.remove_prefix(used);
    return true;
  }
  return false;
}

bool LineCleaner::strip_learned(std::string_view& text) const {
  for (const auto& shape : learned_) {
    size_t len = 0;
    if (shape_match(text, shape, len) && len < text.size()) {
      text.remove_prefix(len);
      return true;
    }
  }
  return false;
}

// A prefix in front of `anchor` that the previous line starts with too is the file's own prefix
// (a pdsh host, a pod name, a custom tag): learn its shape. Cut at a separator, never a word.
bool LineCleaner::learn(std::string_view text, size_t anchor, std::string_view previous) {
  std::string_view candidate = text.substr(0, anchor);
  if (candidate.empty() || candidate[0] == ' ' || candidate[0] == '\t' ||
      candidate.find('"') != std::string_view::npos || previous.empty())
    return false;
  for (size_t cut = candidate.size(); cut >= 2; --cut) {
    if (!boundary(candidate[cut - 1])) continue;
    std::string shape = prefix_shape(candidate.substr(0, cut));
    size_t len = 0;
    if (!shape_match(previous, shape, len)) continue;
    // A bare "Word: " is an exception's type or a logger's name, not a prefix.
    std::string_view word = trim(candidate.substr(0, cut));
    bool bare_word = word.size() > 1 && word.back() == ':' &&
                     word.find_first_of(" .-0123456789[(") == std::string_view::npos;
    if (bare_word) return false;
    if (learned_.size() >= kMaxLearned) learned_.erase(learned_.begin());
    learned_.push_back(shape);
    return true;
  }
  return false;
}

void LineCleaner::one(std::string_view text, std::string_view previous, std::vector<CleanLine>& out,
                      int depth) {
  CleanLine line;
  for (int i = 0; i < 8; ++i)
    if (!strip_known_prefix(text, line) && !strip_learned(text)) break;
  size_t anchor = depth < 8 ? anchor_at(text) : 0;
  // The previous line is compared from where its own known prefixes end, as this one is (a
  // timestamp column before a job's tag, on every line).
  std::string_view prev = previous;
  if (anchor > 0) {
    CleanLine ignored;
    for (int i = 0; i < 8; ++i)
      if (!strip_known_prefix(prev, ignored)) break;
  }
  if (anchor > 0 && learn(text, anchor, prev)) {
    // The text before the anchor was this file's prefix: strip it and read the rest again.
    std::string_view rest = text;
    strip_learned(rest);
    size_t first = out.size();
    one(rest, previous, out, depth + 1);
    for (size_t i = first; i < out.size(); ++i) {
      if (!out[i].rank) out[i].rank = line.rank;
      if (!out[i].local_rank) out[i].local_rank = line.local_rank;
    }
    return;
  }
  size_t at = depth < 8 ? embedded_start(text) : 0;
  if (at > 0) {
    line.text.assign(text.substr(0, at));
    out.push_back(line);
    one(text.substr(at), previous, out, depth + 1);
    return;
  }
  line.text.assign(text);
  out.push_back(std::move(line));
}

void LineCleaner::clean(std::string_view physical, std::string_view previous,
                        std::vector<CleanLine>& out) {
  while (!physical.empty() && (physical.back() == '\r' || physical.back() == '\n'))
    physical.remove_suffix(1);
  // Carriage returns (and SageMaker's "#015" for them) rewrite the line: each piece stands alone.
  size_t start = 0;
  while (start <= physical.size()) {
    size_t cr = physical.find('\r', start);
    size_t esc = physical.find("#015", start);
    size_t end = std::min(cr, esc);
    std::string_view piece = physical.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!piece.empty() || end == std::string_view::npos) one(piece, previous, out, 0);
    if (end == std::string_view::npos) break;
    start = end + (end == cr ? 1 : 4);
  }
}

}  // namespace ddpbisect
