#include "reduce/auto_dims.hpp"
#include "common/json_util.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "observe/outcome.hpp"

using json = nlohmann::json;

namespace ddpbisect {

namespace {

constexpr const char* kDatasetTag = "DDPBISECT_DATASET ";

struct Measured {
  long long last_step = -1;    // the furthest heartbeat step of any rank
  std::vector<json> datasets;  // every DDPBISECT_DATASET line, parsed
};

Measured read_trial(const std::string& dir) {
  Measured m;
  const json outcome = read_outcome_json(dir);
  for (const auto& r : json_field(outcome, "ranks", json::array())) {
    m.last_step = std::max(m.last_step, json_field<long long>(r, "last_step", -1));
    std::ifstream log(json_field(r, "stderr", ""));
    for (std::string line; std::getline(log, line);) {
      const size_t at = line.find(kDatasetTag);
      if (at == std::string::npos) continue;
      json j = json::parse(line.substr(at + std::char_traits<char>::length(kDatasetTag)), nullptr,
                           false);
      if (j.is_object()) m.datasets.push_back(std::move(j));
    }
  }
  return m;
}

std::string where(const json& d) {
  std::string s = json_field(d, "class", "the data set");
  if (d.contains("site") && d["site"].is_string()) s += " at " + d["site"].get<std::string>();
  return s;
}

}  // namespace

std::vector<std::string> apply_auto_dimensions(const Spec& spec, const std::string& trial_dir,
                                               TrialConfig& config) {
  std::vector<std::string> notes;
  if (!spec.command || !spec.command->agent) return notes;
  const CommandWorkload& c = *spec.command;
  const Measured m = read_trial(trial_dir);
  const std::string seen = " (first failing trial: " + trial_dir + ")";

  std::optional<int64_t> len;
  const json* first = nullptr;
  for (const auto& d : m.datasets) {
    if (d.contains("error")) {
      // out_of_range is the agent's own check of the indices: never a culprit.
      if (json_field(d, "error", "") == "out_of_range")
        throw WorkloadInputError("samples: auto: " + json_field(d, "message", json_text(d)) + seen);
      if (c.samples_auto && notes.empty())
        notes.push_back("samples: auto: " + json_field(d, "message", json_text(d)) +
                        "; the samples are not reduced");
      continue;
    }
    if (!d.contains("len") || !d["len"].is_number_integer()) continue;
    const int64_t n = d["len"].get<int64_t>();
    if (len && *len != n)
      throw WorkloadInputError("samples: auto: the ranks report different training data sets (" +
                               where(*first) + ": " + std::to_string(*len) + " samples, " +
                               where(d) + ": " + std::to_string(n) + ")" + seen);
    len = n;
    first = &d;
  }

  if (c.samples_auto && config.samples.empty()) {
    // The failure came before any data was read (or from a loader the agent cannot see): the
    // failure is still the one to chase; only the samples cannot be cut.
    if (!len && notes.empty())
      notes.push_back(
          "samples: auto: no rank printed the agent's DDPBISECT_DATASET line before the failure "
          "(it came before any data was read, or the data comes from an IterableDataset or a "
          "custom sampler: ddpbisect.samples() or workload.samples would give them), so the "
          "samples are not reduced" +
          seen);
    if (len && *len < 1)
      throw WorkloadInputError("samples: auto: the training data set is empty" + seen);
    if (len) config.samples = IndexSet::first_n(*len);
  } else if (len && !config.samples.empty() && config.samples.max() >= *len) {
    throw WorkloadInputError("workload.samples: index " + std::to_string(config.samples.max()) +
                             " is outside the training data set (" + std::to_string(*len) +
                             " samples: " + where(*first) +
                             ", from the agent's DDPBISECT_DATASET line); give at most " +
                             std::to_string(*len) + " samples or samples: auto" + seen);
  }

  if (c.steps_auto && !config.params.count("steps")) {
    // Steps 0..last_step completed on the furthest rank; the failure came in the next one.
    config.params["steps"] = std::max<long long>(1, m.last_step + 2);
  }
  return notes;
}

}  // namespace ddpbisect
