// Markdown that shows what it holds: log text and spec values may carry HTML, markdown, ANSI
// escapes, backticks or newlines, and none of it may turn into markup, a link, a broken table or
// an unterminated code block when report.md is pasted into an issue.
#pragma once

#include <string>

namespace ddpbisect {

// Inline text: markdown and HTML characters backslash-escaped, newlines as spaces.
std::string md_text(const std::string& s);
// A table cell: md_text(), with '|' escaped too.
std::string md_cell(const std::string& s);
// Inline code that no backtick in `s` can end early.
std::string md_code(const std::string& s);
// A fenced code block longer than any backtick run inside `body` (which ends in a newline).
std::string md_code_block(const std::string& body, const std::string& language = "");

}  // namespace ddpbisect
