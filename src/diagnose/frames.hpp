// Frames and messages: which frames are user code, the innermost user frame, and the message
// with its volatile parts masked (for signatures).
#pragma once

#include <string>
#include <vector>

#include "diagnose/event.hpp"

namespace ddpbisect {

// Frames that are not user code: launcher, runpy, torch, site/dist-packages, the standard library
// (also as py-spy prints them, relative to sys.path: "threading.py", "torch/distributed/...").
bool is_library_frame(const std::string& file, const std::vector<std::string>& extra_patterns = {});

// "train.py:step" for a frame: the file's base name and the function.
std::string frame_key(const Frame* f);
// "/job/train.py:12 in step".
std::string frame_display(const Frame* f);
// The innermost user frame, else the innermost frame, else null.
const Frame* best_frame(const Event& e);

// The message with volatile parts masked: numbers, hex, addresses, ports, paths, times.
std::string normalize_message(const std::string& message);

}  // namespace ddpbisect
