#include "observe/log_capture.hpp"

#include <cstring>

namespace ddpbisect {

StreamCapture::StreamCapture(const std::string& log_path, const std::string& times_path,
                             LogBudget* budget, LineSink sink)
    : budget_(budget), sink_(std::move(sink)) {
  log_ = std::fopen(log_path.c_str(), "wb");
  times_ = std::fopen(times_path.c_str(), "wb");
}

StreamCapture::~StreamCapture() {
  if (!closed_) close(0);
  if (log_) std::fclose(log_);
  if (times_) std::fclose(times_);
}

void LineSplitter::feed(const char* data, size_t n, const Sink& sink) {
  while (n > 0) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', n));
    size_t take = nl ? static_cast<size_t>(nl - data) : n;
    if (take > kMaxLine - partial_.size()) take = kMaxLine - partial_.size();
    partial_.append(data, take);
    data += take;
    n -= take;
    if (nl && data == nl) {
      sink(partial_, true);
      partial_.clear();
      ++data;
      --n;
    } else if (partial_.size() >= kMaxLine) {
      sink(partial_, false);
      partial_.clear();
    }
  }
}

void LineSplitter::flush(const Sink& sink) {
  if (!partial_.empty()) sink(partial_, false);
  partial_.clear();
}

void StreamCapture::feed(const char* data, size_t n, double t_ms) {
  seen_ += static_cast<int64_t>(n);
  lines_in_.feed(data, n, [&](std::string_view text, bool) { line(text, t_ms); });
}

void StreamCapture::line(std::string_view text, double t_ms) {
  ++lines_;
  if (sink_) sink_(text, t_ms);
  int64_t cost = static_cast<int64_t>(text.size()) + 1;
  if (!budget_->exhausted && budget_->remaining >= cost) {
    budget_->remaining -= cost;
    write_line(text, t_ms);
    return;
  }
  budget_->exhausted = true;
  tail_.emplace_back(std::string(text), t_ms);
  tail_bytes_ += cost;
  while (tail_bytes_ > kTailBytes && tail_.size() > 1) {
    tail_bytes_ -= static_cast<int64_t>(tail_.front().first.size()) + 1;
    dropped_ += static_cast<int64_t>(tail_.front().first.size()) + 1;
    tail_.pop_front();
  }
}

void StreamCapture::write_line(std::string_view text, double t_ms) {
  if (log_) {
    std::fwrite(text.data(), 1, text.size(), log_);
    std::fputc('\n', log_);
  }
  if (times_) std::fprintf(times_, "%.1f\n", t_ms);
}

void StreamCapture::flush() {
  if (log_) std::fflush(log_);
  if (times_) std::fflush(times_);
}

void StreamCapture::close(double t_ms) {
  if (closed_) return;
  closed_ = true;
  lines_in_.flush([&](std::string_view text, bool) { line(text, t_ms); });
  if (dropped_ > 0) {
    std::string note = "[ddpbisect: the trial's log cap was reached; " + std::to_string(dropped_) +
                       " bytes of this stream were dropped here]";
    write_line(note, tail_.empty() ? t_ms : tail_.front().second);
  }
  for (const auto& [text, t] : tail_) write_line(text, t);
  tail_.clear();
  if (log_) std::fflush(log_);
  if (times_) std::fflush(times_);
}

}  // namespace ddpbisect
