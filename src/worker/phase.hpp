// The worker's own call stack of named phases. A SIGUSR1 (or a crash signal) dumps it to stderr in
// faulthandler's format, so a hung native rank is diagnosed exactly like a hung Python rank; an
// exception snapshots it while unwinding, so the error report names where it was thrown.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace ddpbisect::worker {

// An error reported with a Python-style exception type name ("FileNotFoundError: ...").
struct NamedError : std::runtime_error {
  NamedError(std::string type_name, const std::string& message)
      : std::runtime_error(message), type(std::move(type_name)) {}
  std::string type;
};

struct PhaseFrame {
  const char* file;
  int line;
  const char* function;
};

class ScopedPhase {
 public:
  ScopedPhase(const char* file, int line, const char* function);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  int uncaught_;
};

#define DDPB_CONCAT2(a, b) a##b
#define DDPB_CONCAT(a, b) DDPB_CONCAT2(a, b)
#define DDPB_PHASE() \
  ::ddpbisect::worker::ScopedPhase DDPB_CONCAT(phase_, __LINE__)(__FILE__, __LINE__, __func__)

// Installs the dump handlers: SIGUSR1 dumps and continues; SIGSEGV, SIGBUS, SIGFPE and SIGABRT
// dump, then die by the same signal.
void install_stack_dump_handlers(int rank);

// The frames captured when the last exception began unwinding (outermost first), or the current
// stack when none was captured.
std::vector<PhaseFrame> exception_frames();
void clear_exception_frames();

// Prints a Python-style traceback of `frames` followed by "Type: message" to stderr.
void print_traceback(const std::vector<PhaseFrame>& frames, const std::string& type,
                     const std::string& message);

// Source path as printed in frames: from "src/" on.
const char* short_path(const char* file);

}  // namespace ddpbisect::worker
