#include "diagnose/frames.hpp"

#include <re2/re2.h>

#include <filesystem>

#include "common/text.hpp"

namespace ddpbisect {

namespace {
// Modules of the standard library and of the libraries training scripts run under, as py-spy
// names them (a path relative to its sys.path entry).
bool relative_library_path(const std::string& file) {
  static const char* kTop[] = {"torch/",
                               "tqdm/",
                               "transformers/",
                               "accelerate/",
                               "deepspeed/",
                               "lightning/",
                               "datasets/",
                               "numpy/",
                               "pytorch_lightning/",
                               "lightning_fabric/",
                               "hydra/",
                               "ray/",
                               "concurrent/",
                               "multiprocessing/",
                               "asyncio/",
                               "importlib/",
                               "logging/",
                               "json/",
                               "http/",
                               "urllib/",
                               "email/",
                               "ctypes/",
                               "unittest/",
                               "xml/",
                               "encodings/"};
  for (const char* t : kTop)
    if (starts_with(file, t)) return true;
  if (file.find('/') != std::string::npos) return false;
  static const char* kStdlib[] = {
      "threading.py", "queue.py",  "contextlib.py",  "selectors.py", "socket.py",  "subprocess.py",
      "functools.py", "runpy.py",  "typing.py",      "abc.py",       "weakref.py", "copy.py",
      "pickle.py",    "codecs.py", "os.py",          "io.py",        "shutil.py",  "tempfile.py",
      "signal.py",    "random.py", "warnings.py",    "traceback.py", "inspect.py", "pathlib.py",
      "argparse.py",  "enum.py",   "ssl.py",         "zipfile.py",   "tarfile.py", "glob.py",
      "sched.py",     "timeit.py", "genericpath.py", "posixpath.py", "bisect.py",  "heapq.py"};
  for (const char* s : kStdlib)
    if (file == s) return true;
  return false;
}
// A framework run from its own checkout (pip install -e): src/accelerate/..., or a checkout
// named after its package (DeepSpeed/deepspeed/...). Not in site-packages, still not the user's.
bool editable_library_path(const std::string& file) {
  static const char* kPackages[] = {"accelerate", "transformers",      "deepspeed",
                                    "lightning",  "datasets",          "peft",
                                    "trl",        "diffusers",         "torch",
                                    "vllm",       "pytorch_lightning", "lightning_fabric"};
  for (const char* name : kPackages) {
    std::string dir = "/" + std::string(name) + "/";
    for (size_t at = file.find(dir); at != std::string::npos; at = file.find(dir, at + 1)) {
      if (at == 0) continue;
      size_t parent = file.rfind('/', at - 1);
      size_t from = parent == std::string::npos ? 0 : parent + 1;
      std::string above = lowercase(std::string_view(file).substr(from, at - from));
      if (above == "src" || above == name) return true;
    }
  }
  return false;
}
}  // namespace

bool is_library_frame(const std::string& file, const std::vector<std::string>& extra) {
  static const char* kLibrary[] = {
      "/site-packages/", "/dist-packages/", "/lib/python3", "/lib/python2", "<frozen ", "runpy.py",
      "/torch/", ".pyx", "/multiprocessing/", "<string>", "/lib64/python3",
      // The in-process agent's wrappers sit between the user's call and torch (docs/agent.md).
      "/ddpbisect_agent/"};
  for (const char* p : kLibrary)
    if (file.find(p) != std::string::npos) return true;
  for (const auto& p : extra)
    if (!p.empty() && file.find(p) != std::string::npos) return true;
  return relative_library_path(file) || editable_library_path(file);
}

std::string frame_key(const Frame* f) {
  if (!f) return "";
  return std::filesystem::path(f->file).filename().string() + ":" + f->function;
}

std::string frame_display(const Frame* f) {
  if (!f) return "";
  return f->file + ":" + std::to_string(f->line) + " in " + f->function;
}

const Frame* best_frame(const Event& e) {
  if (const Frame* f = e.user_frame()) return f;
  return e.frames.empty() ? nullptr : &e.frames.back();
}

const Frame* Event::user_frame() const {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it)
    if (it->user) return &*it;
  return nullptr;
}

std::string normalize_message(const std::string& message) {
  static const RE2 kQuotedPath(R"('(/[^']*)')");
  static const RE2 kPath(R"((/[\w.\-]+)+)");
  static const RE2 kAddr(R"(\[?\d{1,3}(\.\d{1,3}){3}\]?(:\d+)?)");
  static const RE2 kHex(R"(0x[0-9a-fA-F]+)");
  static const RE2 kNumber(R"(\d+(\.\d+)?(e[-+]?\d+)?)");
  std::string s = message.substr(0, 2000);
  RE2::GlobalReplace(&s, kQuotedPath, "'<path>'");
  RE2::GlobalReplace(&s, kAddr, "<addr>");
  RE2::GlobalReplace(&s, kPath, "<path>");
  RE2::GlobalReplace(&s, kHex, "<hex>");
  RE2::GlobalReplace(&s, kNumber, "<n>");
  return s;
}

}  // namespace ddpbisect
