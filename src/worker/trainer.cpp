#include "worker/trainer.hpp"

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "worker/data.hpp"
#include "worker/faults.hpp"
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

// A data-loading thread that deadlocks: it needs the lock the main thread holds while waiting.
[[noreturn]] void deadlocked_loader() {
  DDPB_PHASE();
  static std::mutex batch_lock;
  std::lock_guard<std::mutex> hold(batch_lock);
  std::thread loader([] {
    DDPB_PHASE();
    std::lock_guard<std::mutex> take(batch_lock);  // never acquired
  });
  loader.join();
  std::abort();
}

[[noreturn]] void stop_calling_collectives() {
  DDPB_PHASE();
  while (true) ::pause();
}

void open_node_local_file(const std::string& path) {
  DDPB_PHASE();
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw NamedError("FileNotFoundError", "[Errno 2] No such file or directory: '" + path + "'");
  std::fclose(f);
}

void allocate_too_much() {
  DDPB_PHASE();
  // 16 TiB: the CPU allocator refuses with c10's "can't allocate memory" error.
  auto t = torch::empty({int64_t{1} << 42}, torch::kFloat);
  t.fill_(0);
}

void fire_step_faults(const FaultPlan& plan, int64_t step, int rank, const Millis& straggle) {
  DDPB_PHASE();
  for (const Fault* f : plan.active("missing_file", step)) open_node_local_file(f->path);
  for (const Fault* f : plan.active("raise", step))
    throw NamedError("RuntimeError", f->message + " (rank " + std::to_string(rank) + ", step " +
                                         std::to_string(step) + ")");
  if (plan.any("oom", step)) allocate_too_much();
  if (plan.any("abort", step)) {
    std::fprintf(stderr, "ddpbisect-worker: planted abort on rank %d at step %lld\n", rank,
                 static_cast<long long>(step));
    std::abort();
  }
  if (plan.any("segfault", step)) std::raise(SIGSEGV);
  if (plan.any("sigkill", step)) std::raise(SIGKILL);
  for (const Fault* f : plan.active("exit", step)) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(static_cast<int>(f->exit_code));
  }
  for (const Fault* f : plan.active("hang", step)) {
    if (f->mode == "collectives") stop_calling_collectives();
    deadlocked_loader();
  }
  if (straggle.count() > 0) std::this_thread::sleep_for(straggle);
}

// DDP's gradient averaging: gradients coalesced into ~1 MiB buckets, each all-reduced and divided
// by the world size. Like DDP's Reducer, a rank whose parameters got no gradient never finishes
// its reduction and fails at the next iteration with DDP's own message.
class GradientReducer {
 public:
  GradientReducer(std::vector<torch::Tensor> params, Comm& comm)
      : params_(std::move(params)), comm_(comm) {}

  void ensure_prior_reduction_finished(int rank) const {
    if (unready_.empty()) return;
    std::string indices;
    for (size_t i : unready_) indices += (indices.empty() ? "" : " ") + std::to_string(i);
    throw NamedError(
        "RuntimeError",
        "Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your module has parameters that were not used in producing "
        "loss. You can enable unused parameter detection by passing the keyword argument "
        "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
        "making sure all `forward` function outputs participate in calculating loss. \n"
        "Parameter indices which did not receive grad for rank " +
            std::to_string(rank) + ": " + indices);
  }

  void reduce() {
    DDPB_PHASE();
    unready_.clear();
    for (size_t i = 0; i < params_.size(); ++i)
      if (!params_[i].grad().defined()) unready_.push_back(i);
    constexpr int64_t kBucketBytes = 1 << 20;
    size_t begin = 0;
    while (begin < params_.size()) {
      size_t end = begin;
      int64_t bytes = 0;
      bool ready = true;
      while (end < params_.size() &&
             (end == begin || bytes + params_[end].numel() * 4 <= kBucketBytes)) {
        ready = ready && params_[end].grad().defined();
        bytes += params_[end++].numel() * 4;
      }
      if (ready) reduce_bucket(begin, end);  // a bucket with an unready parameter never launches
      begin = end;
    }
  }

 private:
  void reduce_bucket(size_t begin, size_t end) {
    std::vector<torch::Tensor> flat;
    for (size_t i = begin; i < end; ++i) flat.push_back(params_[i].grad().reshape({-1}));
    std::vector<torch::Tensor> bucket = {torch::cat(flat)};
    comm_.allreduce(bucket);
    bucket[0].div_(comm_.world());
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      auto n = params_[i].numel();
      params_[i].mutable_grad().copy_(bucket[0].slice(0, offset, offset + n).view_as(params_[i]));
      offset += n;
    }
  }

  std::vector<torch::Tensor> params_;
  Comm& comm_;
  std::vector<size_t> unready_;
};

// A corrupt sample: its row of the model output turns non-finite when it is in the batch (every
// row when the fault names no samples).
torch::Tensor corrupt_samples(const torch::Tensor& out, const std::vector<int64_t>& batch,
                              const Fault& f) {
  DDPB_PHASE();
  auto mask = torch::zeros({static_cast<int64_t>(batch.size()), 1});
  for (size_t i = 0; i < batch.size(); ++i)
    if (!f.requires_.samples || f.requires_.samples->contains(batch[i]))
      mask[static_cast<int64_t>(i)][0] = std::nan("");
  return out + mask;
}

double checksum(const std::vector<torch::Tensor>& params) {
  double s = 0;
  for (const auto& p : params) s += p.to(torch::kDouble).sum().item<double>();
  return s;
}

class Trainer {
 public:
  Trainer(const Spec& spec, const TrialConfig& trial, const RankEnv& env)
      : spec_(spec), b_(*spec.builtin), trial_(trial), env_(env), data_(b_.dataset) {}

  void run() {
    DDPB_PHASE();
    torch::set_num_threads(static_cast<int>(trial_.param("threads", 1)));
    steps_ = trial_.param("steps", 20);
    batch_size_ = std::max<int64_t>(1, trial_.param("batch_size", 16));
    eval_every_ = std::max<int64_t>(1, trial_.param("eval_every", 5));
    accum_ =
        trial_.has_feature("grad_accum") ? std::max<int64_t>(1, trial_.param("grad_accum", 2)) : 1;

    auto subset = trial_.samples.indices();
    shard_ =
        shard_indices(subset, env_.rank, env_.world_size, b_.dataset.drop_last, b_.dataset.pad);
    if (shard_.empty())
      throw NamedError("ValueError", "rank " + std::to_string(env_.rank) + " got an empty shard: " +
                                         std::to_string(subset.size()) + " samples across " +
                                         std::to_string(env_.world_size) + " ranks");
    RankPlace place{env_.rank, env_.node_rank, env_.world_size};
    FaultPlan plan(b_.faults, trial_, place, shard_);

    Comm comm(env_, b_.collective_timeout);
    ModelShape shape;
    shape.features = data_.features();
    shape.hidden = trial_.param("hidden", 32);
    shape.outputs = data_.outputs();
    torch::manual_seed(static_cast<uint64_t>(b_.dataset.seed));
    Net net(trial_.components, shape);
    auto params = net->parameters();
    if (!params.empty()) comm.broadcast(params);  // DDP's initial state sync

    GradientReducer reducer(params, comm);
    std::unique_ptr<torch::optim::SGD> opt;
    if (!params.empty())
      opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(b_.lr));

    Millis straggle{0};
    bool diverged = false;
    double loss_value = 0;
    size_t cursor = 0;
    for (int64_t step = 0; step < steps_; ++step) {
      for (const Fault* f : plan.active("straggler", step)) straggle = f->delay;
      for (const Fault* f : plan.active("unused_parameter", step)) net->set_unused(f->component);
      fire_step_faults(plan, step, env_.rank, straggle);
      if (!diverged && plan.any("divergence", step)) {
        torch::NoGradGuard ng;
        for (auto& p : params) p.add_(1e-3 * (env_.rank + 1));
        diverged = true;
      }
      loss_value = 0;
      for (auto& p : params) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
      for (int64_t micro = 0; micro < accum_; ++micro) {
        std::vector<int64_t> batch;
        for (int64_t i = 0; i < batch_size_ && i < static_cast<int64_t>(shard_.size()); ++i)
          batch.push_back(shard_[cursor++ % shard_.size()]);
        loss_value += train_micro_step(net, reducer, batch, plan, step) / accum_;
      }
      if (!params.empty()) reducer.reduce();  // once per step, as DDP under no_sync()
      collective_faults(comm, plan, step);
      if (opt) {
        if (trial_.has_feature("grad_clip")) torch::nn::utils::clip_grad_norm_(params, 1.0);
        opt->step();
      }
      features_after_step(net, params, comm, step);
      heartbeat(env_.rank, step, loss_value, comm.seq());
    }
    std::printf(
        "ddpbisect-worker: rank %d finished %lld steps; final loss %.6g; param checksum %.17g\n",
        env_.rank, static_cast<long long>(steps_), loss_value, checksum(params));
    std::fflush(stdout);
  }

 private:
  double train_micro_step(Net& net, GradientReducer& reducer, const std::vector<int64_t>& batch,
                          const FaultPlan& plan, int64_t step) {
    DDPB_PHASE();
    auto [x, y] = data_.batch(batch);
    reducer.ensure_prior_reduction_finished(env_.rank);
    torch::Tensor out = net->forward(x);
    for (const Fault* f : plan.active("nan", step)) out = corrupt_samples(out, batch, *f);
    torch::Tensor loss = data_.classification() ? torch::nn::functional::cross_entropy(out, y)
                                                : torch::mse_loss(out.squeeze(-1), y);
    double value = loss.item<double>();
    if (!std::isfinite(value))
      throw NamedError("FloatingPointError", "non-finite loss " + std::to_string(value) +
                                                 " at step " + std::to_string(step) + " on rank " +
                                                 std::to_string(env_.rank));
    if (loss.requires_grad()) backward(loss);
    return value;
  }

  void backward(torch::Tensor& loss) {
    DDPB_PHASE();
    loss.backward();
  }

  void collective_faults(Comm& comm, const FaultPlan& plan, int64_t step) {
    DDPB_PHASE();
    if (plan.any("collective_mismatch", step)) {
      std::vector<torch::Tensor> extra = {torch::ones({3})};
      comm.allreduce(extra);  // only the ranks where the fault fires call this one
    }
    if (plan.planted("size_mismatch")) {
      int64_t n = 8 + (plan.any("size_mismatch", step) ? 4 * (env_.rank + 1) : 0);
      std::vector<torch::Tensor> metrics = {torch::zeros({n})};
      comm.allreduce(metrics);
    }
  }

  void features_after_step(Net& net, std::vector<torch::Tensor>& params, Comm& comm, int64_t step) {
    DDPB_PHASE();
    if (trial_.has_feature("sync_bn")) {
      auto bufs = net->batchnorm_buffers();
      if (!bufs.empty()) {
        comm.allreduce(bufs);
        torch::NoGradGuard ng;
        for (auto& t : bufs) t.div_(env_.world_size);
      }
    }
    if (trial_.has_feature("param_checksum")) check_replicas(params, comm, step);
    bool boundary = (step + 1) % eval_every_ == 0;
    if (trial_.has_feature("eval") && boundary) evaluate(net, comm);
    if (trial_.has_feature("checkpoint") && boundary) checkpoint(params, comm, step);
  }

  void check_replicas(const std::vector<torch::Tensor>& params, Comm& comm, int64_t step) {
    DDPB_PHASE();
    double s = checksum(params);
    std::vector<torch::Tensor> t = {torch::tensor({s, -s}, torch::kDouble)};
    comm.allreduce(t, c10d::ReduceOp::MAX);
    double hi = t[0][0].item<double>(), lo = -t[0][1].item<double>();
    if (hi - lo > 1e-9 * (1.0 + std::fabs(s)))
      throw NamedError("RuntimeError", "parameters diverged across ranks at step " +
                                           std::to_string(step) + ": checksums range from " +
                                           std::to_string(lo) + " to " + std::to_string(hi));
  }

  void evaluate(Net& net, Comm& comm) {
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

  void checkpoint(std::vector<torch::Tensor>& params, Comm& comm, int64_t step) {
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
    (void)step;
  }

  const Spec& spec_;
  const BuiltinWorkload& b_;
  const TrialConfig& trial_;
  RankEnv env_;
  DataSet data_;
  std::vector<int64_t> shard_;
  int64_t steps_ = 0, batch_size_ = 0, eval_every_ = 0, accum_ = 1;
};

}  // namespace

void train(const Spec& spec, const TrialConfig& trial, const RankEnv& env) {
  Trainer t(spec, trial, env);
  t.run();
}

}  // namespace ddpbisect::worker
