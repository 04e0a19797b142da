// The Oracle's trials in flight: each started on its own thread on a free slot, landed (judged,
// recorded) as it ends, cancelled once its answer is moot, stopped or abandoned all together.
#include "reduce/oracle.hpp"

#include <algorithm>
#include <exception>

#include "common/interrupt.hpp"
#include "common/output.hpp"
#include "reduce/oracle_flight.hpp"
#include "reduce/run_record.hpp"

namespace ddpbisect {

// Starts the next attempt of `config`: from the journal when it holds it (recorded at once),
// else a trial on its own thread in a free slot. False when there is no slot (or, for a
// question or a spare run, no budget) left.
bool Oracle::start(const TrialConfig& config, Kind kind, const Env& env) {
  const std::string key = journal_key(config, env);
  const int attempt = next_attempt(key);
  if (kind == Kind::Spare) spare_[key].push_back(attempt);
  if (auto it = replay_.find(key); it != replay_.end() && it->second.count(attempt)) {
    RunRecord r = record_from_journal(it->second[attempt]);
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

}  // namespace ddpbisect
