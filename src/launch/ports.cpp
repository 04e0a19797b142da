#include "launch/ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

namespace ddpbisect {

int pick_free_port(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) sa.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof sa;
    if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
      int port = ntohs(sa.sin_port);
      close(fd);
      return port;
    }
    close(fd);
  }
  thread_local std::mt19937 rng{std::random_device{}()};  // trials pick ports concurrently
  return 20000 + static_cast<int>(rng() % 12000);         // below Linux's ephemeral range
}

}  // namespace ddpbisect
