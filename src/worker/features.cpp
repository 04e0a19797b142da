#include "worker/features.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "worker/phase.hpp"

namespace ddpbisect::worker {

double param_checksum(const std::vector<torch::Tensor>& params) {
  double s = 0;
  for (const auto& p : params) s += p.to(torch::kDouble).sum().item<double>();
  return s;
}

Features::Features(const TrialConfig& trial, const RankEnv& env, const DataSet& data,
                   const std::vector<int64_t>& shard)
    : trial_(trial), env_(env), data_(data), shard_(shard) {
  eval_every_ = std::max<int64_t>(1, trial.param("eval_every", 5));
  if (trial.has_feature("grad_accum"))
    micro_batches_ = std::max<int64_t>(1, trial.param("grad_accum", 2));
}

void Features::before_optimizer(std::vector<torch::Tensor>& params) const {
  if (trial_.has_feature("grad_clip")) torch::nn::utils::clip_grad_norm_(params, 1.0);
}

void Features::after_step(Net& net, std::vector<torch::Tensor>& params, Comm& comm,
                          int64_t step) const {
  DDPB_PHASE();
  if (trial_.has_feature("sync_bn")) sync_batchnorm(net, comm);
  if (trial_.has_feature("param_checksum")) check_replicas(params, comm, step);
  bool boundary = (step + 1) % eval_every_ == 0;
  if (trial_.has_feature("eval") && boundary) evaluate(net, comm);
  if (trial_.has_feature("checkpoint") && boundary) checkpoint(params, comm);
}

void Features::sync_batchnorm(Net& net, Comm& comm) const {
  DDPB_PHASE();
  auto bufs = net->batchnorm_buffers();
  if (bufs.empty()) return;
  comm.allreduce(bufs);
  torch::NoGradGuard ng;
  for (auto& t : bufs) t.div_(env_.world_size);
}

void Features::check_replicas(const std::vector<torch::Tensor>& params, Comm& comm,
                              int64_t step) const {
  DDPB_PHASE();
  double s = param_checksum(params);
  std::vector<torch::Tensor> t = {torch::tensor({s, -s}, torch::kDouble)};
  comm.allreduce(t, c10d::ReduceOp::MAX);
  double hi = t[0][0].item<double>(), lo = -t[0][1].item<double>();
  if (hi - lo > 1e-9 * (1.0 + std::fabs(s)))
    throw NamedError("RuntimeError", "parameters diverged across ranks at step " +
                                         std::to_string(step) + ": checksums range from " +
                                         std::to_string(lo) + " to " + std::to_string(hi));
}

void Features::evaluate(Net& net, Comm& comm) const {
  DDPB_PHASE();
  torch::NoGradGuard ng;
  net->eval();
  std::vector<int64_t> batch(shard_.begin(), shard_.begin() + std::min<size_t>(shard_.size(), 8));
  auto [x, y] = data_.batch(batch);
  auto out = net->forward(x);
  std::vector<torch::Tensor> l = {out.abs().mean().reshape({1})};
  comm.allreduce(l);
  net->train();
}

// Rank 0 saves, every rank loads after a barrier: a torn or missing file fails the load.
void Features::checkpoint(std::vector<torch::Tensor>& params, Comm& comm) const {
  DDPB_PHASE();
  if (params.empty()) return;
  namespace fs = std::filesystem;
  const char* dir = std::getenv("DDPBISECT_TRIAL_DIR");
  fs::path path = fs::path(dir && *dir ? dir : fs::temp_directory_path().string()) /
                  ("checkpoint-" + std::to_string(env_.master_port) + ".pt");
  if (env_.rank == 0) torch::save(params, path.string());
  comm.barrier();
  std::vector<torch::Tensor> loaded;
  torch::load(loaded, path.string());
  torch::NoGradGuard ng;
  for (size_t i = 0; i < params.size() && i < loaded.size(); ++i) params[i].copy_(loaded[i]);
}

}  // namespace ddpbisect::worker
