// journal.jsonl: every trial of a reduction, one JSON record per line, appended and fsync'd as it
// ends, so that `--resume` after a crash, a SIGKILL or Ctrl-C replays finished trials instead of
// rerunning them. A kill at any byte leaves a readable prefix: a torn last record is dropped
// (and cut off before the next append); a failed append (a full disk) is cut off too and
// throws OutputError, leaving every earlier record intact.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ddpbisect {

class Journal {
 public:
  // Loads the records already in `path` (when resuming), then appends to it.
  Journal(const std::string& path, bool resume);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(const nlohmann::json& entry);
  const std::vector<nlohmann::json>& loaded() const { return loaded_; }
  // Lines dropped on loading: a torn last record, or lines that are not a JSON record.
  int dropped() const { return dropped_; }
  const std::string& path() const { return path_; }

 private:
  void load();
  std::string path_;
  int fd_ = -1;
  std::vector<nlohmann::json> loaded_;
  int dropped_ = 0;
  std::mutex mu_;
};

}  // namespace ddpbisect
