// The programs ddpbisect writes or runs, kept as files under repro_templates/ and compiled into
// the driver (cmake/embedded_templates.cpp.in), so that the binary needs no data files at run
// time: each is a script a reader can open, lint and run, with @NAME@ placeholders.
#pragma once

#include <map>
#include <string>

namespace ddpbisect {

// repro_templates/ddp_repro.py: placeholders @HEADER@, @CONFIG_JSON@, "@TARGET@".
const char* ddp_repro_py_template();
// repro_templates/run.sh (report/repro.cpp fills it).
const char* run_sh_template();
// repro_templates/node_probe.py: doctor's probe on every node, and the versions probe
// (probe/node_probe.cpp); it has no placeholders.
const char* node_probe_py_template();

// `text` with every @NAME@ (capitals, digits, '_') replaced by values[NAME], in one pass: a
// value is never read again, so a spec's text that happens to say "@NAME@" stays data.
// Throws std::logic_error for a placeholder without a value and for a value no placeholder
// takes: a mismatch between a template and its filler is a bug, found by the first test.
std::string fill_template(const std::string& text,
                          const std::map<std::string, std::string>& values);

}  // namespace ddpbisect
