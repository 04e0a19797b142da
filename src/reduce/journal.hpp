// journal.jsonl: every trial of a reduction, one JSON record per line, appended and fsync'd as it
// ends, so that `--resume` after a crash, a SIGKILL or Ctrl-C replays finished trials instead of
// rerunning them. A kill at any byte leaves a readable prefix: a torn last record is dropped
// (and cut off before the next append), and so is any line that is not a record its reader can
// use, with a warning (a corrupt line is never fatal); a failed append (a full disk) is cut off too
// and throws OutputError, leaving every earlier record intact.
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
  // The line of the file loaded()[i] came from (1-based).
  int line_of(size_t i) const { return lines_.at(i); }
  // A loaded record its reader cannot use (a field of the wrong type, bad samples): dropped like
  // a line that is not a record, with a warning that names the file, the line and `why`.
  void reject(size_t i, const std::string& why);
  // Lines dropped on loading: a torn last record, lines that are not a JSON record, and the
  // records rejected since.
  int dropped() const { return dropped_; }
  // "PATH:LINE: ...; ignored" for every dropped line but a torn last one (a kill's normal trace).
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::string& path() const { return path_; }

 private:
  void load();
  std::string path_;
  int fd_ = -1;
  std::vector<nlohmann::json> loaded_;
  std::vector<int> lines_;  // of loaded_
  std::vector<std::string> warnings_;
  int dropped_ = 0;
  std::mutex mu_;
};

}  // namespace ddpbisect
