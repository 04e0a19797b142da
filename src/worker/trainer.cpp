#include "worker/trainer.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

#include "worker/data.hpp"
#include "worker/ddp.hpp"
#include "worker/faults.hpp"
#include "worker/features.hpp"
#include "worker/model.hpp"
#include "worker/phase.hpp"

namespace ddpbisect::worker {

namespace {

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The progress protocol (docs/heartbeat.md): one line per step on stdout.
void heartbeat(int rank, int64_t step, double loss, int64_t seq) {
  std::printf(
      "DDPBISECT_HEARTBEAT {\"rank\":%d,\"step\":%lld,\"t\":%.3f,\"loss\":%.6g,\"seq\":%lld}\n",
      rank, static_cast<long long>(step), wall_seconds(), loss, static_cast<long long>(seq));
  std::fflush(stdout);
}

// What one rank trains: its model wrapped in DDP (when it has parameters), the optimizer, and the
// planted faults and features around each step.
struct Replica {
  Net net;
  std::vector<torch::Tensor> params;
  std::unique_ptr<DistributedDataParallel> ddp;
  std::unique_ptr<torch::optim::SGD> opt;
};

class Trainer {
 public:
  Trainer(const Spec& spec, const TrialConfig& trial, const RankEnv& env)
      : b_(*spec.builtin), trial_(trial), env_(env), data_(b_.dataset) {}

  void run() {
    DDPB_PHASE();
    torch::set_num_threads(static_cast<int>(trial_.param("threads", 1)));
    int64_t steps = trial_.param("steps", 20);
    batch_size_ = std::max<int64_t>(1, trial_.param("batch_size", 16));
    shard_ = this_shard();
    FaultPlan plan(b_.faults, trial_, RankPlace{env_.rank, env_.node_rank, env_.world_size},
                   shard_);
    Comm comm(env_, b_.collective_timeout);
    Replica r = build(comm);
    Features features(trial_, env_, data_, shard_);
    double loss = 0;
    for (int64_t step = 0; step < steps; ++step) {
      plan.before_step(step, r.net, r.params);
      loss = train_step(r, plan, features.micro_batches(), step);
      plan.after_reduction(comm, step);
      if (r.opt) {
        features.before_optimizer(r.params);
        r.opt->step();
      }
      features.after_step(r.net, r.params, comm, step);
      heartbeat(env_.rank, step, loss, comm.seq());
    }
    std::printf(
        "ddpbisect-worker: rank %d finished %lld steps; final loss %.6g; param checksum %.17g\n",
        env_.rank, static_cast<long long>(steps), loss, param_checksum(r.params));
    std::fflush(stdout);
  }

 private:
  std::vector<int64_t> this_shard() const {
    auto subset = trial_.samples.indices();
    auto shard =
        shard_indices(subset, env_.rank, env_.world_size, b_.dataset.drop_last, b_.dataset.pad);
    if (shard.empty())
      throw NamedError("ValueError", "rank " + std::to_string(env_.rank) + " got an empty shard: " +
                                         std::to_string(subset.size()) + " samples across " +
                                         std::to_string(env_.world_size) + " ranks");
    return shard;
  }

  // The same seed on every rank, then DDP's own start: rank 0's state broadcast to all.
  Replica build(Comm& comm) {
    DDPB_PHASE();
    ModelShape shape;
    shape.features = data_.features();
    shape.hidden = trial_.param("hidden", 32);
    shape.outputs = data_.outputs();
    torch::manual_seed(static_cast<uint64_t>(b_.dataset.seed));
    Replica r{Net(trial_.components, shape), {}, nullptr, nullptr};
    r.params = r.net->parameters();
    if (r.params.empty()) return r;  // DDP refuses a module without parameters
    r.ddp = std::make_unique<DistributedDataParallel>(*r.net, comm);
    r.opt = std::make_unique<torch::optim::SGD>(r.params, torch::optim::SGDOptions(b_.lr));
    return r;
  }

  // One optimizer step's gradients: `micro` micro-batches, all but the last under no_sync().
  double train_step(Replica& r, const FaultPlan& plan, int64_t micro, int64_t step) {
    DDPB_PHASE();
    for (auto& p : r.params) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
    double loss = 0;
    for (int64_t m = 0; m < micro; ++m) {
      std::vector<int64_t> batch;
      for (int64_t i = 0; i < batch_size_ && i < static_cast<int64_t>(shard_.size()); ++i)
        batch.push_back(shard_[cursor_++ % shard_.size()]);
      loss += train_micro_step(r, batch, plan, step, m == micro - 1) / micro;
    }
    return loss;
  }

  double train_micro_step(Replica& r, const std::vector<int64_t>& batch, const FaultPlan& plan,
                          int64_t step, bool sync) {
    DDPB_PHASE();
    auto [x, y] = data_.batch(batch);
    if (r.ddp) r.ddp->pre_forward(sync);
    torch::Tensor out = plan.corrupt_output(r.net->forward(x), batch, step);
    if (r.ddp) r.ddp->post_forward(sync);
    torch::Tensor loss = data_.classification() ? torch::nn::functional::cross_entropy(out, y)
                                                : torch::mse_loss(out.squeeze(-1), y);
    double value = loss.item<double>();
    if (!std::isfinite(value))
      throw NamedError("FloatingPointError", "non-finite loss " + std::to_string(value) +
                                                 " at step " + std::to_string(step) + " on rank " +
                                                 std::to_string(env_.rank));
    if (loss.requires_grad()) backward_and_allreduce(loss);
    return value;
  }

  // Under DDP the gradients' all-reduce runs inside backward: the reducer launches each bucket as
  // its gradients are ready and waits for them all before backward returns, so a rank blocked
  // here is waiting for its peers.
  void backward_and_allreduce(torch::Tensor& loss) {
    DDPB_PHASE();
    loss.backward();
  }

  const BuiltinWorkload& b_;
  const TrialConfig& trial_;
  RankEnv env_;
  DataSet data_;
  std::vector<int64_t> shard_;
  int64_t batch_size_ = 0;
  size_t cursor_ = 0;
};

}  // namespace

void train(const Spec& spec, const TrialConfig& trial, const RankEnv& env) {
  Trainer t(spec, trial, env);
  t.run();
}

}  // namespace ddpbisect::worker
