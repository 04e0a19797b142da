#include "worker/faults.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>

#include "worker/phase.hpp"

namespace ddpbisect::worker {

// ---- Conditions: a fault's `requires`, the same for every kind ----

FaultPlan::FaultPlan(const std::vector<Fault>& faults, const TrialConfig& trial,
                     const RankPlace& place, const std::vector<int64_t>& shard)
    : faults_(faults), trial_(trial), place_(place), shard_(shard) {
  std::sort(shard_.begin(), shard_.end());
}

bool FaultPlan::planted(FaultKind kind) const {
  return std::any_of(faults_.begin(), faults_.end(),
                     [&](const Fault& f) { return f.kind == kind; });
}

std::vector<const Fault*> FaultPlan::active(FaultKind kind, int64_t step) const {
  std::vector<const Fault*> out;
  for (size_t i = 0; i < faults_.size(); ++i)
    if (faults_[i].kind == kind && holds(faults_[i], i, step, nullptr)) out.push_back(&faults_[i]);
  return out;
}

bool FaultPlan::holds(const Fault& f, size_t index, int64_t step, std::string* why) const {
  const FaultRequires& q = f.requires_;
  bool ok = true;
  auto check = [&](bool cond, const std::string& what) {
    if (why) *why += std::string(cond ? "  holds: " : "  unmet: ") + what + "\n";
    ok = ok && cond;
  };
  auto in = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  if (q.ranks)
    check(in(*q.ranks, place_.rank), "rank " + std::to_string(place_.rank) + " in ranks");
  if (q.min_world_size)
    check(place_.world >= *q.min_world_size, "world size " + std::to_string(place_.world) +
                                                 " >= " + std::to_string(*q.min_world_size));
  if (q.nodes)
    check(in(*q.nodes, place_.node), "node " + std::to_string(place_.node) + " in nodes");
  if (q.step)
    check(step >= *q.step, "step " + std::to_string(step) + " >= " + std::to_string(*q.step));
  for (const auto& c : q.components) check(trial_.has_component(c), "component " + c + " present");
  for (const auto& feat : q.features) check(trial_.has_feature(feat), "feature " + feat + " on");
  for (const auto& c : q.absent_components)
    check(!trial_.has_component(c), "component " + c + " absent");
  if (q.samples) {
    bool any = std::any_of(shard_.begin(), shard_.end(),
                           [&](int64_t i) { return q.samples->contains(i); });
    check(any, "one of samples " + q.samples->to_string() + " in this rank's shard");
  }
  if (q.all_samples) {
    bool all = true;
    for (int64_t i : q.all_samples->indices())
      all = all && std::binary_search(shard_.begin(), shard_.end(), i);
    check(all, "all of samples " + q.all_samples->to_string() + " in this rank's shard");
  }
  for (const auto& [name, bound] : q.params) {
    auto it = trial_.params.find(name);
    check(it != trial_.params.end() && bound.holds(it->second), "param " + name + " within bounds");
  }
  if (f.probability < 1.0) {
    // One draw per trial and fault, the same on every rank of the trial.
    uint64_t x = trial_.seed * 0x9e3779b97f4a7c15ull + index * 0xbf58476d1ce4e5b9ull + 1;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    double u = static_cast<double>(x >> 11) / 9007199254740992.0;
    check(u < f.probability, "random draw below probability");
  }
  return ok;
}

std::string FaultPlan::explain(const Fault& f, int64_t step) const {
  std::string why;
  size_t index = static_cast<size_t>(&f - faults_.data());
  holds(f, index, step, &why);
  return why;
}

// ---- Effects, one per kind ----

namespace {

void open_node_local_file(const std::string& path) {  // missing_file
  DDPB_PHASE();
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw NamedError("FileNotFoundError", "[Errno 2] No such file or directory: '" + path + "'");
  std::fclose(f);
}

void allocate_too_much() {  // oom
  DDPB_PHASE();
  // 16 TiB: the CPU allocator refuses with c10's "can't allocate memory" error.
  auto t = torch::empty({int64_t{1} << 42}, torch::kFloat);
  t.fill_(0);
}

// hang, mode loader: a data-loading thread that deadlocks, needing the lock the main thread holds
// while it waits for that thread.
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

[[noreturn]] void stop_calling_collectives() {  // hang, mode collectives
  DDPB_PHASE();
  while (true) ::pause();
}

// The kinds that end or stop this rank, in a fixed order.
void fire_step_faults(const FaultPlan& plan, int64_t step, int rank) {
  DDPB_PHASE();
  for (const Fault* f : plan.active(FaultKind::missing_file, step)) open_node_local_file(f->path);
  for (const Fault* f : plan.active(FaultKind::raise, step))
    throw NamedError("RuntimeError", f->message + " (rank " + std::to_string(rank) + ", step " +
                                         std::to_string(step) + ")");
  if (plan.any(FaultKind::oom, step)) allocate_too_much();
  if (plan.any(FaultKind::abort, step)) {
    std::fprintf(stderr, "ddpbisect-worker: planted abort on rank %d at step %lld\n", rank,
                 static_cast<long long>(step));
    std::abort();
  }
  if (plan.any(FaultKind::segfault, step)) std::raise(SIGSEGV);
  if (plan.any(FaultKind::sigkill, step)) std::raise(SIGKILL);
  for (const Fault* f : plan.active(FaultKind::exit, step)) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(static_cast<int>(f->exit_code));
  }
  for (const Fault* f : plan.active(FaultKind::hang, step)) {
    if (f->mode == HangMode::collectives) stop_calling_collectives();
    deadlocked_loader();
  }
}

}  // namespace

void FaultPlan::before_step(int64_t step, Net& net, std::vector<torch::Tensor>& params) {
  DDPB_PHASE();
  for (const Fault* f : active(FaultKind::straggler, step)) straggle_ = f->delay;
  for (const Fault* f : active(FaultKind::unused_parameter, step)) net->set_unused(f->component);
  fire_step_faults(*this, step, place_.rank);
  if (straggle_.count() > 0) std::this_thread::sleep_for(straggle_);
  if (!diverged_ && any(FaultKind::divergence, step)) {  // one replica's parameters drift once
    torch::NoGradGuard ng;
    for (auto& p : params) p.add_(1e-3 * (place_.rank + 1));
    diverged_ = true;
  }
}

torch::Tensor FaultPlan::corrupt_output(const torch::Tensor& out, const std::vector<int64_t>& batch,
                                        int64_t step) const {
  DDPB_PHASE();
  torch::Tensor result = out;
  for (const Fault* f : active(FaultKind::nan, step)) {
    // The row of each named sample in the batch (every row when the fault names no samples).
    auto mask = torch::zeros({static_cast<int64_t>(batch.size()), 1});
    for (size_t i = 0; i < batch.size(); ++i)
      if (!f->requires_.samples || f->requires_.samples->contains(batch[i]))
        mask[static_cast<int64_t>(i)][0] = std::nan("");
    result = result + mask;
  }
  return result;
}

void FaultPlan::after_reduction(Comm& comm, int64_t step) const {
  DDPB_PHASE();
  if (any(FaultKind::collective_mismatch, step)) {
    std::vector<torch::Tensor> extra = {torch::ones({3})};
    comm.allreduce(extra);  // only the ranks where the fault fires call this one
  }
  if (planted(FaultKind::size_mismatch)) {  // every rank calls it; where the fault fires, with more
                                            // values
    int64_t n = 8 + (any(FaultKind::size_mismatch, step) ? 4 * (place_.rank + 1) : 0);
    std::vector<torch::Tensor> metrics = {torch::zeros({n})};
    comm.allreduce(metrics);
  }
}

}  // namespace ddpbisect::worker
