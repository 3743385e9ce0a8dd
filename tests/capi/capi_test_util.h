/* What the plain-C tests of the C API share: a CHECK that names the last
 * error, the shared model and parameters that keep runs small. */
#ifndef VALET_TESTS_CAPI_TEST_UTIL_H_
#define VALET_TESTS_CAPI_TEST_UTIL_H_

#include <stdio.h>

#include "valet/valet.h"

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", \
              __FILE__, __LINE__, #cond, valet_last_error());         \
      return 1;                                                       \
    }                                                                 \
  } while (0)

/* Exit code ctest reads as "skipped". */
#define SKIPPED 77

static char g_model[1024];

/* Sets g_model to ../shared/models/<name>; 0 when it is there, else prints
 * why the test is skipped and returns SKIPPED. */
static inline int find_shared_model(const char* name) {
  snprintf(g_model, sizeof g_model, "%s/models/%s", VALET_SHARED_DIR, name);
  FILE* f = fopen(g_model, "rb");
  if (f == NULL) {
    printf("skipped: %s not found\n", g_model);
    return SKIPPED;
  }
  fclose(f);
  return 0;
}

/* ../shared's stories260K (f32: nothing to pack). */
static inline int find_model(void) { return find_shared_model("stories260K.gguf"); }

static inline valet_params model_params(void) {
  valet_params p = valet_default_params();
  p.model_path = g_model;
  p.n_threads = 1;
  p.kv_capacity_bytes = 4u << 20;
  return p;
}

#endif /* VALET_TESTS_CAPI_TEST_UTIL_H_ */
