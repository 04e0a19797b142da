// Line tests the stream parser's two halves share (stream_parser.cpp, stream_blocks.cpp).
#pragma once

#include <re2/re2.h>

#include <algorithm>
#include <string>
#include <string_view>

namespace ddpbisect::stream_text {

inline bool has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

inline re2::StringPiece piece(std::string_view s) {
  return re2::StringPiece(s.data(), s.size());
}

inline bool indented(std::string_view s) {
  return !s.empty() && (s[0] == ' ' || s[0] == '\t');
}

// An exception's type names itself: Error, Exception, Interrupt, ... or is a dotted class path.
inline bool plausible_type(const std::string& type, bool has_message) {
  static const RE2 suffix(
      R"((Error|Exception|Exit|Interrupt|Warning|Failure|Fault|NotMet|Timeout|Abort|Iteration|Exited|Raised)$)");
  std::string last = type.substr(type.rfind('.') == std::string::npos ? 0 : type.rfind('.') + 1);
  if (RE2::PartialMatch(last, suffix)) return true;
  if (!has_message || type.find('.') == std::string::npos || last.empty()) return false;
  // The standard library's lower-case types: socket.gaierror, socket.timeout, struct.error.
  static const RE2 lower_type(R"([a-z]*(?:error|timeout))");
  if (RE2::FullMatch(last, lower_type)) return true;
  bool upper = last[0] >= 'A' && last[0] <= 'Z';
  bool lower = std::any_of(last.begin(), last.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  return upper && lower;
}

// A shell's or the kernel's report that a process died ("Killed", "bash: line 2: 123 Killed").
inline bool shell_report(std::string_view text) {
  static const RE2 re(
      R"(^(?:\S.*: line \d+: +\d+ +)?(Killed|Aborted|Segmentation fault|Bus error|Floating point exception|Illegal instruction)(?: \(core dumped\))?(?: {2,}.*)?$)");
  return RE2::FullMatch(piece(text), re);
}

// NCCL's WARN-level line: "host:pid:tid [dev] file.cc:N NCCL WARN ..." (older NCCL: "WARN").
inline bool nccl_warn(std::string_view text) {
  static const RE2 old_form(R"(\[\d+\] \S+:\d+ WARN )");
  return has(text, " NCCL WARN ") || RE2::PartialMatch(piece(text), old_form);
}

// A launcher's own line (never part of an exception's message).
inline bool launcher_line(std::string_view text) {
  static const RE2 re(
      R"(^(?:Sending process \d|Killing subprocess|Terminating process|failed \(exitcode|srun: |slurmstepd: |mpirun |Process \d+ exits|WARNING:torch\.distributed|ERROR:torch\.distributed))");
  return RE2::PartialMatch(piece(text), re);
}

}  // namespace ddpbisect::stream_text
