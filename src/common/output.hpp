// Files ddpbisect writes into its output folder: whole or not at all (written beside, then
// renamed), and every failure to write one (a full disk, a read-only folder) an OutputError
// that names the file and says why, so the CLI can say how to continue.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace ddpbisect {

class OutputError : public std::runtime_error {
 public:
  OutputError(const std::string& path, int error);
  const std::string& path() const { return path_; }
  int error() const { return error_; }  // errno
  bool disk_full() const;               // ENOSPC or EDQUOT

 private:
  std::string path_;
  int error_;
};

// Writes all of `text` to `fd` (retrying short writes and EINTR) and fsyncs it; 0 or the errno.
int write_all_and_sync(int fd, std::string_view text);

// Writes `text` to `path` atomically: into path.tmp, flushed, then renamed over `path`. A reader
// (or a resumed run after a crash) sees the old file or the new one, never half of one. Throws
// OutputError.
void write_file_atomically(const std::string& path, std::string_view text, bool executable = false);

// Below this much free space on the output folder's filesystem, trial logs and outcome files
// would be cut short: a trial run there is not a fair answer.
inline constexpr unsigned long long kMinFreeBytes = 1ull << 20;
// Free bytes for an unprivileged writer on the filesystem holding `dir` (statvfs), or -1.
long long free_bytes(const std::string& dir);

}  // namespace ddpbisect
