// The probes `doctor` runs on the nodes, through the spec's launcher, and the versions probe of
// report.md's environment: one Python script, repro_templates/node_probe.py (standard library
// only; torch is imported if present). As the master it binds MASTER_ADDR:MASTER_PORT on node 0
// and answers time queries; as a node it reports hostname, versions, memory, disk, data paths,
// variables, and whether the master is reachable and how far its clock is from the master's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ddpbisect {

// The script, run as `python -c SCRIPT` (doctor) or `python -c SCRIPT versions`. It reads
// DDPBISECT_DOCTOR_ROLE (master | node), DDPBISECT_DOCTOR_MASTER (addr:port) and
// DDPBISECT_DOCTOR_PATHS (a JSON list), and prints one `DDPBISECT_DOCTOR {json}` line (the master
// prints its line, then serves until killed); `versions` prints the versions block alone (python,
// torch, cuda, cudnn, nccl, gpus, gloo) as one JSON object.
std::string node_probe_script();

// The JSON of the last `DDPBISECT_DOCTOR` line in `output`, or null.
nlohmann::json parse_probe_line(const std::string& output);

}  // namespace ddpbisect
