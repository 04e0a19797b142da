#include "worker/faults.hpp"

#include <algorithm>

namespace ddpbisect::worker {

FaultPlan::FaultPlan(const std::vector<Fault>& faults, const TrialConfig& trial,
                     const RankPlace& place, const std::vector<int64_t>& shard)
    : faults_(faults), trial_(trial), place_(place), shard_(shard) {
  std::sort(shard_.begin(), shard_.end());
}

bool FaultPlan::planted(const std::string& kind) const {
  return std::any_of(faults_.begin(), faults_.end(),
                     [&](const Fault& f) { return f.kind == kind; });
}

std::vector<const Fault*> FaultPlan::active(const std::string& kind, int64_t step) const {
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

}  // namespace ddpbisect::worker
