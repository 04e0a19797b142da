// Templates from repro_templates/, compiled into the driver so it needs no data files at run time.
#pragma once

namespace ddpbisect {

// repro_templates/ddp_repro.py: placeholders @HEADER@, @CONFIG_JSON@, @TARGET@.
const char* ddp_repro_template();

}  // namespace ddpbisect
