/* The C API, compiled as C11: create from a model path, submit with
 * callbacks, cancel, lifecycle events, errors as status values, destroy.
 * Exits 77 (skipped) when ../shared/models is absent. */
#include <stdio.h>
#include <string.h>

#include "valet/valet.h"

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", \
              __FILE__, __LINE__, #cond, valet_last_error());         \
      return 1;                                                       \
    }                                                                 \
  } while (0)

typedef struct {
  int tokens;
  int done_calls;
  int done_tokens;
  valet_task_state final_state;
  valet_status final_status;
  int parked_seen;
} task_log;

static void on_token(void* user, valet_task_id id, int32_t token, const char* text) {
  task_log* log = (task_log*)user;
  (void)id;
  (void)token;
  (void)text;
  log->tokens++;
}

static void on_state(void* user, valet_task_id id, valet_task_state state) {
  task_log* log = (task_log*)user;
  (void)id;
  if (state == VALET_TASK_PARKED) log->parked_seen = 1;
}

static void on_done(void* user, valet_task_id id, valet_task_state state, valet_status status, const char* text,
                    int32_t n_tokens) {
  task_log* log = (task_log*)user;
  (void)id;
  (void)text;
  log->done_calls++;
  log->done_tokens = n_tokens;
  log->final_state = state;
  log->final_status = status;
}

int main(void) {
  char model[1024];
  snprintf(model, sizeof model, "%s/models/stories260K.gguf", VALET_SHARED_DIR);

  valet_params params = valet_default_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(NULL, &s) == VALET_INVALID_ARGUMENT);
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT); /* no model path */
  params.model_path = "/nonexistent/model.gguf";
  CHECK(valet_create(&params, &s) != VALET_OK);
  CHECK(strlen(valet_last_error()) > 0);
  CHECK(s == NULL);

  FILE* f = fopen(model, "rb");
  if (f == NULL) {
    printf("skipped: %s not found\n", model);
    return 77;
  }
  fclose(f);
  params.model_path = model;
  params.n_threads = 1;
  params.kv_capacity_bytes = 4u << 20;
  CHECK(valet_create(&params, &s) == VALET_OK);

  task_log bg_log = {0}, fg_log = {0};
  valet_task_params bg = valet_default_task_params();
  bg.tier = VALET_TIER_OFFLINE_INDEXING;
  bg.prompt = "Once upon a time, there was a big red ball.";
  bg.max_tokens = 40;
  bg.on_token = on_token;
  bg.on_state = on_state;
  bg.on_done = on_done;
  bg.user_data = &bg_log;
  valet_task_id bg_id = 0, fg_id = 0, id = 0;
  CHECK(valet_submit(s, &bg, &bg_id) == VALET_OK);

  valet_chat_message messages[1] = {{"user", "Tell me a story."}};
  valet_task_params fg = valet_default_task_params();
  fg.tier = VALET_TIER_FOREGROUND_CHAT;
  fg.system_prompt = "You tell short stories.";
  fg.messages = messages;
  fg.n_messages = 1;
  fg.max_tokens = 8;
  fg.temperature = 0.0f;
  fg.on_token = on_token;
  fg.on_done = on_done;
  fg.user_data = &fg_log;
  CHECK(valet_submit(s, &fg, &fg_id) == VALET_OK);

  /* Bad input: clear statuses, no effect on the running tasks. */
  valet_task_params bad = valet_default_task_params();
  bad.prompt = "x";
  bad.tier = 9;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  bad.tier = VALET_TIER_FOREGROUND_CHAT;
  bad.max_tokens = 0;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  bad.max_tokens = 1 << 30;
  CHECK(valet_submit(s, &bad, &id) == VALET_OUT_OF_RANGE);
  bad.max_tokens = 4;
  bad.prompt = "";
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  CHECK(valet_cancel(s, 987654) == VALET_NOT_FOUND);
  CHECK(valet_send_lifecycle_event(s, VALET_ON_START) == VALET_INVALID_ARGUMENT);
  CHECK(valet_send_lifecycle_event(s, VALET_ON_PAUSE) == VALET_OK);

  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(valet_cancel(s, bg_id) == VALET_INVALID_ARGUMENT); /* finished */
  CHECK(bg_log.done_calls == 1 && fg_log.done_calls == 1);
  CHECK(bg_log.final_state == VALET_TASK_DONE && bg_log.final_status == VALET_OK);
  CHECK(fg_log.final_state == VALET_TASK_DONE);
  CHECK(bg_log.tokens == bg_log.done_tokens && bg_log.tokens > 0);
  CHECK(fg_log.tokens == fg_log.done_tokens && fg_log.tokens > 0);

  valet_stats stats;
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  /* The unknown tier is refused by the C layer before it reaches the scheduler. */
  CHECK(stats.done == 2 && stats.cancelled == 0 && stats.failed == 0 && stats.rejected == 3);
  CHECK(stats.lifecycle == VALET_STATE_STARTED);

  char* trace = NULL;
  CHECK(valet_chrome_trace(s, &trace) == VALET_OK);
  CHECK(strstr(trace, "traceEvents") != NULL);
  valet_free_string(trace);

  valet_destroy(s);
  valet_destroy(NULL);
  CHECK(strcmp(valet_status_name(VALET_OUT_OF_RANGE), "OUT_OF_RANGE") == 0);
  printf("capi_c_test: ok\n");
  return 0;
}
