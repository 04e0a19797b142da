// The whole diagnosis of one console log written from the mechanism under test.
#pragma once

#include <fstream>
#include <string>

#include "../scratch_dir.hpp"
#include "diagnose/diagnosis.hpp"

inline ddpbisect::Diagnosis diagnose_console(const std::string& text) {
  ScratchDir dir;
  std::string path = dir.path + "/console.log";
  std::ofstream(path) << text;
  return ddpbisect::diagnose(ddpbisect::inputs_from_paths({path}).input);
}
