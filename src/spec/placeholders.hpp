// Placeholders in a command's argv: {samples}, {components}, {features}, {NAME}; "{{" and "}}"
// stand for literal braces. Substitution happens per argv element, never through a shell.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddpbisect {

// The placeholder names in `arg` with their byte offsets, or nullopt with an error for an
// unterminated or empty placeholder.
std::optional<std::vector<std::pair<std::string, size_t>>> placeholder_names(
    const std::string& arg, std::string* error = nullptr, size_t* error_offset = nullptr);

// Replaces each {name} by values.at(name); names missing from `values` are left as written.
std::string substitute_placeholders(const std::string& arg,
                                    const std::map<std::string, std::string>& values);

// torchrun's spelling of the per-rank placeholders (${rank}, ${local_rank}, ${node_rank}) read
// as ours ({rank}, ...), for a plain command; a launcher form keeps it for its launcher to fill.
std::string rank_placeholders_unified(std::string arg);

}  // namespace ddpbisect
