#include "reduce/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/json_util.hpp"
#include "common/output.hpp"

namespace ddpbisect {

Journal::Journal(const std::string& path, bool resume) : path_(path) {
  if (resume) load();
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw OutputError(path, errno);
}

Journal::~Journal() {
  if (fd_ >= 0) close(fd_);
}

// Every complete line that holds a JSON object; a last line without its newline was torn by a
// kill and is cut off, so that the next record starts on a line of its own.
void Journal::load() {
  std::ifstream in(path_, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  size_t start = 0, complete = 0;
  int line = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line;
    if (end == std::string::npos) {
      ++dropped_;  // torn
      break;
    }
    auto j = nlohmann::json::parse(text.begin() + static_cast<long>(start),
                                   text.begin() + static_cast<long>(end), nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      loaded_.push_back(std::move(j));
      lines_.push_back(line);
    } else if (end > start) {
      ++dropped_;
      warnings_.push_back(path_ + ":" + std::to_string(line) + ": not a JSON record; ignored");
    }
    start = complete = end + 1;
  }
  if (complete < text.size() && truncate(path_.c_str(), static_cast<off_t>(complete)) != 0)
    throw OutputError(path_, errno);
}

void Journal::reject(size_t i, const std::string& why) {
  ++dropped_;
  warnings_.push_back(path_ + ":" + std::to_string(line_of(i)) + ": " + why + "; ignored");
}

void Journal::append(const nlohmann::json& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string line = json_text(entry) + "\n";
  struct stat st;
  if (fstat(fd_, &st) != 0) throw OutputError(path_, errno);
  const int error = write_all_and_sync(fd_, line);
  if (error) {
    // Cut off what part of the record made it: the journal stays a list of whole records.
    const int cut = ftruncate(fd_, st.st_size);
    (void)cut;  // if even that fails, loading drops the torn record
    throw OutputError(path_, error);
  }
}

}  // namespace ddpbisect
