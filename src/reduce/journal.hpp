// journal.jsonl: every trial of a reduction, appended and fsync'd as it ends, so that `--resume`
// after a crash or Ctrl-C replays finished trials instead of rerunning them.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ddpbisect {

class Journal {
 public:
  // Loads the entries already in `path` (when resuming), then appends to it.
  Journal(const std::string& path, bool resume);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(const nlohmann::json& entry);
  const std::vector<nlohmann::json>& loaded() const { return loaded_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<nlohmann::json> loaded_;
  std::mutex mu_;
};

}  // namespace ddpbisect
