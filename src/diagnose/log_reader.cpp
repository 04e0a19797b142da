#include "diagnose/log_reader.hpp"

#include <fcntl.h>
#include <re2/re2.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "diagnose/stream_parser.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

namespace {

// "[rank3]: ", "[default3]:" (torchrun --tee), "[3]:" at the start of a combined log's line.
bool split_prefix(std::string_view line, int& rank, std::string_view& rest) {
  if (line.size() < 4 || line[0] != '[') return false;
  size_t close = line.find("]:");
  if (close == std::string_view::npos || close > 16) return false;
  std::string_view tag = line.substr(1, close - 1);
  if (starts_with(tag, "rank"))
    tag.remove_prefix(4);
  else if (starts_with(tag, "default"))
    tag.remove_prefix(7);
  if (tag.empty() || tag.size() > 6) return false;
  int r = 0;
  for (char c : tag) {
    if (c < '0' || c > '9') return false;
    r = r * 10 + (c - '0');
  }
  rank = r;
  rest = line.substr(close + 2);
  if (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
  return true;
}

std::vector<float> read_times(const std::string& path) {
  std::vector<float> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    try {
      out.push_back(std::stof(line) / 1000.0f);
    } catch (const std::exception&) {
      out.push_back(-1);
    }
  }
  return out;
}

class Reader {
 public:
  Reader(const LogInput& log, const std::vector<std::string>& library)
      : log_(log), library_(library) {
    times_ = read_times(log.times_path);
  }

  void run() {
    int fd = open(log_.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::vector<char> buf(1 << 20);
    std::string carry;
    while (true) {
      ssize_t n = read(fd, buf.data(), buf.size());
      if (n <= 0) break;
      std::string_view chunk(buf.data(), static_cast<size_t>(n));
      if (!carry.empty()) {
        size_t nl = chunk.find('\n');
        if (nl == std::string_view::npos) {
          carry.append(chunk);
          if (carry.size() > (4 << 20)) carry.resize(4 << 20);  // one absurd line
          continue;
        }
        carry.append(chunk.substr(0, nl));
        line(carry);
        carry.clear();
        chunk.remove_prefix(nl + 1);
      }
      size_t last_nl = chunk.rfind('\n');
      if (last_nl == std::string_view::npos) {
        carry.assign(chunk);
        continue;
      }
      scan(chunk.substr(0, last_nl + 1));
      carry.assign(chunk.substr(last_nl + 1));
    }
    if (!carry.empty()) line(carry);
    close(fd);
    for (auto& [r, p] : parsers_) p->finish();
  }

  void collect(std::map<int, std::vector<Event>>& by_rank) {
    for (auto& [r, p] : parsers_)
      for (auto& e : p->events()) by_rank[e.rank].push_back(std::move(e));
  }

 private:
  bool all_idle() const {
    for (const auto& [r, p] : parsers_)
      if (!p->idle()) return false;
    return true;
  }

  // Whole lines: while every parser is idle, jump to the next line that could matter.
  void scan(std::string_view text) {
    const RE2& trigger = trigger_regex();
    size_t pos = 0;
    while (pos < text.size()) {
      if (all_idle()) {
        re2::StringPiece input(text.data(), text.size()), match;
        if (!trigger.Match(input, pos, text.size(), RE2::UNANCHORED, &match, 1)) {
          skip(text, pos, text.size());
          return;
        }
        size_t at = static_cast<size_t>(match.data() - text.data());
        size_t start = text.rfind('\n', at);
        start = start == std::string_view::npos || start < pos ? pos : start + 1;
        skip(text, pos, start);
        pos = start;
      }
      size_t nl = text.find('\n', pos);
      line(text.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }

  // Skipped text: line numbers matter only to index capture times; without them the byte
  // offset orders events as well, and counting newlines would cost a second pass.
  void skip(std::string_view text, size_t from, size_t to) {
    if (!times_.empty())
      lineno_ += std::count(text.begin() + static_cast<long>(from),
                            text.begin() + static_cast<long>(to), '\n');
    offset_ += static_cast<long long>(to - from);
  }

  void line(std::string_view text) {
    offset_ += static_cast<long long>(text.size()) + 1;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    double t = lineno_ < static_cast<long long>(times_.size())
                   ? times_[static_cast<size_t>(lineno_)]
                   : -1.0;
    int rank = log_.rank;
    std::string_view rest = text;
    int prefixed = -1;
    if (split_prefix(text, prefixed, rest)) rank = prefixed;
    parser(rank).line(rest, t, times_.empty() ? offset_ : lineno_);
    ++lineno_;
  }

  StreamParser& parser(int rank) {
    auto& p = parsers_[rank];
    if (!p) p = std::make_unique<StreamParser>(rank, log_.path, library_);
    return *p;
  }

  const LogInput& log_;
  const std::vector<std::string>& library_;
  std::vector<float> times_;
  std::map<int, std::unique_ptr<StreamParser>> parsers_;
  long long lineno_ = 0;
  long long offset_ = 0;
};

// torchrun's error.json: {"message": {"message": "Type: msg", "extraInfo": {"py_callstack": ...,
// "timestamp": ...}}}
void read_error_file(const std::string& path, int rank, const std::vector<std::string>& library,
                     std::map<int, std::vector<Event>>& by_rank) {
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("message")) return;
  const auto& m = j["message"];
  std::string text, stack, timestamp;
  if (m.is_string()) {
    text = m.get<std::string>();
  } else if (m.is_object()) {
    text = m.value("message", "");
    if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
      stack = m["extraInfo"].value("py_callstack", "");
      auto ts = m["extraInfo"].value("timestamp", nlohmann::json());
      timestamp = ts.is_string() ? ts.get<std::string>() : ts.is_number() ? ts.dump() : "";
    }
  }
  StreamParser p(rank, path, library);
  long long order = 0;
  double t = -1;
  try {
    if (!timestamp.empty()) t = std::stod(timestamp);
  } catch (const std::exception&) {
  }
  for (const auto& l : split(stack.empty() ? text : stack, '\n')) p.line(l, t, order++);
  p.finish();
  for (auto& e : p.events()) {
    if (e.kind != EventKind::Error) continue;
    e.source = path;
    by_rank[rank].push_back(e);
    return;
  }
  Event e;
  e.rank = rank;
  e.time = t;
  size_t colon = text.find(": ");
  e.exception = colon == std::string::npos ? "" : text.substr(0, colon);
  e.message = colon == std::string::npos ? text : text.substr(colon + 2);
  e.category = classify_exception(e.exception, e.message);
  e.source = path;
  by_rank[rank].push_back(e);
}

}  // namespace

void read_logs(const DiagnosisInput& input, std::map<int, std::vector<Event>>& by_rank) {
  for (const auto& log : input.logs) {
    Reader r(log, input.library_patterns);
    r.run();
    r.collect(by_rank);
  }
  for (size_t i = 0; i < input.error_files.size(); ++i)
    read_error_file(input.error_files[i], input.error_file_ranks[i], input.library_patterns,
                    by_rank);
}

}  // namespace ddpbisect
