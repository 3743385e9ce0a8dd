/* The version of the libvalet.so actually loaded, which may differ from the
 * one an app was built against (the CMake package and valet.pc carry that). */
#ifndef VALET_VERSION_H_
#define VALET_VERSION_H_

#include "valet/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH"; static storage, never freed. */
VALET_API const char* valet_version(void);

#ifdef __cplusplus
}
#endif

#endif /* VALET_VERSION_H_ */
