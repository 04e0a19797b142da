// The category table (see categories.hpp). Patterns were checked against what torch 1.13 and
// 2.13 print (docs/pytorch-messages.md) and against logs from public issue threads
// (tests/diagnose/real); rows are in matching order: echoes and infrastructure first, so that an
// echo quoting a primary's words stays an echo, then the specific primaries, the launchers last.
#include "diagnose/categories.hpp"

#include <re2/re2.h>

#include <memory>

#include "common/text.hpp"

namespace ddpbisect {

const std::vector<Category>& categories() {
  static const std::vector<Category> table = {
      {"infra", false,
       R"((?i)address already in use|EADDRINUSE|failed to listen on any local network address|The client socket has failed to connect to|while trying to connect to|Name or service not known|^ddpbisect-isolate: cannot run |srun: error: Node failure on|DUE TO NODE FAILURE)",
       "", "could not run fairly: port in use, master unreachable, program missing, a node failed"},
      {"collective_mismatch", true,
       R"(op\.preamble\.length <= op\.nbytes|Detected mismatch between collectives on ranks|distributed collective mismatch|Error when verifying shape tensors for collective|Cannot apply desired operation due to shape mismatches)",
       "TORCH_DISTRIBUTED_DEBUG=DETAIL DDPBISECT_FLIGHT_RECORDER=1",
       "ranks ran different collectives (Gloo enforce, DETAIL)"},
      {"comm_timeout", false,
       R"(Timed out waiting \d+ms for (recv|send) operation|Watchdog caught collective operation timeout|failed to pass monitoredBarrier|timed out in monitoredBarrier|NCCL communicator was aborted|received errors while waiting for send/recv)",
       "TORCH_DISTRIBUTED_DEBUG=DETAIL DDPBISECT_FLIGHT_RECORDER=1",
       "a collective timed out (Gloo recv timeout, NCCL watchdog, monitored barrier)"},
      {"peer_closed", false,
       R"(Connection closed by (peer|remote peer|localRank)|Connection reset by peer|Broken pipe|remote process exited or there was a network error|Failed to recv, got 0 bytes|ncclRemoteError|Please check rank \d+ logs|ActorDiedError|The actor died unexpectedly)",
       "", "a peer went away (another rank died)"},
      {"rendezvous", false,
       R"(waiting for clients\. \d+/\d+ clients joined|Socket Timeout|Timed out initializing process group|Rendezvous(?:Timeout|Closed|Connection|State)Error|wait timeout after \d+ms, keys:|connect \[[^\]]*\]:\d+: Connection refused)",
       "", "the store or rendezvous failed (peers missing)"},
      {"ddp_unused_parameters", true,
       R"(Expected to have finished reduction in the prior iteration|parameters that were not used in producing (the )?loss)",
       "TORCH_DISTRIBUTED_DEBUG=INFO", "DDP: parameters that did not receive a gradient"},
      {"ddp_marked_twice", true, R"(Expected to mark a variable ready only once)",
       "TORCH_DISTRIBUTED_DEBUG=INFO", "DDP: a variable marked ready more than once"},
      {"ddp_model_mismatch", true,
       R"(DDP expects same model across all ranks|appears not to match (?:sizes|strides) of the same param in process)",
       "TORCH_DISTRIBUTED_DEBUG=INFO", "DDP: different models across ranks"},
      {"uneven_inputs", true, R"(Detected at least one rank that exhausted inputs)", "",
       "join(): a rank exhausted its inputs"},
      {"batch_of_one", true, R"(Expected more than 1 value per channel when training)", "",
       "BatchNorm got a batch of one in training"},
      {"torn_checkpoint", true,
       R"(PytorchStreamReader failed reading|failed finding central directory)", "",
       "a checkpoint read while another rank was writing it"},
      {"cuda_oom", true,
       R"(CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|CUDA driver error: out of memory|NCCL WARN Cuda failure (?:\d+ )?'out of memory'|NCCL WARN Failed to CUDA calloc|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|(?:HIP|MPS backend|XPU) out of memory)",
       "CUDA_LAUNCH_BLOCKING=1", "CUDA out of memory"},
      {"cuda_error", true,
       R"(CUDA error: |CUDA kernel errors|device-side assert triggered|cudaErrorIllegalAddress|an illegal memory access was encountered|\.cuh?:\d+: .*Assertion `.+` failed|NCCL WARN Cuda failure (?:\d+ )?'|CUDA driver error|cuDNN error|CUDNN_STATUS_\w+|CUBLAS_STATUS_\w+|INTERNAL ASSERT FAILED at "[^"]*CUDACachingAllocator|Found no NVIDIA driver|NVIDIA driver on your system is too old|no kernel image is available for execution)",
       "CUDA_LAUNCH_BLOCKING=1", "a CUDA error (device-side assert, illegal memory access)"},
      {"host_oom", true,
       R"(DefaultCPUAllocator: can't allocate memory|std::bad_alloc|^MemoryError|memory allocation of \d+ bytes failed|Out of memory: Killed? process|oom[-_]kill|OOM[ -][Kk]illed|task \d+: Out Of Memory|Memory on the node .* exceeded the memory usage threshold|killed due to memory pressure|\[Errno 12\] Cannot allocate memory|DefaultCPUAllocator: not enough memory|out of shared memory|insufficient shared memory)",
       "", "host memory exhausted (allocator failure, the kernel's OOM killer)"},
      {"nccl_error", true,
       R"(NCCL error in: |NCCL error: |ncclInternalError|ncclSystemError|ncclInvalidUsage|ncclUnhandledCudaError|ncclInvalidArgument|Duplicate GPU detected|(?:NCCL )?WARN .*(?:Call to \w+ failed|[Ee]rror encountered|Got completion from peer .*with error|[Nn]o socket interface|Unable to register memory))",
       "NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL", "an NCCL error"},
      {"nonfinite_loss", true,
       R"((?i)(non-finite|nan|inf(inity)?) (loss|values? in|gradient)|loss is (nan|inf)|returned nan values|FloatingPointError|found (?:nan|inf) in (?:\w+ )?grad)",
       "", "NaN or Inf in the loss or a gradient"},
      {"signal", true,
       R"(Fatal Python error: (Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction))",
       "", "a rank killed by a signal (SIGKILL, SIGSEGV, SIGABRT, SIGBUS)"},
      {"exit_nonzero", true, "", "", "a rank exited non-zero without an error we could read"},
      {"hang", true, "", "TORCH_DISTRIBUTED_DEBUG=DETAIL DDPBISECT_FLIGHT_RECORDER=1",
       "the ranks stopped making progress; the culprit is the rank not where the others are"},
      {"trial_timeout", true, "", "TORCH_DISTRIBUTED_DEBUG=DETAIL DDPBISECT_FLIGHT_RECORDER=1",
       "the trial ran past limits.trial_timeout"},
      {"resource_limit", true, "", "",
       "the trial reached a limit the spec sets (limits.memory, limits.max_procs); made by the "
       "observer, never the failure being reduced"},
      {"python_exception", true, "", "", "an exception in the program (default for tracebacks)"},
      {"cpp_exception", true, "", "", "a C++ exception: terminate called after throwing"},
      {"launcher", false,
       R"(ChildFailedError|CalledProcessError|Sending process \d+ closing signal|ProcessRaisedException|ProcessExitedException|process \d+ terminated with (?:signal|exit code)|CellExecutionError|ExecuteUserScriptError)",
       "", "the launcher's own report (ChildFailedError, CalledProcessError, SIGTERM sent)"},
  };
  return table;
}

const Category* find_category(const std::string& name) {
  for (const auto& c : categories())
    if (name == c.name) return &c;
  return nullptr;
}

bool is_primary(const std::string& category) {
  const Category* c = find_category(category);
  return c && c->primary;
}

std::map<std::string, std::string> category_debug_variables(const std::string& category) {
  std::map<std::string, std::string> out;
  const Category* c = find_category(category);
  if (!c) return out;
  for (const auto& item : split(c->debug, ' ')) {
    size_t eq = item.find('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

namespace {
struct Compiled {
  const Category* category;
  std::unique_ptr<RE2> re;
};

const std::vector<Compiled>& compiled() {
  static const std::vector<Compiled> v = [] {
    std::vector<Compiled> out;
    for (const auto& c : categories())
      if (*c.pattern) out.push_back({&c, std::make_unique<RE2>(c.pattern)});
    return out;
  }();
  return v;
}

std::string first_match(const std::string& text) {
  for (const auto& c : compiled())
    if (RE2::PartialMatch(text, *c.re)) return c.category->name;
  return "";
}
}  // namespace

std::string classify_exception(const std::string& type, const std::string& message) {
  std::string category = first_match(type + ": " + message);
  if (!category.empty()) return category;
  if (type == "MemoryError") return "host_oom";
  if (type.find("::") != std::string::npos) return "cpp_exception";
  return "python_exception";
}

std::string classify_line(const std::string& line) {
  return first_match(line);
}

std::string quoted_primary(const std::string& text) {
  for (const auto& c : compiled())
    if (c.category->primary && RE2::PartialMatch(text, *c.re)) return c.category->name;
  return "";
}

}  // namespace ddpbisect
