#include "diagnose/flight_recorder.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/json_util.hpp"
#include "diagnose/frames.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {

class Unpickler {
 public:
  explicit Unpickler(std::string_view b) : b_(b) {}

  json run() {
    while (pos_ < b_.size()) {
      size_t at = pos_;
      auto op = static_cast<unsigned char>(b_[pos_++]);
      if (op == '.') return pop();
      if (!step(op)) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        throw std::runtime_error(std::string("unsupported pickle opcode ") + hex + " at byte " +
                                 std::to_string(at));
      }
    }
    throw std::runtime_error("pickle ends without STOP");
  }

 private:
  uint64_t le(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(b_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  void need(size_t n) const {
    if (pos_ + n > b_.size())
      throw std::runtime_error("truncated pickle at byte " + std::to_string(pos_));
  }
  std::string bytes(size_t n) {
    need(n);
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  json pop() {
    if (stack_.empty())
      throw std::runtime_error("pickle stack underflow at byte " + std::to_string(pos_));
    json v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  std::vector<json> pop_mark() {
    if (marks_.empty())
      throw std::runtime_error("pickle MARK missing at byte " + std::to_string(pos_));
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<json> items(std::make_move_iterator(stack_.begin() + static_cast<long>(m)),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return items;
  }
  void memo_put(size_t id) {
    if (stack_.empty()) throw std::runtime_error("pickle memo of nothing");
    if (memo_.size() <= id) memo_.resize(id + 1);
    memo_[id] = stack_.back();
  }
  json& top() {
    if (stack_.empty())
      throw std::runtime_error("pickle stack underflow at byte " + std::to_string(pos_));
    return stack_.back();
  }
  static std::string key(const json& k) {
    return k.is_string() ? k.get<std::string>() : json_text(k);
  }
  void set_items(std::vector<json> items) {
    json& d = top();
    for (size_t i = 0; i + 1 < items.size(); i += 2) d[key(items[i])] = std::move(items[i + 1]);
  }

  bool step(unsigned char op) {
    switch (op) {
      case 0x80:
        le(1);
        return true;  // PROTO
      case 0x95:
        le(8);
        return true;  // FRAME
      case '}':
        stack_.push_back(json::object());
        return true;
      case ']':
      case ')':
        stack_.push_back(json::array());
        return true;
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case 'N':
        stack_.push_back(nullptr);
        return true;
      case 0x88:
        stack_.push_back(true);
        return true;
      case 0x89:
        stack_.push_back(false);
        return true;
      case 'K':
        stack_.push_back(le(1));
        return true;
      case 'M':
        stack_.push_back(le(2));
        return true;
      case 'J':
        stack_.push_back(static_cast<int32_t>(le(4)));
        return true;
      case 0x8a: {  // LONG1
        size_t n = le(1);
        if (n > 8) throw std::runtime_error("pickle LONG1 wider than 64 bits");
        uint64_t v = le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~0ULL << (8 * n);
        stack_.push_back(static_cast<int64_t>(v));
        return true;
      }
      case 'G': {  // BINFLOAT, big-endian
        need(8);
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(b_[pos_ + i]);
        pos_ += 8;
        double d;
        std::memcpy(&d, &v, 8);
        stack_.push_back(d);
        return true;
      }
      case 'X':
      case 'T':
        stack_.push_back(bytes(le(4)));
        return true;
      case 0x8c:
      case 'U':
      case 'C':
        stack_.push_back(bytes(le(1)));
        return true;
      case 0x8d:
      case 'B':
        stack_.push_back(bytes(op == 'B' ? le(4) : le(8)));
        return true;
      case 'q':
        memo_put(le(1));
        return true;
      case 'r':
        memo_put(le(4));
        return true;
      case 0x94:
        memo_put(memo_.size());
        return true;  // MEMOIZE
      case 'h':
      case 'j': {
        size_t id = op == 'h' ? le(1) : le(4);
        if (id >= memo_.size())
          throw std::runtime_error("pickle memo miss at byte " + std::to_string(pos_));
        stack_.push_back(memo_[id]);
        return true;
      }
      case 's': {
        json v = pop(), k = pop();
        top()[key(k)] = std::move(v);
        return true;
      }
      case 'u':
        set_items(pop_mark());
        return true;
      case 'a': {
        json v = pop();
        top().push_back(std::move(v));
        return true;
      }
      case 'e':
        for (auto& v : pop_mark()) top().push_back(std::move(v));
        return true;
      case 't':
        stack_.push_back(json(pop_mark()));
        return true;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        size_t n = op - 0x84;
        if (stack_.size() < n) throw std::runtime_error("pickle stack underflow");
        json t = json::array();
        for (size_t i = stack_.size() - n; i < stack_.size(); ++i)
          t.push_back(std::move(stack_[i]));
        stack_.resize(stack_.size() - n);
        stack_.push_back(std::move(t));
        return true;
      }
      default:
        return false;
    }
  }

  std::string_view b_;
  size_t pos_ = 0;
  std::vector<json> stack_;
  std::vector<size_t> marks_;
  std::vector<json> memo_;
};

bool default_group(const json& e) {
  if (e.contains("process_group") && e["process_group"].is_array() && !e["process_group"].empty())
    return e["process_group"][0] == "0";
  return e.value("pg_id", 0) == 0;
}

}  // namespace

json pickle_to_json(std::string_view bytes) {
  return Unpickler(bytes).run();
}

bool looks_like_pickle(std::string_view b) {
  return b.size() > 2 && static_cast<unsigned char>(b[0]) == 0x80 && b[1] >= 2 && b[1] <= 5;
}

void read_flight_recorder(const std::string& path, std::optional<int> rank,
                          const std::vector<std::string>& library, Facts& facts) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  json dump;
  try {
    dump = pickle_to_json(ss.str());
  } catch (const std::exception&) {
    return;  // not a dump we can read: the rest of the evidence still counts
  }
  if (dump.contains("rank") && dump["rank"].is_number()) rank = dump["rank"].get<int>();
  if (!rank || !dump.contains("entries") || !dump["entries"].is_array()) return;
  facts.ranks_seen.insert(*rank);
  const json& entries = dump["entries"];
  size_t first = entries.size() > 64 ? entries.size() - 64 : 0;  // the newest are what matter
  for (size_t i = first; i < entries.size(); ++i) {
    const json& e = entries[i];
    if (!e.is_object() || e.value("is_p2p", false) || !default_group(e)) continue;
    Position p;
    p.rank = *rank;
    p.kind = "flight_recorder";
    p.seq = e.value("collective_seq_id", -1LL);
    p.op = normalize_op(e.value("profiling_name", ""));
    std::string state = e.value("state", "");
    // Gloo never moves `state` past "scheduled"; `retired` says the work ended.
    p.waiting = !e.value("retired", false) && state != "completed";
    p.last_enqueued = p.seq;
    for (const auto& f : e.value("frames", json::array())) {
      if (!f.is_object()) continue;
      Frame fr{f.value("filename", ""), f.value("line", 0), f.value("name", ""), true};
      fr.user = !is_library_frame(fr.file, library);
      p.frames.insert(p.frames.begin(), fr);  // recorded innermost first
    }
    p.source = path;
    facts.positions.push_back(std::move(p));
  }
}

void read_agent_trace(const std::string& path, Facts& facts) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return;
  auto head = json::parse(line, nullptr, false);
  if (!head.is_object() || head.value("kind", "") != "ddpbisect-collectives") return;
  int rank = head.value("rank", -1);
  if (rank < 0) return;
  json events = json::array();
  while (std::getline(in, line)) {
    auto e = json::parse(line, nullptr, false);
    if (e.is_object()) events.push_back(e);
  }
  std::sort(events.begin(), events.end(),
            [](const json& a, const json& b) { return a.value("i", 0) < b.value("i", 0); });
  agent_positions(rank, events, path, facts);
}

}  // namespace ddpbisect
