// Line hygiene: the text a program printed, recovered from what terminals, launchers and loggers
// made of it. One physical line becomes one or more logical lines: split at carriage returns
// (progress bars) and where another rank's prefixed output starts mid-line; each loses its
// prefixes (rank tags, launcher tags, timestamps, logger columns, and any prefix learned from
// neighbouring lines) while keeping what they said: the rank, the process id, the log level.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpbisect {

struct CleanLine {
  std::string text;
  std::optional<int> rank;        // a global rank tag: [rankN]:, mpirun [1,N], srun "N: ", ...
  std::optional<int> local_rank;  // a node-local tag: [defaultN]: (torchrun --tee)
  long pid = 0;                   // a process tag: Ray's and vLLM's (Worker pid=P)
  std::string host;               // a node tag: [host:local_rank]:
  char level = 0;                 // a log record's level: 'E', 'W', 'I', 'D'; 0 when not one
  bool python_log = false;        // the record came from Python's logging (not c10's or glog)
  bool weak() const { return level == 'W' || level == 'I' || level == 'D'; }
};

class LineCleaner {
 public:
  // Appends the logical lines of `physical` to `out`. `previous` is the physical line before
  // it in the same file ("" when unknown), against which a repeated prefix is recognised.
  void clean(std::string_view physical, std::string_view previous, std::vector<CleanLine>& out);

 private:
  void one(std::string_view segment, std::string_view previous, std::vector<CleanLine>& out,
           int depth);
  bool strip_learned(std::string_view& text) const;
  bool learn(std::string_view text, size_t anchor, std::string_view previous);

  std::vector<std::string> learned_;  // shapes of prefixes seen repeating (digits as '9')
  static constexpr size_t kMaxLearned = 4;
};

// Strips one known prefix from the start of `text`, recording what it said in `line`; false
// when `text` starts with none. Exposed for tests.
bool strip_known_prefix(std::string_view& text, CleanLine& line);

// The shape of a prefix: every run of digits becomes one '9'.
std::string prefix_shape(std::string_view s);

}  // namespace ddpbisect
