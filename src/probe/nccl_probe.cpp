// ddpbisect-nccl-probe: all-reduce bandwidth over NCCL across this node's GPUs, in the manner of
// nccl-tests (one process, one communicator per GPU, in-place float32 sum, algorithm and bus
// bandwidth per size). Built against /usr/local/cuda when the CUDA toolkit and NCCL are there; run
// by `ddpbisect doctor` on nodes that have GPUs. Exit 0 measured, 77 no CUDA device, 1 a CUDA or
// NCCL error (printed).
//   usage: ddpbisect-nccl-probe [MAX_BYTES] [ITERATIONS]
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "ddpbisect-nccl-probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool nccl_ok(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return true;
  std::fprintf(stderr, "ddpbisect-nccl-probe: %s: %s\n", what, ncclGetErrorString(r));
  return false;
}

// One communicator, buffer and stream per GPU of this node.
struct Probe {
  int n = 0;
  std::vector<ncclComm_t> comms;
  std::vector<float*> buf;
  std::vector<cudaStream_t> streams;

  bool init(long long max_bytes) {
    const auto size = static_cast<size_t>(n);
    comms.resize(size);
    buf.assign(size, nullptr);
    streams.resize(size);
    std::vector<int> devs(size);
    for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
    if (!nccl_ok(ncclCommInitAll(comms.data(), n, devs.data()), "ncclCommInitAll")) return false;
    for (size_t k = 0; k < size; ++k)
      if (!cuda_ok(cudaSetDevice(static_cast<int>(k)), "cudaSetDevice") ||
          !cuda_ok(cudaMalloc(&buf[k], static_cast<size_t>(max_bytes)), "cudaMalloc") ||
          !cuda_ok(cudaMemset(buf[k], 0, static_cast<size_t>(max_bytes)), "cudaMemset") ||
          !cuda_ok(cudaStreamCreate(&streams[k]), "cudaStreamCreate"))
        return false;
    return true;
  }

  bool all_reduce(size_t count) {
    if (!nccl_ok(ncclGroupStart(), "ncclGroupStart")) return false;
    for (size_t k = 0; k < buf.size(); ++k)
      if (!nccl_ok(ncclAllReduce(buf[k], buf[k], count, ncclFloat, ncclSum, comms[k], streams[k]),
                   "ncclAllReduce"))
        return false;
    return nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
  }

  bool sync() {
    for (size_t k = 0; k < streams.size(); ++k)
      if (!cuda_ok(cudaSetDevice(static_cast<int>(k)), "cudaSetDevice") ||
          !cuda_ok(cudaStreamSynchronize(streams[k]), "cudaStreamSynchronize"))
        return false;
    return true;
  }

  // Seconds per all-reduce of `bytes`, after 5 warm-up rounds; a negative value on an error.
  double time_one(long long bytes, int iterations) {
    const size_t count = static_cast<size_t>(bytes / 4);
    for (int w = 0; w < 5; ++w)
      if (!all_reduce(count)) return -1;
    if (!sync()) return -1;
    auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it)
      if (!all_reduce(count)) return -1;
    if (!sync()) return -1;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
           iterations;
  }

  ~Probe() {
    for (size_t k = 0; k < buf.size(); ++k) {
      cudaSetDevice(static_cast<int>(k));
      if (buf[k]) cudaFree(buf[k]);
      if (k < streams.size() && streams[k]) cudaStreamDestroy(streams[k]);
      if (k < comms.size() && comms[k]) ncclCommDestroy(comms[k]);
    }
  }
};

void print_header(int n) {
  int nccl_version = 0, driver = 0, runtime = 0;
  ncclGetVersion(&nccl_version);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf(
      "# all-reduce over NCCL %d.%d.%d, %d GPU(s), CUDA driver %d runtime %d, float32 sum\n"
      "#%12s %12s %10s %10s %10s\n",
      nccl_version / 10000, (nccl_version / 100) % 100, nccl_version % 100, n, driver, runtime,
      "size (B)", "count", "time (us)", "algbw GB/s", "busbw GB/s");
}

// One size's row for people, and its DDPBISECT_PROBE line for doctor (bandwidth as nccl-tests
// defines it: bus bandwidth = algorithm bandwidth x 2(n-1)/n).
void print_row(int n, long long bytes, double s) {
  const double algbw = static_cast<double>(bytes) / s / 1e9;
  const double busbw = n > 1 ? algbw * 2.0 * (n - 1) / n : algbw;
  std::printf(" %12lld %12lld %10.1f %10.3f %10.3f\n", bytes, bytes / 4, s * 1e6, algbw, busbw);
  std::printf(
      "DDPBISECT_PROBE {\"op\":\"allreduce\",\"backend\":\"nccl\",\"world\":%d,"
      "\"bytes\":%lld,\"time_us\":%.3f,\"algbw_GBps\":%.6f,\"busbw_GBps\":%.6f}\n",
      n, bytes, s * 1e6, algbw, busbw);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  long long max_bytes = argc > 1 ? std::atoll(argv[1]) : (256ll << 20);
  int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  if (max_bytes < 8 || iterations < 1) {
    std::fprintf(stderr, "usage: ddpbisect-nccl-probe [MAX_BYTES >= 8] [ITERATIONS >= 1]\n");
    return 2;
  }
  Probe probe;
  cudaError_t e = cudaGetDeviceCount(&probe.n);
  if (e != cudaSuccess || probe.n == 0) {
    std::printf("ddpbisect-nccl-probe: no CUDA device (%s)\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    return 77;
  }
  if (!probe.init(max_bytes)) return 1;
  print_header(probe.n);
  for (long long bytes = 8; bytes <= max_bytes; bytes *= 4) {
    double s = probe.time_one(bytes, iterations);
    if (s < 0) return 1;
    print_row(probe.n, bytes, s);
  }
  return 0;
}
