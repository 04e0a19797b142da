// doctor's communication probes: all-reduces over Gloo across a stage's topology (the worker's
// DDPBISECT_PROBE=allreduce, run as a trial) and over NCCL on every node with a GPU (the native
// ddpbisect-nccl-probe, through the launcher), with bandwidth as nccl-tests defines it.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/process.hpp"
#include "probe/doctor.hpp"

namespace ddpbisect {

// Appends comm.gloo's finding and res.comm["gloo"] (the rows and the table).
void gloo_probe(const Spec& spec, const Stage& stage, const std::string& out_dir,
                DoctorResult& res);

std::string nccl_probe_path();

// Appends comm.nccl's findings (a SKIP where no node has a GPU) and res.comm["nccl"].
// `on_node(i)` is the probe's process on node i, wrapped by the launcher.
void nccl_probe(const std::vector<nlohmann::json>& reports,
                const std::function<ProcessSpec(int)>& on_node, DoctorResult& res);

}  // namespace ddpbisect
