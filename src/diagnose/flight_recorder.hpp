// PyTorch's Flight Recorder dumps, read without Python: a small reader for the subset of pickle
// that c10d's pickler writes (pickle_to_json), and the dump's collectives as positions for hang
// attribution: per rank, which collective (by sequence id) it entered, the op, whether the work
// ended, and the Python frames that issued it. Also the agent's collective trace files
// (docs/agent.md), the same kind of evidence from our own in-process agent.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/facts.hpp"

namespace ddpbisect {

// Decodes a pickle (protocols 2-4: the opcodes c10d writes, plus the usual small ones) into JSON:
// dicts, lists, tuples (as arrays), strings, numbers, booleans and None. Throws
// std::runtime_error naming the opcode and byte offset of anything else.
nlohmann::json pickle_to_json(std::string_view bytes);

// Whether `bytes` starts like a pickle (protocol 2 or later).
bool looks_like_pickle(std::string_view bytes);

// A Flight Recorder dump of `rank` (from its file name when the dump does not say) into
// positions; a dump that cannot be read is skipped, with a note in `facts`.
void read_flight_recorder(const std::string& path, std::optional<int> rank,
                          const std::vector<std::string>& library, Facts& facts);

// The agent's trace file (agent/collectives.HOST.PID.jsonl: a header line, then one event per
// slot line) into positions.
void read_agent_trace(const std::string& path, Facts& facts);

}  // namespace ddpbisect
