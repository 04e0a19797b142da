#include "worker/probe.hpp"

#include <chrono>
#include <cstdio>

#include "worker/phase.hpp"

namespace ddpbisect::worker {

void allreduce_probe(const RankEnv& env, int64_t max_bytes, int iterations) {
  DDPB_PHASE();
  Comm comm(env, std::chrono::milliseconds(120'000));
  const int world = comm.world();
  if (env.rank == 0)
    std::printf(
        "# all-reduce over Gloo, %d ranks, float32 sum, %d iterations per size\n"
        "#%12s %12s %10s %10s %10s\n",
        world, iterations, "size (B)", "count", "time (us)", "algbw GB/s", "busbw GB/s");
  for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    std::vector<torch::Tensor> t = {torch::ones({bytes / 4})};
    for (int i = 0; i < 2; ++i) comm.allreduce(t);  // warm up the connections and buffers
    comm.barrier();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) comm.allreduce(t);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
               iterations;
    // nccl-tests' definitions: algorithm bandwidth = size / time; bus bandwidth scales it by
    // 2(n-1)/n, the share of the data every link carries in a ring all-reduce.
    double algbw = static_cast<double>(bytes) / s / 1e9;
    double busbw = algbw * 2.0 * (world - 1) / world;
    if (env.rank == 0) {
      std::printf(" %12lld %12lld %10.1f %10.3f %10.3f\n", static_cast<long long>(bytes),
                  static_cast<long long>(bytes / 4), s * 1e6, algbw, busbw);
      std::printf(
          "DDPBISECT_PROBE {\"op\":\"allreduce\",\"backend\":\"gloo\",\"world\":%d,\"bytes\":%lld,"
          "\"time_us\":%.3f,\"algbw_GBps\":%.6f,\"busbw_GBps\":%.6f}\n",
          world, static_cast<long long>(bytes), s * 1e6, algbw, busbw);
      std::fflush(stdout);
    }
  }
  comm.barrier();
}

}  // namespace ddpbisect::worker
