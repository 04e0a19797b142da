// A trial the Oracle runs on its own thread, and what it lands with (oracle.cpp,
// oracle_flights.cpp).
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "reduce/oracle.hpp"

namespace ddpbisect {

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

}  // namespace ddpbisect
