// A failure as people read it, from a diagnosis' root cause as JSON (`outcome.json`'s
// diagnosis.root_cause, Diagnosis::to_json()["root_cause"]): the headline every summary leads
// with, and the root-cause traceback with PyTorch's C++ frames folded.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ddpbisect {

// "rank 1: RuntimeError: planted failure (trainer.cpp:42)"; "" for a null root.
std::string root_cause_headline(const nlohmann::json& root);
// The root cause's raw lines (the traceback), secrets redacted; with `fold`, each run of C++
// frames (TORCH_SHOW_CPP_STACKTRACES: "frame #0: c10::Error::Error(...)") becomes one line.
std::string root_cause_traceback(const nlohmann::json& root, bool fold);
// The same folding on any text.
std::string fold_cpp_frames(const std::string& text);

}  // namespace ddpbisect
