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

}  // namespace

int main(int argc, char** argv) {
  long long max_bytes = argc > 1 ? std::atoll(argv[1]) : (256ll << 20);
  int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  if (max_bytes < 8 || iterations < 1) {
    std::fprintf(stderr, "usage: ddpbisect-nccl-probe [MAX_BYTES >= 8] [ITERATIONS >= 1]\n");
    return 2;
  }
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("ddpbisect-nccl-probe: no CUDA device (%s)\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    return 77;
  }
  int nccl_version = 0, driver = 0, runtime = 0;
  ncclGetVersion(&nccl_version);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  std::vector<int> devs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
  if (!nccl_ok(ncclCommInitAll(comms.data(), n, devs.data()), "ncclCommInitAll")) return 1;
  std::vector<float*> buf(static_cast<size_t>(n));
  std::vector<cudaStream_t> streams(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (!cuda_ok(cudaSetDevice(i), "cudaSetDevice") ||
        !cuda_ok(cudaMalloc(&buf[static_cast<size_t>(i)], static_cast<size_t>(max_bytes)),
                 "cudaMalloc") ||
        !cuda_ok(cudaMemset(buf[static_cast<size_t>(i)], 0, static_cast<size_t>(max_bytes)),
                 "cudaMemset") ||
        !cuda_ok(cudaStreamCreate(&streams[static_cast<size_t>(i)]), "cudaStreamCreate"))
      return 1;
  }
  auto all_reduce = [&](size_t count) {
    if (!nccl_ok(ncclGroupStart(), "ncclGroupStart")) return false;
    for (int i = 0; i < n; ++i) {
      auto k = static_cast<size_t>(i);
      if (!nccl_ok(ncclAllReduce(buf[k], buf[k], count, ncclFloat, ncclSum, comms[k], streams[k]),
                   "ncclAllReduce"))
        return false;
    }
    return nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
  };
  auto sync = [&] {
    for (int i = 0; i < n; ++i)
      if (!cuda_ok(cudaSetDevice(i), "cudaSetDevice") ||
          !cuda_ok(cudaStreamSynchronize(streams[static_cast<size_t>(i)]), "cudaStreamSynchronize"))
        return false;
    return true;
  };
  std::printf(
      "# all-reduce over NCCL %d.%d.%d, %d GPU(s), CUDA driver %d runtime %d, float32 sum\n"
      "#%12s %12s %10s %10s %10s\n",
      nccl_version / 10000, (nccl_version / 100) % 100, nccl_version % 100, n, driver, runtime,
      "size (B)", "count", "time (us)", "algbw GB/s", "busbw GB/s");
  for (long long bytes = 8; bytes <= max_bytes; bytes *= 4) {
    size_t count = static_cast<size_t>(bytes / 4);
    if (count == 0) continue;
    for (int w = 0; w < 5; ++w)
      if (!all_reduce(count)) return 1;
    if (!sync()) return 1;
    auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it)
      if (!all_reduce(count)) return 1;
    if (!sync()) return 1;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
               iterations;
    double algbw = static_cast<double>(bytes) / s / 1e9;
    double busbw = n > 1 ? algbw * 2.0 * (n - 1) / n : algbw;
    std::printf(" %12lld %12zu %10.1f %10.3f %10.3f\n", bytes, count, s * 1e6, algbw, busbw);
    std::printf(
        "DDPBISECT_PROBE {\"op\":\"allreduce\",\"backend\":\"nccl\",\"world\":%d,"
        "\"bytes\":%lld,\"time_us\":%.3f,\"algbw_GBps\":%.6f,\"busbw_GBps\":%.6f}\n",
        n, bytes, s * 1e6, algbw, busbw);
    std::fflush(stdout);
  }
  for (int i = 0; i < n; ++i) {
    cudaSetDevice(i);
    cudaFree(buf[static_cast<size_t>(i)]);
    cudaStreamDestroy(streams[static_cast<size_t>(i)]);
    ncclCommDestroy(comms[static_cast<size_t>(i)]);
  }
  return 0;
}
