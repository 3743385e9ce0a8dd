/* What an app's loader does with libvalet.so: dlopen() it by path, find the
 * C API by name, and finish one task on a real model. It links nothing of
 * valet's (only the header's types), so it proves the shared library is
 * self-contained: every symbol it needs resolves, the C API is exported,
 * and its static initialisers run in a foreign process. CI runs it natively
 * and, on the aarch64 library-only cross build, under qemu.
 * Usage: capi_dlopen_test LIBVALET_SO MODEL_GGUF (exits 77 without the model). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "valet/valet.h"

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                  \
      return 1;                                                        \
    }                                                                  \
  } while (0)

typedef struct {
  int tokens;
  size_t text_bytes;
  int done_calls;
  valet_task_state state;
  int32_t n_tokens;
} task_log;

static void on_token(void* user, valet_task_id id, int32_t token, const char* text) {
  task_log* log = (task_log*)user;
  (void)id;
  (void)token;
  log->tokens++;
  log->text_bytes += strlen(text);
}

static void on_done(void* user, valet_task_id id, const valet_task_result* r) {
  task_log* log = (task_log*)user;
  (void)id;
  log->done_calls++;
  log->state = r->state;
  log->n_tokens = r->n_tokens;
}

/* Looks a symbol up by name into a typed function pointer. */
#define RESOLVE(lib, name, type) ((type)dlsym(lib, name))

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBVALET_SO MODEL_GGUF\n", argv[0]);
    return 2;
  }
  FILE* model = fopen(argv[2], "rb");
  if (model == NULL) {
    printf("skipped: model %s not found\n", argv[2]);
    return 77;
  }
  fclose(model);

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  valet_params (*default_params)(void) = RESOLVE(lib, "valet_default_params", valet_params (*)(void));
  valet_task_params (*default_task_params)(void) =
      RESOLVE(lib, "valet_default_task_params", valet_task_params (*)(void));
  valet_status (*create)(const valet_params*, valet_scheduler**) =
      RESOLVE(lib, "valet_create", valet_status (*)(const valet_params*, valet_scheduler**));
  valet_status (*submit)(valet_scheduler*, const valet_task_params*, valet_task_id*) = RESOLVE(
      lib, "valet_submit", valet_status (*)(valet_scheduler*, const valet_task_params*, valet_task_id*));
  valet_status (*wait_idle)(valet_scheduler*) = RESOLVE(lib, "valet_wait_idle", valet_status (*)(valet_scheduler*));
  void (*destroy)(valet_scheduler*) = RESOLVE(lib, "valet_destroy", void (*)(valet_scheduler*));
  const char* (*last_error)(void) = RESOLVE(lib, "valet_last_error", const char* (*)(void));
  CHECK(default_params && default_task_params && create && submit && wait_idle && destroy && last_error);

  valet_params p = default_params();
  p.model_path = argv[2];
  p.n_threads = 2;
  valet_scheduler* s = NULL;
  if (create(&p, &s) != VALET_OK) {
    fprintf(stderr, "valet_create: %s\n", last_error());
    return 1;
  }
  task_log log = {0};
  valet_task_params t = default_task_params();
  t.tier = VALET_TIER_FOREGROUND_CHAT;
  t.prompt = "Once upon a time";
  t.max_tokens = 16;
  t.temperature = 0.0f;
  t.on_token = on_token;
  t.on_done = on_done;
  t.user_data = &log;
  valet_task_id id = 0;
  CHECK(submit(s, &t, &id) == VALET_OK);
  CHECK(wait_idle(s) == VALET_OK);
  destroy(s);

  CHECK(log.done_calls == 1);
  CHECK(log.state == VALET_TASK_DONE);
  CHECK(log.n_tokens > 0 && log.n_tokens == log.tokens);
  CHECK(log.text_bytes > 0);
  CHECK(dlclose(lib) == 0);
  printf("ok: %d tokens through dlopen(%s)\n", log.tokens, argv[1]);
  return 0;
}
