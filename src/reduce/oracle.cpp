#include "reduce/oracle.hpp"

#include <cmath>
#include <functional>
#include <future>
#include <random>

#include "common/interrupt.hpp"
#include "observe/trial_runner.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {
json record_json(const TrialConfig& c, const RunRecord& r) {
  json j = {{"type", "trial"},
            {"key", c.canonical()},
            {"config", c.to_json()},
            {"status", to_string(r.status)},
            {"last_step", r.last_step},
            {"dir", r.dir},
            {"text", r.text.substr(0, 4000)}};
  j["signature"] = r.signature ? r.signature->to_json() : json(nullptr);
  return j;
}
}  // namespace

Oracle::Oracle(const Spec& spec, OracleOptions options, Journal& journal, Listener listener)
    : spec_(spec),
      opt_(std::move(options)),
      journal_(journal),
      listener_(std::move(listener)),
      launcher_(make_launcher(spec.launcher)) {
  for (const auto& e : journal_.loaded()) {
    std::string type = e.value("type", "");
    if (type == "header") salt_ = e.value("salt", uint64_t{0});
    if (type == "trial") {
      RunRecord r;
      r.status = parse_trial_status(e.value("status", "")).value_or(TrialStatus::Infra);
      if (e.contains("signature") && e["signature"].is_object())
        r.signature = Signature::from_json(e["signature"]);
      r.last_step = e.value("last_step", -1LL);
      r.dir = e.value("dir", "");
      r.text = e.value("text", "");
      r.replayed = true;
      replay_[e.value("key", "")].push_back(r);
    }
    if (type == "elapsed") replayed_elapsed_ = e.value("elapsed_s", 0.0);
  }
  if (salt_ == 0) {
    salt_ = std::random_device{}() | (uint64_t{std::random_device{}()} << 32) | 1;
    journal_.append({{"type", "header"}, {"salt", salt_}, {"spec", spec.file}});
  }
}

uint64_t Oracle::seed_for(const std::string& key, size_t attempt) const {
  uint64_t h = std::hash<std::string>{}(key) ^ (salt_ * 0x9e3779b97f4a7c15ull);
  h ^= (attempt + 1) * 0xbf58476d1ce4e5b9ull;
  return h ? h : 1;
}

double Oracle::elapsed_s() const {
  return replayed_elapsed_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool Oracle::exhausted() const {
  if (opt_.max_trials && stats_.trials >= *opt_.max_trials) return true;
  if (opt_.max_time && elapsed_s() * 1000.0 >= static_cast<double>(opt_.max_time->count()))
    return true;
  return false;
}

RunRecord Oracle::fresh_trial(const TrialConfig& config, size_t attempt_base,
                              const std::map<std::string, std::string>& extra_env) {
  RunRecord r;
  for (int attempt = 0; attempt < 3;
       ++attempt) {  // infra is retried, never counted as pass or fail
    throw_if_interrupted();  // never start a trial after Ctrl-C
    TrialRequest req;
    req.spec = &spec_;
    req.config = config;
    req.config.seed = seed_for(config.canonical(), attempt_base * 3 + static_cast<size_t>(attempt));
    req.dir = next_trial_dir(opt_.out_dir);
    req.extra_env = extra_env;
    req.launcher = launcher_;
    TrialOutcome o = run_trial(req);
    r.status = o.status;
    r.dir = o.dir;
    r.last_step = -1;
    for (const auto& rk : o.ranks) r.last_step = std::max(r.last_step, rk.last_step);
    if (const Signature* failure = o.failure()) {
      r.signature = *failure;
      r.text = o.diagnosis->root.message;
      for (const auto& line : o.diagnosis->root.excerpt) r.text += "\n" + line;
    }
    if (o.status == TrialStatus::Interrupted) throw Interrupted(o.interrupt_signal);
    if (o.status != TrialStatus::Infra) break;
  }
  return r;
}

void Oracle::record(const TrialConfig& config, const RunRecord& r) {
  std::string key = config.canonical();
  runs_[key].push_back(r);
  if (r.replayed) {
    ++stats_.replayed;
  } else {
    count(r);
    journal_.append(record_json(config, r));
  }
}

void Oracle::count(const RunRecord& r) {
  ++stats_.trials;
  switch (r.status) {
    case TrialStatus::Pass:
      ++stats_.passed;
      break;
    case TrialStatus::Fail:
      ++stats_.failed;
      break;
    case TrialStatus::Infra:
    case TrialStatus::Interrupted:
      ++stats_.infra;
      break;
  }
}

RunRecord Oracle::run(const TrialConfig& config) {
  std::string key = config.canonical();
  RunRecord r;
  if (auto it = replay_.find(key); it != replay_.end() && !it->second.empty()) {
    r = it->second.front();
    it->second.erase(it->second.begin());
  } else {
    r = fresh_trial(config, runs_[key].size());
  }
  record(config, r);
  if (listener_) listener_(config, r, has_target_ && matches(r));
  return r;
}

RunRecord Oracle::debug_run(const TrialConfig& config,
                            const std::map<std::string, std::string>& env) {
  RunRecord r = fresh_trial(config, 1000 + static_cast<size_t>(stats_.trials), env);
  count(r);
  json j = record_json(config, r);
  j["type"] = "debug";
  j["env"] = env;
  journal_.append(j);
  return r;
}

void Oracle::set_target(const Signature& target, double reproduction_rate) {
  target_ = target;
  has_target_ = true;
  rate_ = reproduction_rate;
  // Enough trials that an interesting configuration (failing at `rate`) shows its failure at least
  // once with probability `confidence`: (1 - rate)^n <= 1 - confidence. A single matching failure
  // proves a configuration interesting, so this sequential test can stop at the first one.
  if (rate_ >= 0.999) {
    repeats_ = 1;
  } else {
    double p = std::max(rate_, 0.05);
    repeats_ = static_cast<int>(std::ceil(std::log(1.0 - opt_.confidence) / std::log(1.0 - p)));
    repeats_ = std::clamp(repeats_, 2, 30);
  }
}

bool Oracle::matches(const RunRecord& r) const {
  return r.status == TrialStatus::Fail && r.signature &&
         same_failure(target_, *r.signature, opt_.level, opt_.regex, r.text);
}

const RunRecord* Oracle::matching_run(const TrialConfig& config) const {
  auto it = runs_.find(config.canonical());
  if (it == runs_.end()) return nullptr;
  for (auto r = it->second.rbegin(); r != it->second.rend(); ++r)
    if (matches(*r)) return &*r;
  return nullptr;
}

bool Oracle::interesting(const TrialConfig& config) {
  std::string key = config.canonical();
  auto& done = runs_[key];
  for (const auto& r : done)
    if (matches(r)) {
      ++stats_.cached;
      return true;
    }
  if (static_cast<int>(done.size()) >= repeats_) {
    ++stats_.cached;
    return false;
  }
  while (static_cast<int>(runs_[key].size()) < repeats_) {
    bool replay = replay_.count(key) && !replay_[key].empty();
    if (!replay && exhausted()) {
      budget_hit_ = true;
      return false;
    }
    if (matches(run(config))) return true;
  }
  return false;
}

std::vector<bool> Oracle::interesting_batch(const std::vector<TrialConfig>& configs) {
  std::vector<bool> out(configs.size(), false);
  if (opt_.jobs <= 1 || repeats_ > 1) {
    for (size_t i = 0; i < configs.size(); ++i)
      if ((out[i] = interesting(configs[i]))) break;
    return out;
  }
  // Concurrently, `jobs` at a time; the first interesting candidate in order wins, as it would
  // sequentially, so the result does not depend on --jobs.
  for (size_t begin = 0; begin < configs.size(); begin += static_cast<size_t>(opt_.jobs)) {
    size_t end = std::min(configs.size(), begin + static_cast<size_t>(opt_.jobs));
    std::vector<size_t> fresh;
    for (size_t i = begin; i < end; ++i) {
      std::string key = configs[i].canonical();
      bool known = !runs_[key].empty() || (replay_.count(key) && !replay_[key].empty());
      if (!known && !exhausted()) fresh.push_back(i);
    }
    std::vector<std::future<RunRecord>> running;
    for (size_t i : fresh) {
      size_t attempt = runs_[configs[i].canonical()].size();  // on this thread: no races
      running.push_back(std::async(std::launch::async, [this, &configs, i, attempt] {
        return fresh_trial(configs[i], attempt);
      }));
    }
    // Every trial of the batch ends (an interrupt stops them all at once); the finished ones are
    // recorded before the interrupt goes on, so that --resume replays them.
    std::optional<Interrupted> interrupted;
    for (size_t k = 0; k < fresh.size(); ++k) {
      try {
        RunRecord r = running[k].get();
        record(configs[fresh[k]], r);
        if (listener_) listener_(configs[fresh[k]], r, matches(r));
      } catch (const Interrupted& e) {
        interrupted = e;
      }
    }
    if (interrupted) throw *interrupted;
    for (size_t i = begin; i < end; ++i)
      if ((out[i] = interesting(configs[i]))) return out;
  }
  return out;
}

}  // namespace ddpbisect
