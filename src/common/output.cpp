#include "common/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ddpbisect {

OutputError::OutputError(const std::string& path, int error)
    : std::runtime_error("cannot write " + path + ": " + std::strerror(error)),
      path_(path),
      error_(error) {}

bool OutputError::disk_full() const {
  return error_ == ENOSPC || error_ == EDQUOT;
}

int write_all_and_sync(int fd, std::string_view text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return fsync(fd) != 0 ? errno : 0;
}

void write_file_atomically(const std::string& path, std::string_view text, bool executable) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) throw OutputError(tmp, errno);
  int error = write_all_and_sync(fd, text);
  if (close(fd) != 0 && !error) error = errno;
  if (!error && executable && chmod(tmp.c_str(), 0755) != 0) error = errno;
  if (!error && std::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error) {
    unlink(tmp.c_str());
    throw OutputError(path, error);
  }
}

long long free_bytes(const std::string& dir) {
  struct statvfs s;
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<long long>(s.f_bavail) * static_cast<long long>(s.f_frsize);
}

}  // namespace ddpbisect
