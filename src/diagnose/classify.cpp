// The category vocabulary and the text patterns behind it (../shared/failure-catalog.md, checked
// against what torch 1.13, Gloo and NCCL print).
#include <re2/re2.h>

#include <algorithm>
#include <memory>

#include "diagnose/event.hpp"

namespace ddpbisect {

const std::vector<CategoryInfo>& categories() {
  static const std::vector<CategoryInfo> v = {
      {"python_exception", true, "an exception in the program (the default for tracebacks)"},
      {"cpp_exception", true, "a C++ exception: terminate called after throwing, c10::Error"},
      {"collective_mismatch", true, "ranks ran different collectives (Gloo enforce, DETAIL mode)"},
      {"ddp_unused_parameters", true, "DDP: parameters that did not receive a gradient"},
      {"ddp_marked_twice", true, "DDP: a variable marked ready more than once"},
      {"ddp_model_mismatch", true, "DDP: different models across ranks"},
      {"uneven_inputs", true, "join(): a rank exhausted its inputs"},
      {"nonfinite_loss", true, "NaN or Inf in the loss or a gradient"},
      {"batch_of_one", true, "BatchNorm got a batch of one in training"},
      {"torn_checkpoint", true, "a checkpoint read while another rank was writing it"},
      {"cuda_oom", true, "CUDA out of memory"},
      {"cuda_error", true, "a CUDA error (device-side assert, illegal memory access)"},
      {"host_oom", true, "host memory exhausted (allocator failure)"},
      {"nccl_error", true, "an NCCL error"},
      {"signal", true, "a rank killed by a signal (SIGKILL, SIGSEGV, SIGABRT, SIGBUS)"},
      {"exit_nonzero", true, "a rank exited non-zero without an error we could read"},
      {"hang", true, "no rank made progress; the trial was stopped"},
      {"trial_timeout", true, "the trial ran past limits.trial_timeout"},
      {"comm_timeout", false, "a collective timed out (Gloo recv timeout, NCCL watchdog)"},
      {"peer_closed", false, "a peer closed the connection (another rank died)"},
      {"rendezvous", false, "the store or rendezvous failed (peers missing)"},
      {"launcher", false,
       "the launcher's own report (ChildFailedError, CalledProcessError, SIGTERM sent)"},
      {"infra", false, "could not run fairly: port in use, master unreachable, program missing"},
  };
  return v;
}

bool is_primary(const std::string& category) {
  for (const auto& c : categories())
    if (category == c.name) return c.primary;
  return false;
}

namespace {
struct Rule {
  Rule(const char* c, const char* pattern) : category(c), re(pattern) {}
  const char* category;
  RE2 re;
};

const std::vector<std::unique_ptr<Rule>>& rules() {
  static const auto v = [] {
    std::vector<std::unique_ptr<Rule>> r;
    auto add = [&](const char* cat, const char* pattern) {
      r.push_back(std::make_unique<Rule>(cat, pattern));
    };
    // Order matters: the first match wins. Echoes and infra first, then specific primaries.
    add("infra",
        R"(Address already in use|EADDRINUSE|failed to listen on any local network address|The client socket has failed to connect to|while trying to connect to|Name or service not known)");
    add("collective_mismatch",
        R"(op\.preamble\.length <= op\.nbytes|Detected mismatch between collectives on ranks|distributed collective mismatch)");
    add("comm_timeout",
        R"(Timed out waiting \d+ms for (recv|send) operation|Watchdog caught collective operation timeout|failed to pass monitoredBarrier|timed out in monitoredBarrier)");
    add("peer_closed",
        R"(Connection closed by peer|Connection reset by peer|Broken pipe|remote process exited or there was a network error|Failed to recv, got 0 bytes)");
    add("rendezvous",
        R"(waiting for clients\. \d+/\d+ clients joined|Socket Timeout|Timed out initializing process group|RendezvousTimeoutError|RendezvousClosedError)");
    add("ddp_unused_parameters", R"(Expected to have finished reduction in the prior iteration)");
    add("ddp_marked_twice", R"(Expected to mark a variable ready only once)");
    add("ddp_model_mismatch", R"(DDP expects same model across all ranks)");
    add("uneven_inputs", R"(Detected at least one rank that exhausted inputs)");
    add("batch_of_one", R"(Expected more than 1 value per channel when training)");
    add("torn_checkpoint",
        R"(PytorchStreamReader failed reading|failed finding central directory)");
    add("cuda_oom", R"(CUDA out of memory|OutOfMemoryError|CUDA error: out of memory)");
    add("cuda_error",
        R"(CUDA error: |CUDA kernel errors|device-side assert triggered|cudaErrorIllegalAddress)");
    add("host_oom", R"(DefaultCPUAllocator: can't allocate memory|std::bad_alloc|MemoryError)");
    add("nccl_error",
        R"(NCCL error in: |ncclInternalError|ncclSystemError|ncclInvalidUsage|ncclUnhandledCudaError)");
    add("nonfinite_loss",
        R"((?i)(non-finite|nan|inf(inity)?) (loss|values? in|gradient)|loss is (nan|inf)|returned nan values|FloatingPointError)");
    add("launcher",
        R"(ChildFailedError|CalledProcessError|closing signal SIGTERM|Sending process \d+ closing signal)");
    return r;
  }();
  return v;
}
}  // namespace

std::string classify_exception(const std::string& type, const std::string& message) {
  const std::string text = type + ": " + message;
  for (const auto& rule : rules())
    if (RE2::PartialMatch(text, rule->re)) return rule->category;
  if (type == "MemoryError") return "host_oom";
  return "python_exception";
}

std::string classify_line(const std::string& line) {
  for (const auto& rule : rules())
    if (RE2::PartialMatch(line, rule->re)) return rule->category;
  return "";
}

bool is_library_frame(const std::string& file, const std::vector<std::string>& extra) {
  static const char* kLibrary[] = {
      "/site-packages/",   "/dist-packages/", "/lib/python3", "<frozen ",
      "runpy.py",          "/torch/",         ".pyx",         "torch/distributed/",
      "/multiprocessing/", "<string>"};
  for (const char* p : kLibrary)
    if (file.find(p) != std::string::npos) return true;
  for (const auto& p : extra)
    if (!p.empty() && file.find(p) != std::string::npos) return true;
  return false;
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
