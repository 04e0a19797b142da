// The escapers that keep hostile text inert, each against the property that makes it safe where
// its output goes: visible_text (valid UTF-8, no control character a terminal or XML parser would
// act on), markup_escape (no live <, >, quotes or stray &), the markdown helpers (no live
// markdown, code spans and fences that the text cannot close), shell_quote (a POSIX shell reads
// back exactly the text, nothing live), and junit_xml (well-formed XML whatever the fields).
#include <cstring>

#include "common/text.hpp"
#include "fuzz_util.hpp"
#include "report/junit.hpp"
#include "report/markdown.hpp"
#include "xml_check.hpp"

using namespace ddpbisect;

namespace {

// Decodes UTF-8; false on any malformed sequence. Calls f(code point).
template <typename F>
bool decode_utf8(std::string_view s, F f) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    f(cp);
    i += len;
  }
  return true;
}

void check_visible(const std::string& in, const std::string& out, const char* what) {
  bool ok = decode_utf8(out, [&](uint32_t cp) {
    const bool c0 = cp < 0x20 && cp != '\n' && cp != '\t';
    const bool c1 = cp >= 0x7f && cp <= 0x9f;
    const bool xml_nonchar = cp == 0xfffe || cp == 0xffff;
    fuzz::check(!c0 && !c1 && !xml_nonchar, "no control character or XML non-character survives",
                in);
  });
  fuzz::check(ok, what, in);
}

void check_markup(const std::string& in, const std::string& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    fuzz::check(c != '<' && c != '>' && c != '"' && c != '\'', "markup_escape leaves no live <>\"'",
                in);
    if (c == '&') {
      bool entity = false;
      for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"})
        entity = entity || out.compare(i, std::strlen(e), e) == 0;
      fuzz::check(entity, "every & starts an entity", in);
    }
  }
}

bool alnum(const std::string& s, size_t i) {
  return i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]));
}

// md_text: one line, and each character markdown or HTML would act on is backslash-escaped
// (an underscore between letters cannot start emphasis and may stay).
void check_md_text(const std::string& in, const std::string& out) {
  fuzz::check(out.find('\n') == std::string::npos, "md_text is one line", in);
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\\') {
      fuzz::check(i + 1 < out.size(), "md_text ends on no lone backslash", in);
      ++i;
      continue;
    }
    const char c = out[i];
    const bool intraword = c == '_' && i > 0 && alnum(out, i - 1) && alnum(out, i + 1);
    fuzz::check(intraword || !std::strchr("`*_[]<>&#!~|", c), "md_text escapes markdown", in);
    fuzz::check(i > 0 || !std::strchr("-+=", c), "md_text escapes a leading list marker", in);
  }
}

size_t longest_run(const std::string& s, char ch) {
  size_t best = 0, run = 0;
  for (char c : s) best = std::max(best, run = c == ch ? run + 1 : 0);
  return best;
}

// md_code: `N ticks, text, N ticks`, the text holding no run of N ticks and no newline.
void check_md_code(const std::string& in, const std::string& out) {
  size_t n = 0;
  while (n < out.size() && out[n] == '`') ++n;
  fuzz::check(
      n > 0 && out.size() >= 2 * n && out.compare(out.size() - n, n, std::string(n, '`')) == 0,
      "md_code is fenced by equal backtick runs", in);
  const std::string inner = out.substr(n, out.size() - 2 * n);
  fuzz::check(longest_run(inner, '`') < n, "no backtick run inside md_code closes it", in);
  fuzz::check(inner.find('\n') == std::string::npos, "md_code is one line", in);
}

void check_md_block(const std::string& in, const std::string& out) {
  size_t n = 0;
  while (n < out.size() && out[n] == '`') ++n;
  fuzz::check(n >= 3, "a code block opens with a fence of at least three backticks", in);
  const std::string fence(n, '`');
  fuzz::check(out.size() >= 2 * n + 2 && out.compare(out.size() - n - 1, n + 1, fence + "\n") == 0,
              "a code block ends with its fence", in);
  const std::string body = out.substr(n, out.size() - 2 * n - 1);
  fuzz::check(longest_run(body, '`') < n, "no backtick run inside a code block closes it", in);
}

// Reads back one word a POSIX shell would see: '...' quoted parts and safe bare characters.
void check_shell(const std::string& in, const std::string& out) {
  std::string word;
  bool quoted = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (quoted) {
      if (c == '\'')
        quoted = false;
      else
        word += c;
    } else if (c == '\'') {
      quoted = true;
    } else if (c == '\\' && i + 1 < out.size()) {
      word += out[++i];
      fuzz::check(out[i] == '\'', "shell_quote escapes only quotes outside quotes", out);
    } else {
      fuzz::check(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%+=:,./_-", c),
                  "shell_quote leaves only inert characters outside quotes", out);
      word += c;
    }
  }
  fuzz::check(!quoted, "shell_quote closes its quotes", out);
  fuzz::check(word == in, "the shell reads back exactly the text", out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  const std::string v = visible_text(s);
  check_visible(s, v, "visible_text is valid UTF-8");
  fuzz::check(visible_text(v) == v, "visible_text is idempotent", s);
  check_markup(s, markup_escape(s));
  check_md_text(s, md_text(s));
  check_md_text(s, md_cell(s));
  if (!v.empty()) check_md_code(s, md_code(s));
  check_md_block(s, md_code_block(s));
  check_md_block(s, md_code_block(s + "\n", "text"));
  if (s.find('\0') == std::string::npos) check_shell(s, shell_quote(s));
  // JUnit: the fields are the input's parts between 0x1f bytes.
  std::vector<std::string> f;
  for (size_t pos = 0;;) {
    size_t at = s.find('\x1f', pos);
    f.push_back(s.substr(pos, at == std::string::npos ? at : at - pos));
    if (at == std::string::npos) break;
    pos = at + 1;
  }
  f.resize(std::max<size_t>(f.size(), 7));
  JUnitCase failed{f[1], 1.5, JUnitFailure{f[2], f[3], f[4]}, "", f[6]};
  JUnitCase skipped{f[2], 0, std::nullopt, f[5].empty() ? "skipped" : f[5], ""};
  JUnitCase passed{f[0], 0.25, std::nullopt, "", f[3]};
  const std::string xml = junit_xml(f[0], {failed, skipped, passed}, f[5]);
  std::string why = fuzz::xml_problem(xml);
  fuzz::check(why.empty(), "junit_xml is well-formed XML", why + "\n" + xml);
  fuzz::check(xml.find("<fuzz") == std::string::npos, "no markup from the fields", xml);
  return 0;
}
