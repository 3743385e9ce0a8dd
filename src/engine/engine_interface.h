// The engine interface is public (include/valet/engine_interface.h): the
// Scheduler's C++ API takes one. Internal code keeps including it from here.
#pragma once

#include "valet/engine_interface.h"
