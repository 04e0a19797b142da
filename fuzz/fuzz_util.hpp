// What the fuzz targets share: a property check that aborts with a message (libFuzzer and the
// replay driver both report an abort as a crash, with the input), a private scratch folder for
// targets whose entry point reads files, and the packed form of a folder of files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddpbisect::fuzz {

// Aborts, naming the property and showing `detail` (cut, control characters escaped), unless ok.
void check(bool ok, const char* property, std::string_view detail = {});

// A folder of this process's own, emptied by reset_scratch(), removed at exit.
const std::filesystem::path& scratch();
void reset_scratch();

// A folder of files packed into one input: a header, then records each starting with the byte
// 0x1f: `\x1fPATH\nCONTENT`. PATH is made safe (letters, digits, ".-_/", no "." or ".."
// parts, at most 6 parts); an empty one becomes log<N>.
struct PackedTree {
  std::string header;
  std::vector<std::pair<std::string, std::string>> files;  // path, content
};
PackedTree unpack_tree(std::string_view data);

// Writes `files` under `root`, replacing "$DIR" in each content by `root` (seeds from real
// trials name their logs by absolute path). A record that cannot be written is skipped.
// Returns the paths written, relative to root.
std::vector<std::string> write_tree(const std::filesystem::path& root,
                                    const std::vector<std::pair<std::string, std::string>>& files);

void write_file(const std::filesystem::path& path, std::string_view content);

}  // namespace ddpbisect::fuzz
