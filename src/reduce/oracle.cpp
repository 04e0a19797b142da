#include "reduce/oracle.hpp"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <functional>
#include <random>

#include "common/category_names.hpp"
#include "common/interrupt.hpp"
#include "common/json_util.hpp"
#include "common/output.hpp"
#include "reduce/oracle_flight.hpp"
#include "reduce/reruns.hpp"
#include "reduce/run_record.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {

// Attempts of one configuration a journal may record (a bound, so that counting on never
// overflows).
constexpr int kMaxAttempt = 1 << 20;

}  // namespace

Oracle::Oracle(const Spec& spec, OracleOptions options, Journal& journal, Listener listener,
               TrialRunner runner)
    : spec_(spec),
      opt_(std::move(options)),
      journal_(journal),
      listener_(std::move(listener)),
      runner_(std::move(runner)),
      pool_(opt_.resources ? *opt_.resources : detect_resources(spec), opt_.jobs) {
  load();
  if (salt_ == 0) {
    salt_ = std::random_device{}() | (uint64_t{std::random_device{}()} << 32) | 1;
    journal_.append({{"type", "header"}, {"salt", salt_}, {"spec", spec.file}});
  }
}

Oracle::~Oracle() {
  for (auto& f : flights_) *f.cancel = true;
  for (auto& f : flights_) f.thread.join();
}

// The journal of an earlier run: its salt, its elapsed time, and every finished trial by key and
// attempt (journals older than the attempt field number each key's trials in order). A record
// that does not read back whole (a field of the wrong type, bad samples, an edit) is rejected,
// as a torn line is: its trial runs again.
void Oracle::load() {
  const auto& entries = journal_.loaded();
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& e = entries[i];
    try {
      const std::string type = json_strict(e, "type", "");
      if (type == "header") salt_ = json_strict<uint64_t>(e, "salt", 0);
      if (type == "elapsed") replayed_elapsed_ = json_strict(e, "elapsed_s", 0.0);
      if (type != "trial" && type != "debug") continue;
      const TrialConfig c = TrialConfig::from_json(json_member(e, "config"));
      const Env env = type == "debug" ? json_strict(e, "env", Env{}) : Env{};
      const std::string key = env.empty() ? json_strict(e, "key", "") : journal_key(c, env);
      const RunRecord replayed = record_from_journal(e);  // what a replay reads: it must read
      if (replayed.attempt < 0 || replayed.attempt > kMaxAttempt)
        throw std::runtime_error("attempt: " + std::to_string(replayed.attempt) + " out of range");
      auto& by_attempt = replay_[key];
      int attempt = e.contains("attempt") ? replayed.attempt : static_cast<int>(by_attempt.size());
      while (by_attempt.count(attempt)) ++attempt;  // a duplicate still counts as a finished trial
      json entry = e;
      entry["attempt"] = attempt;
      by_attempt[attempt] = entry;
      if (env.empty()) history_.emplace_back(c, replayed);
    } catch (const std::exception& error) {  // json's type errors, TrialConfig's bad samples
      journal_.reject(i, error.what());
    }
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
  if (opt_.max_trials && stats_.trials + static_cast<int64_t>(flights_.size()) >= *opt_.max_trials)
    return true;
  if (opt_.max_time && elapsed_s() * 1000.0 >= static_cast<double>(opt_.max_time->count()))
    return true;
  return false;
}

int Oracle::affordable(int n) const {
  if (n <= 0 || exhausted()) return 0;
  if (!opt_.max_trials) return n;
  const int64_t left = *opt_.max_trials - stats_.trials - static_cast<int64_t>(flights_.size());
  return static_cast<int>(std::clamp<int64_t>(left, 0, n));
}

int Oracle::width(const TrialConfig& config) const {
  return pool_.width(config);
}

double Oracle::interesting_odds() const {
  return (answered_interesting_ + 1.0) / (answered_ + 2.0);
}

int Oracle::next_attempt(const std::string& key) const {
  auto it = attempts_.find(key);
  int a = 0;
  if (it != attempts_.end())
    while (it->second.count(a)) ++a;
  return a;
}

bool Oracle::running(const std::string& key) const {
  return std::any_of(flights_.begin(), flights_.end(),
                     [&](const Flight& f) { return f.key == key; });
}

void Oracle::check_space() const {
  const long long free = free_bytes(opt_.out_dir);
  if (free >= 0 && static_cast<unsigned long long>(free) < kMinFreeBytes)
    throw OutputError(opt_.out_dir, ENOSPC);
}

Oracle::Hints Oracle::hints() const {
  Hints h{timings_.hang_floor_s(spec_.limits), timings_.timeout_s(spec_.limits), std::nullopt};
  if (has_target_ && target_.category == cat::hang) h.expected_hang = target_;
  return h;
}

void Oracle::record(const TrialConfig& config, const RunRecord& r, const Env& env) {
  runs_[journal_key(config, env)].push_back(r);
  timings_.learn(r);
  // A hang read more precisely than the target (its culprit named where the target had none)
  // refines the target: the same hang, better described.
  if (has_target_ && env.empty() && matches(r) && target_.category == cat::hang &&
      target_.frame.empty() && !r.signature->frame.empty())
    target_ = *r.signature;
  if (r.replayed) {
    ++stats_.replayed;
  } else {
    count(r);
    journal_.append(journal_record(config, r, env));
    if (env.empty()) history_.emplace_back(config, r);
  }
  if (listener_ && env.empty())
    listener_(config, r, has_target_ ? std::optional<bool>(matches(r)) : std::nullopt);
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

std::vector<RunRecord> Oracle::runs_of(const TrialConfig& config, int n, const Env& env) {
  const std::string key = journal_key(config, env);
  // These runs are what prefetch() listed for `key`: no more spare ones are started for them.
  for (int i = 0; i < n; ++i) {
    auto w = std::find_if(wanted_.begin(), wanted_.end(),
                          [&](const PlannedRun& p) { return journal_key(p.config, p.env) == key; });
    if (w == wanted_.end()) break;
    wanted_.erase(w);
  }
  std::set<int> mine;
  auto& spare = spare_[key];  // spare runs first, oldest first
  while (static_cast<int>(mine.size()) < n && !spare.empty()) {
    mine.insert(spare.front());
    spare.erase(spare.begin());
  }
  while (static_cast<int>(mine.size()) < n) {
    const int attempt = next_attempt(key);
    if (start(config, Kind::Plain, env)) {
      mine.insert(attempt);
    } else {
      await_one();  // no slot free: the first trial to end makes room
    }
  }
  auto mine_running = [&] {
    for (const auto& f : flights_)
      if (f.key == key && mine.count(f.attempt)) return true;
    return false;
  };
  top_up();  // slots these runs leave go to the spare runs still wanted
  while (mine_running()) {
    await_one();
    top_up();
  }
  std::vector<RunRecord> out;
  for (const auto& r : runs_[key])
    if (mine.count(r.attempt)) out.push_back(r);
  return out;
}

RunRecord Oracle::run(const TrialConfig& config) {
  return runs_of(config, 1, {}).at(0);
}

std::vector<RunRecord> Oracle::runs(const TrialConfig& config, int n) {
  return runs_of(config, n, {});
}

RunRecord Oracle::debug_run(const TrialConfig& config, const Env& env) {
  return runs_of(config, 1, env).at(0);
}

void Oracle::prefetch(const std::vector<PlannedRun>& wanted) {
  wanted_ = wanted;
  std::map<std::string, size_t> want;
  for (const auto& w : wanted) ++want[journal_key(w.config, w.env)];
  // Too many spare runs of a key: the newest running ones go.
  for (auto& [key, attempts] : spare_) {
    const size_t keep = want.count(key) ? want[key] : 0;
    for (size_t i = attempts.size(); i-- > 0 && attempts.size() > keep;) {
      auto f = std::find_if(flights_.begin(), flights_.end(), [&](const Flight& fl) {
        return fl.spare && fl.key == key && fl.attempt == attempts[i];
      });
      if (f == flights_.end()) continue;  // finished: stays until taken
      *f->cancel = true;
      attempts.erase(attempts.begin() + static_cast<long>(i));
    }
  }
  top_up();
}

// Starts, as far as slots and budget allow, a spare run for each entry of wanted_ without one.
// Not where such trials cannot run side by side (one slot: the caller runs them in turn, as it
// would without spare runs, and a resumed run's replays cannot hand the slot to a later entry).
void Oracle::top_up() {
  std::map<std::string, size_t> listed;
  for (const auto& w : wanted_) {
    const std::string key = journal_key(w.config, w.env);
    if (++listed[key] <= spare_[key].size() || pool_.width(w.config) <= 1) continue;
    if (!start(w.config, Kind::Spare, w.env)) return;
  }
}

std::vector<RunRecord> Oracle::spare_runs(const TrialConfig& config) const {
  const std::string key = config.canonical();
  std::vector<RunRecord> out;
  auto spare = spare_.find(key);
  auto runs = runs_.find(key);
  if (spare == spare_.end() || runs == runs_.end()) return out;
  for (int attempt : spare->second)
    for (const auto& r : runs->second)
      if (r.attempt == attempt) out.push_back(r);
  return out;
}

bool Oracle::await_any() {
  if (flights_.empty()) return false;
  await_one();
  return true;
}

void Oracle::set_target(const Signature& target, double reproduction_rate) {
  target_ = target;
  has_target_ = true;
  rate_ = reproduction_rate;
  repeats_ = repeats_for(rate_, opt_.confidence);
}

void Oracle::set_target(const Signature& target, const Tally& measured) {
  set_target(target, measured.rate());
  repeats_ = repeats_for(measured, opt_.confidence);
}

void Oracle::recheck_rejections() {
  for (const auto& [key, runs] : runs_) misses_from_[key] = runs.size();
}

// Runs of `key` that count towards calling it uninteresting: those since its last recheck.
int Oracle::counted_runs(const std::string& key) const {
  auto it = runs_.find(key);
  if (it == runs_.end()) return 0;
  auto from = misses_from_.find(key);
  return static_cast<int>(it->second.size() - (from == misses_from_.end() ? 0 : from->second));
}

bool Oracle::matches(const RunRecord& r) const {
  return matches(r, target_);
}

bool Oracle::matches(const RunRecord& r, const Signature& target) const {
  return r.status == TrialStatus::Fail && r.signature &&
         same_failure(target, *r.signature, opt_.level, opt_.regex, r.text);
}

std::vector<TrialMark> Oracle::trial_marks(const Signature* target) const {
  std::vector<TrialMark> marks;
  marks.reserve(history_.size());
  for (const auto& [config, r] : history_)
    marks.push_back({config, r.status, target && matches(r, *target)});
  return marks;
}

const RunRecord* Oracle::matching_run(const TrialConfig& config) const {
  auto it = runs_.find(config.canonical());
  if (it == runs_.end()) return nullptr;
  for (auto r = it->second.rbegin(); r != it->second.rend(); ++r)
    if (matches(*r)) return &*r;
  return nullptr;
}

// Interesting once a run matched; uninteresting after repeats() runs that did not (since the
// last recheck).
std::optional<bool> Oracle::verdict(const std::string& key) const {
  auto it = runs_.find(key);
  if (it == runs_.end()) return std::nullopt;
  for (const auto& r : it->second)
    if (matches(r)) return true;
  if (counted_runs(key) >= repeats_) return false;
  return std::nullopt;
}

std::optional<bool> Oracle::known(const TrialConfig& config) const {
  return verdict(config.canonical());
}

// Starts what the free slots allow: the question's own remaining repeats first, then the
// first trial of each configuration ahead, in order.
void Oracle::fill(const TrialConfig& config, const std::vector<TrialConfig>& ahead) {
  const std::string key = config.canonical();
  auto in_flight = [&](const std::string& k) {
    return static_cast<int>(std::count_if(flights_.begin(), flights_.end(),
                                          [&](const Flight& f) { return f.key == k; }));
  };
  while (!verdict(key) && counted_runs(key) + in_flight(key) < repeats_)
    if (!start(config, Kind::Question)) return;
  for (const auto& a : ahead) {
    const std::string k = a.canonical();
    if (verdict(k) || in_flight(k) || counted_runs(k) > 0) continue;
    if (!start(a, Kind::Question)) return;
  }
}

// Cancels the question trials whose answer nobody waits for any more.
void Oracle::cancel_unneeded(const std::string& key, const std::vector<TrialConfig>& ahead) {
  std::set<std::string> wanted = {key};
  for (const auto& a : ahead) wanted.insert(a.canonical());
  for (auto& f : flights_)
    if (f.question && (!wanted.count(f.key) || verdict(f.key))) *f.cancel = true;
}

void Oracle::settle() {
  for (auto& f : flights_)
    if (f.question) *f.cancel = true;
}

bool Oracle::interesting(const TrialConfig& config, const std::vector<TrialConfig>& ahead) {
  const std::string key = config.canonical();
  const int64_t before = stats_.trials + stats_.replayed;
  while (true) {
    cancel_unneeded(key, ahead);
    if (std::optional<bool> v = verdict(key)) {
      if (static_cast<int>(runs_[key].size()) > 0 && stats_.trials + stats_.replayed == before)
        ++stats_.cached;
      ++answered_;
      answered_interesting_ += *v ? 1 : 0;
      return *v;
    }
    fill(config, ahead);
    if (verdict(key)) continue;  // answered from the journal
    if (!running(key) && flights_.empty()) {
      budget_hit_ = true;
      return false;
    }
    await_one();
  }
}

}  // namespace ddpbisect
