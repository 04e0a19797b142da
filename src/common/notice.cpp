#include "common/notice.hpp"

#include <cstdio>
#include <mutex>

namespace ddpbisect {

namespace {
std::mutex& route_mutex() {
  static std::mutex m;
  return m;
}
NoticeRoute::Sink& route() {
  static NoticeRoute::Sink sink;
  return sink;
}
}  // namespace

void notice(const std::string& line) {
  std::lock_guard<std::mutex> lock(route_mutex());
  if (route()) {
    route()(line);
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

NoticeRoute::NoticeRoute(Sink to) {
  std::lock_guard<std::mutex> lock(route_mutex());
  previous_ = std::move(route());
  route() = std::move(to);
}

NoticeRoute::~NoticeRoute() {
  std::lock_guard<std::mutex> lock(route_mutex());
  route() = std::move(previous_);
}

}  // namespace ddpbisect
