#include "reduce/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ddpbisect {

Journal::Journal(const std::string& path, bool resume) : path_(path) {
  if (resume) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) loaded_.push_back(std::move(j));  // a torn last line is dropped
    }
  }
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

Journal::~Journal() {
  if (fd_ >= 0) close(fd_);
}

void Journal::append(const nlohmann::json& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string line = entry.dump() + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  fsync(fd_);
}

}  // namespace ddpbisect
