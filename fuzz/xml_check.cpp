#include "xml_check.hpp"

#include <cctype>
#include <cstdint>
#include <set>
#include <vector>

namespace ddpbisect::fuzz {

namespace {

bool xml_char(uint32_t c) {
  return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
         (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

class Checker {
 public:
  explicit Checker(std::string_view s) : s_(s) {}

  std::string run() {
    if (auto e = characters(); !e.empty()) return e;
    if (s_.substr(0, 5) == "<?xml") {
      size_t end = s_.find("?>");
      if (end == std::string_view::npos) return "unterminated XML declaration";
      i_ = end + 2;
    }
    space();
    if (!element()) return error_;
    space();
    if (i_ != s_.size()) return "content after the root element at byte " + std::to_string(i_);
    return "";
  }

 private:
  bool fail(const std::string& what) {
    error_ = what + " at byte " + std::to_string(i_);
    return false;
  }

  std::string characters() {
    for (size_t i = 0; i < s_.size();) {
      const unsigned char c = static_cast<unsigned char>(s_[i]);
      size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (len == 0 || i + len > s_.size()) return "bad UTF-8 at byte " + std::to_string(i);
      uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
      for (size_t k = 1; k < len; ++k) {
        const unsigned char d = static_cast<unsigned char>(s_[i + k]);
        if ((d & 0xc0) != 0x80) return "bad UTF-8 at byte " + std::to_string(i);
        cp = (cp << 6) | (d & 0x3f);
      }
      static const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < min_for_len[len] || (cp >= 0xd800 && cp <= 0xdfff))
        return "bad UTF-8 at byte " + std::to_string(i);
      if (!xml_char(cp))
        return "character U+" + std::to_string(cp) + " not allowed in XML at byte " +
               std::to_string(i);
      i += len;
    }
    return "";
  }

  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }

  bool name(std::string& out) {
    size_t start = i_;
    auto first = [](char c) {
      return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
    };
    auto rest = [&](char c) {
      return first(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    };
    if (i_ >= s_.size() || !first(s_[i_])) return false;
    while (i_ < s_.size() && rest(s_[i_])) ++i_;
    out = std::string(s_.substr(start, i_ - start));
    return true;
  }

  // At '&': a predefined entity or a character reference to an allowed character.
  bool reference() {
    size_t semi = s_.find(';', i_);
    if (semi == std::string_view::npos || semi - i_ > 12) return fail("a bare &");
    std::string_view ref = s_.substr(i_ + 1, semi - i_ - 1);
    bool ok = ref == "amp" || ref == "lt" || ref == "gt" || ref == "quot" || ref == "apos";
    if (!ok && ref.size() > 1 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      std::string_view digits = ref.substr(hex ? 2 : 1);
      uint32_t v = 0;
      ok = !digits.empty();
      for (char c : digits) {
        int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : hex && std::isxdigit(static_cast<unsigned char>(c))
                    ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                    : -1;
        if (d < 0 || v > 0x10ffff) {
          ok = false;
          break;
        }
        v = v * (hex ? 16 : 10) + static_cast<uint32_t>(d);
      }
      ok = ok && xml_char(v);
    }
    if (!ok) return fail("a bad reference &" + std::string(ref) + ";");
    i_ = semi + 1;
    return true;
  }

  bool element() {
    if (i_ >= s_.size() || s_[i_] != '<') return fail("expected an element");
    ++i_;
    std::string tag;
    if (!name(tag)) return fail("a bad tag name");
    std::set<std::string> attrs;
    while (true) {
      size_t before = i_;
      space();
      if (i_ >= s_.size()) return fail("unterminated tag");
      if (s_.substr(i_, 2) == "/>") {
        i_ += 2;
        return true;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      if (before == i_) return fail("no space before an attribute");
      std::string attr;
      if (!name(attr)) return fail("a bad attribute name");
      if (!attrs.insert(attr).second) return fail("a repeated attribute");
      space();
      if (i_ >= s_.size() || s_[i_] != '=') return fail("expected =");
      ++i_;
      space();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\''))
        return fail("an unquoted attribute");
      const char q = s_[i_++];
      while (i_ < s_.size() && s_[i_] != q) {
        if (s_[i_] == '<') return fail("< in an attribute");
        if (s_[i_] == '&') {
          if (!reference()) return false;
        } else {
          ++i_;
        }
      }
      if (i_ >= s_.size()) return fail("unterminated attribute");
      ++i_;
    }
    // Content: text, references and child elements, up to the end tag.
    while (true) {
      if (i_ >= s_.size()) return fail("no end tag for <" + tag + ">");
      if (s_[i_] == '&') {
        if (!reference()) return false;
      } else if (s_.substr(i_, 2) == "</") {
        i_ += 2;
        std::string end;
        if (!name(end) || end != tag) return fail("mismatched end tag for <" + tag + ">");
        space();
        if (i_ >= s_.size() || s_[i_] != '>') return fail("unterminated end tag");
        ++i_;
        return true;
      } else if (s_[i_] == '<') {
        if (!element()) return false;
      } else if (s_.substr(i_, 3) == "]]>") {
        return fail("]]> in text");
      } else {
        ++i_;
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace

std::string xml_problem(std::string_view xml) {
  return Checker(xml).run();
}

}  // namespace ddpbisect::fuzz
