#include "probe/clock.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace ddpbisect {

std::optional<double> clock_offset_to(const std::string& addr, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return std::nullopt;
  }
  auto wall = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  std::optional<double> best_rtt, best;
  std::string pending;
  for (int i = 0; i < 5; ++i) {
    double t1 = wall();
    if (write(fd, "t\n", 2) != 2) break;
    char buf[64];
    size_t nl;
    while ((nl = pending.find('\n')) == std::string::npos) {
      ssize_t got = read(fd, buf, sizeof buf);
      if (got <= 0) break;
      pending.append(buf, static_cast<size_t>(got));
    }
    if (nl == std::string::npos) break;
    double t3 = wall();
    double t2 = std::atof(pending.substr(0, nl).c_str());
    pending.erase(0, nl + 1);
    if (!best_rtt || t3 - t1 < *best_rtt) {
      best_rtt = t3 - t1;
      best = t2 - (t1 + t3) / 2;
    }
  }
  close(fd);
  return best;
}

}  // namespace ddpbisect
