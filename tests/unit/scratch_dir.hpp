// A scratch folder for one test, removed at its end.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/ddpbisect-unit-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string journal() const { return path + "/journal.jsonl"; }  // a reduction's, written here
};
