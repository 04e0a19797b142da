#include "worker/comm.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>

// The only file that sees Gloo's headers, which are Debian's (the wheel ships none) and need not
// match the Gloo inside libtorch: Gloo's objects are held only through the shared_ptrs c10d hands
// out, and nothing here calls into them or lays them out.
#include <torch/csrc/distributed/c10d/debug.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "worker/phase.hpp"

namespace ddpbisect::worker {

namespace {
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < 0)
    throw std::invalid_argument(std::string("bad value for ") + name + ": '" + v + "'");
  return static_cast<int>(x);
}
// Waits until the store's port accepts connections. TCPStore's client backs off for a second
// when it arrives before the server listens; polling every 10 ms removes that from every trial.
void wait_for_listener(const std::string& host, int port, std::chrono::milliseconds timeout) {
  DDPB_PHASE();
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    bool ok = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0;
    if (fd >= 0) close(fd);
    if (ok) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  freeaddrinfo(res);
}
}  // namespace

RankEnv RankEnv::from_environment() {
  RankEnv e;
  e.rank = env_int("RANK", 0);
  e.world_size = env_int("WORLD_SIZE", 1);
  e.local_rank = env_int("LOCAL_RANK", e.rank);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", e.world_size);
  e.node_rank = env_int("NODE_RANK", env_int("GROUP_RANK", 0));
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  e.master_port = env_int("MASTER_PORT", 29500);
  if (e.world_size < 1 || e.rank >= e.world_size)
    throw std::invalid_argument("RANK " + std::to_string(e.rank) + " is not below WORLD_SIZE " +
                                std::to_string(e.world_size));
  return e;
}

namespace {
// Gloo's transport devices as torch.distributed picks them (GLOO_SOCKET_IFNAME, a comma list of
// interfaces), except that a loopback master binds the loopback device rather than resolving the
// host name. Two worker threads per device, as the Python binding sets.
c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(
    const RankEnv& env, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* ifnames = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifnames && *ifnames) {
    std::string list = ifnames;
    for (size_t begin = 0, end; begin <= list.size(); begin = end + 1) {
      end = std::min(list.find(',', begin), list.size());
      if (end > begin)
        options->devices.push_back(
            c10d::ProcessGroupGloo::createDeviceForInterface(list.substr(begin, end - begin)));
    }
  } else if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = static_cast<int>(options->devices.size()) * 2;
  return options;
}
}  // namespace

// The default group as init_process_group("gloo") builds it: prefixed stores, the Gloo backend
// registered for CPU tensors, c10d's sequence numbers on, TORCH_DISTRIBUTED_DEBUG read. Unlike
// torch.distributed, DETAIL does not wrap the backend in a ProcessGroupWrapper: in 2.13 DDP's
// Logger then casts the wrapper to ProcessGroupGloo and crashes (Python DDP over Gloo included).
Comm::Comm(const RankEnv& env, std::chrono::milliseconds timeout)
    : rank_(env.rank), world_(env.world_size), timeout_(timeout) {
  DDPB_PHASE();
  c10d::setDebugLevelFromEnvironment();
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env.master_port);
  opts.isServer = env.rank == 0;
  opts.numWorkers = env.world_size;
  opts.waitWorkers = true;
  opts.timeout = timeout;
  if (!opts.isServer) wait_for_listener(env.master_addr, env.master_port, timeout);
  store_ = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  auto group_store = c10::make_intrusive<c10d::PrefixStore>(
      "0/", c10::make_intrusive<c10d::PrefixStore>("default_pg", store_));
  auto backend_store = c10::make_intrusive<c10d::PrefixStore>("cpu/", group_store);
  c10::intrusive_ptr<c10d::Backend> backend = c10::make_intrusive<c10d::ProcessGroupGloo>(
      backend_store, rank_, world_, gloo_options(env, timeout));
  backend->setSequenceNumberForGroup();
  pg_ = c10::make_intrusive<c10d::ProcessGroup>(group_store, rank_, world_);
  pg_->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg_->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend);
  pg_->setGroupName("0");
  pg_->setGroupDesc("default_pg");
}

namespace {
// Gloo reads a tensor list as copies of one tensor: several tensors travel as one flat buffer.
torch::Tensor coalesce(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.detach().reshape({-1}));
  return torch::cat(flat);
}
void scatter_back(const torch::Tensor& buffer, std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard ng;
  int64_t offset = 0;
  for (auto& t : tensors) {
    t.copy_(buffer.slice(0, offset, offset + t.numel()).view_as(t));
    offset += t.numel();
  }
}
}  // namespace

void Comm::finish(const c10::intrusive_ptr<c10d::Work>& work, const char* op) {
  bool done = false;
  try {
    done = work->wait(timeout_);
  } catch (const c10::Error& e) {
    if (std::string(e.what()).find("Operation timed out") == std::string::npos) throw;
  }
  if (!done)
    throw NamedError("RuntimeError", "[Rank " + std::to_string(rank_) + "] Timed out waiting " +
                                         std::to_string(timeout_.count()) +
                                         "ms for recv operation to complete (" + op +
                                         ", collective #" + std::to_string(seq()) + ")");
}

void Comm::allreduce(std::vector<torch::Tensor>& tensors, c10d::ReduceOp op) {
  DDPB_PHASE();
  c10d::AllreduceOptions o;
  o.reduceOp = op;
  o.timeout = timeout_;
  if (tensors.size() == 1) {
    finish(pg_->allreduce(tensors, o), "allreduce");
    return;
  }
  std::vector<torch::Tensor> buffer = {coalesce(tensors)};
  finish(pg_->allreduce(buffer, o), "allreduce");
  scatter_back(buffer[0], tensors);
}

void Comm::barrier() {
  DDPB_PHASE();
  c10d::BarrierOptions o;
  o.timeout = timeout_;
  finish(pg_->barrier(o), "barrier");
}

}  // namespace ddpbisect::worker
