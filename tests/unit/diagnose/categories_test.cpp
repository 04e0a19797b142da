#include "diagnose/categories.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace ddpbisect;

TEST(Categories, OneTableOneRowEach) {
  std::set<std::string> names;
  for (const auto& c : categories()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  for (const char* n : {"python_exception", "collective_mismatch", "hang", "comm_timeout",
                        "host_oom", "signal", "launcher", "infra"})
    EXPECT_TRUE(find_category(n)) << n;
  EXPECT_TRUE(is_primary("hang"));
  EXPECT_TRUE(is_primary("resource_limit"));  // made by observe/verdict.cpp, a row all the same
  EXPECT_FALSE(is_primary("peer_closed"));
  EXPECT_FALSE(is_primary("no_such_category"));
}

// docs/categories.md's table has one row per category, with the table's primary column.
TEST(Categories, TheDocsTableIsTheTable) {
  std::ifstream in(DDPBISECT_SOURCE_DIR "/docs/categories.md");
  ASSERT_TRUE(in) << "docs/categories.md";
  std::map<std::string, bool> documented;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::istringstream cells(line.substr(2));
    std::string name, primary;
    std::getline(cells, name, '|');
    std::getline(cells, primary, '|');
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(' '));
      s.erase(s.find_last_not_of(' ') + 1);
      return s;
    };
    name = trim(name);
    primary = trim(primary);
    if (primary == "yes" || primary == "no") documented[name] = primary == "yes";
  }
  for (const auto& c : categories()) {
    auto it = documented.find(c.name);
    if (it == documented.end()) {
      ADD_FAILURE() << c.name << " is not in docs/categories.md";
      continue;
    }
    EXPECT_EQ(it->second, c.primary) << c.name;
    documented.erase(it);
  }
  for (const auto& [name, _] : documented)
    ADD_FAILURE() << name << " is documented, not in the table";
}

TEST(Categories, DebugVariablesForTheRerun) {
  auto v = category_debug_variables("collective_mismatch");
  EXPECT_EQ(v.at("TORCH_DISTRIBUTED_DEBUG"), "DETAIL");
  EXPECT_EQ(category_debug_variables("cuda_error").at("CUDA_LAUNCH_BLOCKING"), "1");
  EXPECT_EQ(category_debug_variables("ddp_unused_parameters").at("TORCH_DISTRIBUTED_DEBUG"),
            "INFO");
  EXPECT_TRUE(category_debug_variables("python_exception").empty());
  EXPECT_TRUE(category_debug_variables("no_such_category").empty());
}

TEST(Categories, ClassifyByTheFirstRowThatMatches) {
  EXPECT_EQ(classify_exception("RuntimeError", "CUDA out of memory. Tried to allocate"),
            "cuda_oom");
  EXPECT_EQ(classify_exception("torch.distributed.DistNetworkError",
                               "port: 29955, name: EADDRINUSE, message: address already in use"),
            "infra");
  // The CUDA libraries' and other devices' words for the same failures.
  EXPECT_EQ(classify_exception("RuntimeError", "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"),
            "cuda_error");
  EXPECT_EQ(classify_exception("RuntimeError",
                               "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when "
                               "calling `cublasCreate(handle)`"),
            "cuda_oom");
  EXPECT_EQ(classify_exception("RuntimeError", "MPS backend out of memory (MPS allocated: 1 GB"),
            "cuda_oom");
  EXPECT_EQ(classify_exception("RuntimeError",
                               "NVML_SUCCESS == r INTERNAL ASSERT FAILED at "
                               "\"../c10/cuda/CUDACachingAllocator.cpp\":1154"),
            "cuda_error");
  EXPECT_EQ(classify_exception("OSError", "[Errno 12] Cannot allocate memory"), "host_oom");
  EXPECT_EQ(classify_exception("RuntimeError",
                               "DataLoader worker (pid 12) is killed by signal: Bus error. It is "
                               "possible that dataloader's workers are out of shared memory."),
            "host_oom");
  // A worker killed by SIGKILL with no memory evidence stays the program's error.
  EXPECT_EQ(classify_exception("RuntimeError",
                               "DataLoader worker (pid 12) is killed by signal: "
                               "Killed."),
            "python_exception");
  EXPECT_EQ(classify_exception("RuntimeError",
                               "[pair.cc:799] connect [127.0.1.1]:41241: "
                               "Connection refused"),
            "rendezvous");
  // Slurm's word for a node that died under the job: not the program's bug.
  EXPECT_EQ(classify_exception("", "srun: error: Node failure on jean-zay-iam37"), "infra");
  // An echo quoting a primary's words stays an echo.
  EXPECT_EQ(classify_exception("RuntimeError",
                               "NCCL error in: x, remote process exited or there "
                               "was a network error, NCCL version 2.21.5"),
            "peer_closed");
  EXPECT_EQ(classify_exception("RuntimeError",
                               "It looks like your LightningModule has parameters "
                               "that were not used in producing the loss"),
            "ddp_unused_parameters");
  EXPECT_EQ(classify_exception("MemoryError", ""), "host_oom");
  EXPECT_EQ(classify_exception("c10::Error", "bad"), "cpp_exception");
  EXPECT_EQ(classify_exception("ValueError", "bad"), "python_exception");
  EXPECT_EQ(classify_line("memory allocation of 1073741824 bytes failed"), "host_oom");
  EXPECT_EQ(classify_line("epoch 3 loss 0.5"), "");
}

TEST(Categories, TheErrorAnEchoQuotes) {
  EXPECT_EQ(quoted_primary("NCCL error in: x.cpp:1, remote process exited or there was a network "
                           "error, NCCL version 2.21.5"),
            "nccl_error");
  EXPECT_EQ(quoted_primary("Connection reset by peer"), "");
}

TEST(Categories, ShapeChecksOfACollectiveAreAMismatch) {
  EXPECT_EQ(classify_exception("RuntimeError",
                               "Error when verifying shape tensors for collective ALLREDUCE on "
                               "rank 0. This likely indicates that input shapes"),
            "collective_mismatch");
}

TEST(Categories, DdpsParamCheckAndANanGradNorm) {
  EXPECT_EQ(classify_exception("RuntimeError",
                               "params[3] in this process with sizes [4, 4] appears not to match "
                               "strides of the same param in process 0."),
            "ddp_model_mismatch");
  EXPECT_EQ(classify_exception("AssertionError", "Rank 2: found NaN in local grad norm"),
            "nonfinite_loss");
}
