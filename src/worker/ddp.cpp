#include "worker/ddp.hpp"

#include <torch/csrc/distributed/c10d/debug.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ddpbisect::worker {

namespace {

constexpr int64_t kBucketBytesCap = 25 * 1024 * 1024;        // bucket_cap_mb=25
constexpr size_t kBroadcastBucketBytes = 250 * 1024 * 1024;  // DDP's broadcast_bucket_size

// _build_params_for_reducer: the parameters that require a gradient, in module order, each once.
std::vector<torch::Tensor> reducer_params(const torch::nn::Module& module,
                                          std::unordered_map<size_t, std::string>* names) {
  std::vector<torch::Tensor> params;
  for (const auto& p : module.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    bool seen = false;
    for (const auto& q : params) seen = seen || q.is_same(p.value());
    if (seen) continue;
    // _build_debug_param_to_name_mapping: names only when TORCH_DISTRIBUTED_DEBUG is set, so
    // DDP's errors name the parameters rather than their indices.
    if (c10d::debug_level() != c10d::DebugLevel::Off) (*names)[params.size()] = p.key();
    params.push_back(p.value());
  }
  return params;
}

// _sync_module_states: rank 0's parameters and buffers to every rank.
void sync_module_states(const torch::nn::Module& module, Comm& comm) {
  std::vector<torch::Tensor> states;
  for (const auto& p : module.parameters()) states.push_back(p.detach());
  for (const auto& b : module.buffers()) states.push_back(b.detach());
  if (!states.empty()) c10d::broadcast_coalesced(comm.group(), states, kBroadcastBucketBytes, 0);
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(torch::nn::Module& module, Comm& comm) {
  std::unordered_map<size_t, std::string> names;
  std::vector<torch::Tensor> params = reducer_params(module, &names);
  c10d::verify_params_across_processes(comm.group(), params, std::nullopt);
  sync_module_states(module, comm);
  // Without find_unused_parameters, the first iteration reduces every gradient in one bucket;
  // the reducer rebuilds the buckets from the order gradients arrived in (_ddp_init_helper).
  std::vector<bool> sparse(params.size(), false);
  auto buckets = std::get<0>(c10d::compute_bucket_assignment_by_size(
      params, {static_cast<size_t>(std::numeric_limits<int64_t>::max())}, sparse));
  std::reverse(buckets.begin(), buckets.end());  // gradients arrive in reverse module order
  reducer_ = std::make_shared<c10d::Reducer>(
      params, std::move(buckets), comm.group(), sparse, kBucketBytesCap,
      /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false, std::move(names),
      c10d::kDefaultFirstBucketBytes, /*skip_all_reduce_unused_params=*/false,
      /*use_python_reducer=*/false, /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
  logger_ = std::make_shared<c10d::Logger>(reducer_);
  reducer_->set_logger(logger_);
  logger_->set_construction_data_and_log("Net", /*device_ids=*/{}, /*output_device=*/-1,
                                         /*broadcast_buffers=*/false, /*has_sync_bn=*/false,
                                         /*static_graph=*/false);
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::pre_forward(bool sync) {
  if (!torch::GradMode::is_enabled()) return;
  if (sync) {
    logger_->set_runtime_stats_and_log();
    reducer_->prepare_for_forward();
  }
  reducer_->rebuild_buckets();
}

void DistributedDataParallel::post_forward(bool sync) {
  if (torch::GradMode::is_enabled() && sync) reducer_->prepare_for_backward({});
}

}  // namespace ddpbisect::worker
