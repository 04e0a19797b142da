// The spec's `workload` section (workload_loader.cpp), read through the loader's Reader.
#pragma once

#include <filesystem>

#include "spec/yaml_reader.hpp"

namespace ddpbisect::spec_yaml {

// Reads `workload` into spec.builtin or spec.command; relative paths are from base_dir.
void load_workload(Reader& r, const std::filesystem::path& base_dir, const YAML::Node& n,
                   Spec& spec);

}  // namespace ddpbisect::spec_yaml
