#include "fuzz_util.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace fs = std::filesystem;

namespace ddpbisect::fuzz {

void check(bool ok, const char* property, std::string_view detail) {
  if (ok) return;
  std::string shown;
  for (unsigned char c : detail.substr(0, 2000)) {
    if (c == '\n' || (c >= 0x20 && c < 0x7f)) {
      shown += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      shown += hex;
    }
  }
  std::fprintf(stderr, "\nFUZZ PROPERTY VIOLATED: %s\n%s\n", property, shown.c_str());
  std::abort();
}

namespace {
void remove_scratch() {
  std::error_code ec;
  fs::remove_all(scratch(), ec);
}
}  // namespace

const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "ddpbisect-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return fs::path(tmpl);
  }();
  static const bool registered = (std::atexit(remove_scratch), true);
  (void)registered;
  return dir;
}

void reset_scratch() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(scratch(), ec)) fs::remove_all(entry.path(), ec);
}

PackedTree unpack_tree(std::string_view data) {
  PackedTree t;
  size_t at = data.find('\x1f');
  t.header = std::string(data.substr(0, at));
  while (at != std::string_view::npos) {
    size_t next = data.find('\x1f', at + 1);
    std::string_view rec =
        data.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    size_t nl = rec.find('\n');
    std::string_view raw = rec.substr(0, nl);
    std::string path, part;
    int parts = 0;
    auto flush = [&] {
      if (!part.empty() && part != "." && part != ".." && parts < 6) {
        path += (path.empty() ? "" : "/") + part.substr(0, 64);
        ++parts;
      }
      part.clear();
    };
    for (char c : raw) {
      if (c == '/')
        flush();
      else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')
        part += c;
    }
    flush();
    if (path.empty()) path = "log" + std::to_string(t.files.size());
    t.files.emplace_back(path, nl == std::string_view::npos ? "" : std::string(rec.substr(nl + 1)));
    at = next;
  }
  return t;
}

void write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

std::vector<std::string> write_tree(const fs::path& root,
                                    const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> written;
  const std::string dir = root.string();
  for (const auto& [rel, content] : files) {
    fs::path p = root / rel;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec || fs::exists(p, ec)) continue;  // a file where a folder should be, or a duplicate
    std::string text = content;
    for (size_t at = text.find("$DIR"); at != std::string::npos;
         at = text.find("$DIR", at + dir.size()))
      text.replace(at, 4, dir);
    write_file(p, text);
    written.push_back(rel);
  }
  return written;
}

}  // namespace ddpbisect::fuzz
