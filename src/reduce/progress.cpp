#include "reduce/progress.hpp"

#include "common/text.hpp"

namespace ddpbisect {

namespace {
// "0.4 s" (with `tenths` under 10 s), "42 s", "3m05s", "1h02m"
std::string clock_text(double s, bool tenths = false) {
  long long t = static_cast<long long>(s);
  char buf[32];
  if (tenths && s < 10)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (t < 60)
    std::snprintf(buf, sizeof buf, "%lld s", t);
  else if (t < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

std::string record_headline(const RunRecord& r) {
  if (!r.signature) return r.text.substr(0, r.text.find('\n'));
  const Signature& s = *r.signature;
  return failure_headline(s.ranks, s.exception, r.text.empty() ? s.message : r.text, s.frame) +
         (s.category.empty() ? "" : " [" + s.category + "]");
}

Progress::Progress(bool quiet)
    : line_(std::make_unique<StatusLine>(quiet, [this](size_t w) { return compose(w); })) {
  if (line_->smart())
    route_ = std::make_unique<NoticeRoute>([this](const std::string& l) { line_->print(l); });
}

Progress::~Progress() = default;

void Progress::budget(std::optional<int64_t> max_trials, std::optional<Millis> max_time) {
  line_->update([&] {
    max_trials_ = max_trials;
    max_time_ = max_time;
  });
}

std::string Progress::compose(size_t) const {
  // Most important first: the terminal cuts from the right.
  std::string count = std::to_string(trials_ + replayed_);
  if (max_trials_) count += "/" + std::to_string(*max_trials_ + replayed_);
  count += trials_ + replayed_ == 1 && !max_trials_ ? " trial" : " trials";
  if (replayed_) count += " (" + std::to_string(replayed_) + " replayed)";
  std::string time = clock_text(seconds_since(start_));
  if (max_time_) time += "/" + clock_text(static_cast<double>(max_time_->count()) / 1000.0);
  std::string s = "[" + count + ", " + time + "] " + phase_;
  s += " | trial " + std::to_string(trials_ + replayed_ + 1) + ": " +
       clock_text(seconds_since(running_since_), /*tenths=*/true);
  if (!best_.empty()) s += " | best: " + best_;
  return s;
}

void Progress::phase(const std::string& text) {
  // In a log a phase gets its line with its first trial: passes with nothing to try stay quiet.
  pending_phase_ = !line_->smart();
  line_->update([&] {
    phase_ = text;
    running_since_ = Clock::now();
  });
}

void Progress::target(const Signature& target, const RunRecord& first, const std::string& stage) {
  RunRecord r = first;
  if (!r.signature) r.signature = target;
  line_->print("failure found on stage '" + stage + "': " + record_headline(r));
  line_->update([&] { has_target_ = true; });
}

void Progress::trial(const TrialConfig& c, const RunRecord& r, std::optional<bool> target_hit,
                     int64_t trials) {
  const bool interesting = target_hit.value_or(false);  // nullopt: no target yet
  std::string verdict = to_string(r.status);
  if (r.status == TrialStatus::Fail) {
    if (!has_target_ || !target_hit)
      verdict = "failed: " + record_headline(r);
    else if (interesting)
      verdict = "failed (the target)";
    else
      verdict = "failed differently, not taken: " + record_headline(r);
  } else if (r.status == TrialStatus::Pass) {
    verdict = "passed";
  }
  if (r.replayed) verdict = "replayed, " + verdict;
  const int64_t n = trials + replayed_ + (r.replayed ? 1 : 0);
  const std::string line =
      "trial " + std::to_string(n) + ": " + describe_config(c) + ": " + verdict;
  // On a terminal only failures that are not the target stay; in a log every trial has its line.
  if (pending_phase_) line_->print("== " + phase_);
  pending_phase_ = false;
  if (!line_->smart() || (r.status == TrialStatus::Fail && !interesting && has_target_))
    line_->print(line);
  line_->update([&] {
    trials_ = trials;
    if (r.replayed) ++replayed_;
    running_since_ = Clock::now();
  });
}

void Progress::best(const TrialConfig& c) {
  line_->update([&] { best_ = describe_config(c); });
}

void Progress::note(const std::string& line) {
  line_->print(line);
}

void Progress::done() {
  route_.reset();
  line_->finish();
}

}  // namespace ddpbisect
