// What diagnosis extracts from logs: frames, and events (an error, an echo, a stack dump, an exit
// status), each with a category from a fixed vocabulary (docs/categories.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddpbisect {

struct Frame {
  std::string file;
  int line = 0;
  std::string function;
  bool user = true;  // not launcher, runpy, torch, site/dist-packages or the standard library
};

enum class EventKind { Error, Stack, Exit };

struct Event {
  EventKind kind = EventKind::Error;
  int rank = -1;
  double time = -1;     // seconds: our capture time, or a timestamp from the log; -1 unknown
  long long order = 0;  // position in its stream, to order events without times
  std::string category;
  std::string exception;  // Python-style type name, or the C++ type, or the signal name
  std::string message;
  std::vector<Frame> frames;         // outermost first
  std::vector<std::string> excerpt;  // the raw lines, bounded
  std::string source;                // file the event came from
  bool requested = false;            // a stack dump ddpbisect asked for (not a failure)

  const Frame* user_frame() const;  // the innermost user frame, if any
};

struct CategoryInfo {
  const char* name;
  bool primary;
  const char* meaning;
};

// The fixed vocabulary, in documentation order.
const std::vector<CategoryInfo>& categories();
bool is_primary(const std::string& category);

// The category of an exception from its type and message (python_exception when nothing more
// specific matches).
std::string classify_exception(const std::string& type, const std::string& message);
// The category of a free-standing log line, or "" when it is not an error line.
std::string classify_line(const std::string& line);

// Frames that are not user code: launcher, runpy, torch, site/dist-packages, standard library.
bool is_library_frame(const std::string& file, const std::vector<std::string>& extra_patterns = {});

// The message with volatile parts masked: numbers, hex, addresses, ports, paths, times.
std::string normalize_message(const std::string& message);

}  // namespace ddpbisect
