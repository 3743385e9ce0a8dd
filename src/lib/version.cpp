#include "valet/version.h"

extern "C" const char* valet_version(void) { return VALET_VERSION_STRING; }
