// A fixture for the layers check (tests/CMakeLists.txt): the graph IR reaching up into the
// pipeline is a back-edge the check must reject.
#pragma once

#include "src/pipeline/pass.h"
