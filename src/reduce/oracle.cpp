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
#include "reduce/reruns.hpp"

namespace ddpbisect {

using nlohmann::json;

struct Oracle::Landed {
  RunRecord record;
  int signal = 0;            // SIGINT/SIGTERM reached the trial: not judged
  bool cancelled = false;    // stopped because its answer was no longer needed: not judged
  std::exception_ptr error;  // the trial could not be run (our own files): rethrown
};

struct Oracle::Flight {
  TrialConfig config;
  std::string key;
  int attempt = 0;
  Env env;
  bool question = false;  // started for interesting(): cancelled once no longer needed
  bool spare = false;     // started by prefetch(): cancelled once no longer wanted
  Slot slot;
  std::shared_ptr<const Spec> spec;          // the spec, with the slot's hosts when it has some
  std::shared_ptr<const Launcher> launcher;  // that spec's, shared by the trials on those hosts
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::optional<Landed>> landed = std::make_shared<std::optional<Landed>>();
  std::thread thread;
};

namespace {

// A failure's text as journaled; a fresh record is cut the same way, so that match.regex sees
// the same text whether the trial ran or was replayed.
constexpr size_t kJournaledText = 4000;

// Attempts of one configuration a journal may record (a bound, so that counting on never
// overflows).
constexpr int kMaxAttempt = 1 << 20;

// Debug reruns are keyed apart from the questions: they never answer one.
std::string key_of(const TrialConfig& c, const Env& env) {
  if (env.empty()) return c.canonical();
  return "debug " + json_text(json(env)) + " " + c.canonical();
}

json record_json(const TrialConfig& c, const RunRecord& r, const Env& env) {
  json j = {{"type", env.empty() ? "trial" : "debug"},
            {"key", c.canonical()},
            {"attempt", r.attempt},
            {"config", c.to_json()},
            {"status", to_string(r.status)},
            {"last_step", r.last_step},
            {"dir", r.dir},
            {"text", r.text.substr(0, kJournaledText)},
            {"duration_s", r.duration_s},
            {"pause_s", r.pause_s}};
  j["signature"] = r.signature ? r.signature->to_json() : json(nullptr);
  if (!env.empty()) j["env"] = env;
  return j;
}

// Throws on a field of the wrong type (Oracle::load rejects such a record up front).
RunRecord record_from_json(const json& e) {
  RunRecord r;
  r.status = parse_trial_status(json_strict(e, "status", "")).value_or(TrialStatus::Infra);
  if (const json& sig = json_member(e, "signature"); sig.is_object())
    r.signature = Signature::from_json(sig);
  r.last_step = json_strict<int64_t>(e, "last_step", -1);
  r.dir = json_strict(e, "dir", "");
  r.text = json_strict(e, "text", "");
  r.attempt = json_strict<int>(e, "attempt", 0);
  r.duration_s = json_strict<double>(e, "duration_s", 0.0);
  r.pause_s = json_strict<double>(e, "pause_s", 0.0);
  r.replayed = true;
  return r;
}

// `j` as it reads back from the journal.
json as_journaled(const json& j) {
  return json::parse(json_text(j));
}

RunRecord record_from_outcome(const TrialOutcome& o, int attempt) {
  RunRecord r;
  r.status = o.status;
  r.dir = o.dir;
  r.attempt = attempt;
  r.duration_s = o.duration_s;
  r.pause_s = o.longest_pause_s;
  // The last step the failing rank finished (the others may have run on): the steps pass cuts
  // right after it. Without a failing rank, the furthest any rank got.
  const int root = o.failure() ? o.diagnosis->root.rank().value_or(-1) : -1;
  for (const auto& rk : o.ranks)
    if (root < 0 || rk.rank == root) r.last_step = std::max(r.last_step, rk.last_step);
  if (const Signature* failure = o.failure()) {
    // As a replay sees them (the target of a resumed reduction is a replayed signature, and
    // match.regex reads the text): bytes that are not UTF-8 replaced as the journal writes them.
    r.signature = Signature::from_json(as_journaled(failure->to_json()));
    r.text = o.diagnosis->root.message;
    for (const auto& line : o.diagnosis->root.excerpt) r.text += "\n" + line;
    r.text.resize(std::min<size_t>(r.text.size(), kJournaledText));
    r.text = as_journaled(json(r.text)).get<std::string>();
  }
  return r;
}

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
      const std::string key = env.empty() ? json_strict(e, "key", "") : key_of(c, env);
      const RunRecord replayed = record_from_json(e);  // what a replay reads: it must read
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

// Starts the next attempt of `config`: from the journal when it holds it (recorded at once),
// else a trial on its own thread in a free slot. False when there is no slot (or, for a
// question or a spare run, no budget) left.
bool Oracle::start(const TrialConfig& config, Kind kind, const Env& env) {
  const std::string key = key_of(config, env);
  const int attempt = next_attempt(key);
  if (kind == Kind::Spare) spare_[key].push_back(attempt);
  if (auto it = replay_.find(key); it != replay_.end() && it->second.count(attempt)) {
    RunRecord r = record_from_json(it->second[attempt]);
    it->second.erase(attempt);
    attempts_[key].insert(attempt);
    record(config, r, env);
    return true;
  }
  auto no_room = [&] {
    if (kind == Kind::Spare) spare_[key].pop_back();
    return false;
  };
  if (kind != Kind::Plain && exhausted()) return no_room();
  throw_if_interrupted();  // never start a trial after Ctrl-C
  check_space();
  std::optional<Slot> slot = pool_.acquire(config);
  if (!slot) return no_room();
  Flight& f = flights_.emplace_back();
  f.config = config;
  f.key = key;
  f.attempt = attempt;
  f.env = env;
  f.question = kind == Kind::Question;
  f.spare = kind == Kind::Spare;
  f.slot = *slot;
  if (slot->hosts.empty()) {
    f.spec = std::shared_ptr<const Spec>(&spec_, [](const Spec*) {});
  } else {
    auto own = std::make_shared<Spec>(spec_);
    own->launcher.hosts = slot->hosts;
    f.spec = own;
  }
  f.launcher = launcher_for(*f.spec);
  attempts_[key].insert(attempt);
  f.thread =
      std::thread([this, config, key, attempt, env, slot = *slot, spec = f.spec,
                   launcher = f.launcher, cancel = f.cancel, landed = f.landed, hints = hints()] {
        Landed l;
        try {
          l = fly(config, key, attempt, env, slot, *spec, launcher, *cancel, hints);
        } catch (...) {
          l.error = std::current_exception();
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          *landed = std::move(l);
        }
        landed_cv_.notify_all();
      });
  return true;
}

// On a trial thread: one trial, retried (up to three times in all) while its outcome is infra.
Oracle::Landed Oracle::fly(const TrialConfig& config, const std::string& key, int attempt,
                           const Env& env, const Slot& slot, const Spec& spec,
                           std::shared_ptr<const Launcher> launcher,
                           const std::atomic<bool>& cancel, const Hints& hints) const {
  Landed out;
  std::optional<double> timeout = hints.timeout_s;
  for (int i = 0; i < 3; ++i) {
    if ((out.signal = interrupt_signal()) != 0) return out;
    if ((out.cancelled = cancel.load())) return out;
    TrialRequest req;
    req.spec = &spec;
    req.config = config;
    req.config.seed = seed_for(key, static_cast<size_t>(attempt) * 3 + static_cast<size_t>(i));
    req.dir = next_trial_dir(opt_.out_dir);
    req.extra_env = env;
    if (!slot.gpus.empty()) {
      std::string ids;
      for (const auto& g : slot.gpus) ids += (ids.empty() ? "" : ",") + g;
      req.extra_env["CUDA_VISIBLE_DEVICES"] = ids;
    }
    req.cancelled = [&cancel] { return cancel.load(); };
    req.launcher = launcher;
    req.hang_floor_s = hints.hang_floor_s;
    req.timeout_s = timeout;
    if (hints.expected_hang && env.empty())
      req.expected_hang = [this, want = *hints.expected_hang](const Diagnosis& d) {
        return same_failure(want, d.signature, opt_.level, opt_.regex, d.root.message);
      };
    TrialOutcome o = runner_(req);
    // Too short to judge: the next attempt gets twice as long.
    if (o.timed_out_progressing && timeout) *timeout *= 2;
    out.record = record_from_outcome(o, attempt);
    if (o.status == TrialStatus::Interrupted) {
      out.signal = o.interrupt_signal;
      out.cancelled = o.interrupt_signal == 0;
      return out;
    }
    if (o.status != TrialStatus::Infra) break;
  }
  return out;
}

std::shared_ptr<const Launcher> Oracle::launcher_for(const Spec& spec) {
  auto& launcher = launchers_[spec.launcher.hosts];
  if (!launcher) launcher = make_launcher(spec.launcher);
  return launcher;
}

// Waits for the first trial to end and records it.
void Oracle::await_one() {
  std::list<Flight>::iterator done;
  {
    std::unique_lock<std::mutex> lock(mu_);
    landed_cv_.wait(lock, [&] {
      for (auto it = flights_.begin(); it != flights_.end(); ++it)
        if (it->landed->has_value()) {
          done = it;
          return true;
        }
      return false;
    });
  }
  done->thread.join();
  pool_.release(done->slot);
  Flight f = std::move(*done);
  flights_.erase(done);
  land(f, **f.landed);
}

void Oracle::land(Flight& f, const Landed& l) {
  if (l.error) abandon_all(l.error);
  if (l.signal) stop_all(l.signal);
  if (l.cancelled) {
    attempts_[f.key].erase(f.attempt);  // never judged: that attempt may run again
    if (f.spare) {
      auto& spare = spare_[f.key];
      spare.erase(std::remove(spare.begin(), spare.end(), f.attempt), spare.end());
    }
    return;
  }
  try {
    check_space();  // on a full disk the trial's logs may be cut short: not a fair answer
  } catch (const OutputError&) {
    abandon_all(std::current_exception());
  }
  record(f.config, l.record, f.env);
}

// Ctrl-C: every trial still running sees the flag and ends; the finished ones are recorded
// (so --resume replays them), then the interrupt goes on.
void Oracle::stop_all(int signal) {
  for (auto& f : flights_) {
    f.thread.join();
    pool_.release(f.slot);
    const Landed& l = **f.landed;
    if (!l.signal && !l.cancelled && !l.error) record(f.config, l.record, f.env);
  }
  flights_.clear();
  throw Interrupted(signal);
}

// Our own files cannot be written: every trial still running is stopped and left unrecorded
// (its logs may be cut short), then the error goes on.
void Oracle::abandon_all(std::exception_ptr error) {
  for (auto& f : flights_) *f.cancel = true;
  for (auto& f : flights_) {
    f.thread.join();
    pool_.release(f.slot);
  }
  flights_.clear();
  std::rethrow_exception(error);
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
  runs_[key_of(config, env)].push_back(r);
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
    journal_.append(record_json(config, r, env));
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
  const std::string key = key_of(config, env);
  // These runs are what prefetch() listed for `key`: no more spare ones are started for them.
  for (int i = 0; i < n; ++i) {
    auto w = std::find_if(wanted_.begin(), wanted_.end(),
                          [&](const PlannedRun& p) { return key_of(p.config, p.env) == key; });
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
  for (const auto& w : wanted) ++want[key_of(w.config, w.env)];
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
    const std::string key = key_of(w.config, w.env);
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
