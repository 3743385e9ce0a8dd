/* valet C API: a priority scheduler for on-device LLM inference.
 *
 * One valet_scheduler owns a model, its engine and the scheduler's inference
 * thread. All functions may be called from any thread; callbacks run on the
 * inference thread (never under a scheduler lock) and may call valet_submit,
 * valet_cancel and valet_send_lifecycle_event, but not valet_wait_idle or
 * valet_destroy. No C++ exception crosses this boundary: failures are status
 * values, with a message from valet_last_error() on the calling thread.
 *
 * Usage:
 *   valet_params p = valet_default_params();
 *   p.model_path = "model.gguf";
 *   valet_scheduler* s;
 *   if (valet_create(&p, &s) != VALET_OK) { puts(valet_last_error()); }
 *   valet_task_params t = valet_default_task_params();
 *   t.prompt = "Once upon a time"; t.on_token = my_token_fn; t.user_data = ctx;
 *   valet_task_id id;
 *   valet_submit(s, &t, &id);
 *   valet_wait_idle(s);
 *   valet_destroy(s);
 */
#ifndef VALET_VALET_H_
#define VALET_VALET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct valet_scheduler valet_scheduler;
typedef int64_t valet_task_id;

typedef enum valet_status {
  VALET_OK = 0,
  VALET_INVALID_ARGUMENT = 1, /* bad tier, empty prompt, max_tokens <= 0, event out of order, ... */
  VALET_NOT_FOUND = 2,        /* unknown task id, missing model file */
  VALET_CORRUPT = 3,          /* the model file is malformed */
  VALET_UNSUPPORTED = 4,
  VALET_OUT_OF_RANGE = 5,     /* past the context */
  VALET_RESOURCE_EXHAUSTED = 6,
  VALET_IO = 7,
  VALET_INTERNAL = 8
} valet_status;

typedef enum valet_tier {
  VALET_TIER_FOREGROUND_CHAT = 0,
  VALET_TIER_INLINE_SUGGESTION = 1,
  VALET_TIER_BACKGROUND_SUMMARY = 2,
  VALET_TIER_OFFLINE_INDEXING = 3
} valet_tier;

typedef enum valet_task_state {
  VALET_TASK_QUEUED = 0,
  VALET_TASK_PREFILLING = 1,
  VALET_TASK_PARKED = 2,
  VALET_TASK_DECODING = 3,
  VALET_TASK_DONE = 4,
  VALET_TASK_CANCELLED = 5,
  VALET_TASK_FAILED = 6
} valet_task_state;

typedef enum valet_lifecycle_event {
  VALET_ON_CREATE = 0,
  VALET_ON_START = 1,
  VALET_ON_RESUME = 2,
  VALET_ON_PAUSE = 3,
  VALET_ON_STOP = 4,
  VALET_ON_DESTROY = 5
} valet_lifecycle_event;

typedef enum valet_lifecycle_state {
  VALET_STATE_DESTROYED = 0,
  VALET_STATE_CREATED = 1,
  VALET_STATE_STARTED = 2,
  VALET_STATE_RESUMED = 3
} valet_lifecycle_state;

typedef enum valet_batch_mode { VALET_BATCH_STRICT = 0, VALET_BATCH_FILL = 1 } valet_batch_mode;

typedef struct valet_params {
  const char* model_path;          /* GGUF file; required */
  int32_t n_threads;               /* 0: all cores */
  int32_t n_ctx;                   /* 0: the model's training context */
  int32_t max_batch_tokens;        /* tokens per engine step */
  size_t kv_capacity_bytes;        /* KV pool budget */
  size_t snapshot_ram_bytes;       /* RAM tier of the snapshot store */
  const char* snapshot_dir;        /* disk tier directory; NULL: none */
  const char* budget_table_path;   /* governor budgets as JSON; NULL: defaults */
  valet_lifecycle_state initial_state;
  valet_batch_mode batch_mode;
  double fill_max_cost_fraction;
} valet_params;

typedef struct valet_chat_message {
  const char* role; /* "system", "user" or "assistant" */
  const char* content;
} valet_chat_message;

/* `text` is NUL-terminated and valid only during the call. */
typedef void (*valet_token_fn)(void* user_data, valet_task_id id, int32_t token, const char* text);
typedef void (*valet_state_fn)(void* user_data, valet_task_id id, valet_task_state state);
/* Exactly once per accepted task. `status` says why a FAILED task failed. */
typedef void (*valet_done_fn)(void* user_data, valet_task_id id, valet_task_state state, valet_status status,
                              const char* text, int32_t n_tokens);

typedef struct valet_task_params {
  int32_t tier;                       /* a valet_tier value */
  const char* system_prompt;          /* shared prefix (KV shared between tasks); NULL: none */
  const valet_chat_message* messages; /* chat form, rendered by the plain template; or */
  size_t n_messages;
  const char* prompt;                 /* raw prompt, used when n_messages == 0 */
  int32_t max_tokens;
  float temperature;                  /* <= 0: greedy */
  int32_t top_k;
  float top_p;
  float min_p;
  float repeat_penalty;
  uint64_t seed;
  const char* const* stop;            /* stop strings */
  size_t n_stop;
  valet_token_fn on_token;
  valet_state_fn on_state;
  valet_done_fn on_done;
  void* user_data;
} valet_task_params;

typedef struct valet_stats {
  int64_t submitted, done, cancelled, failed, rejected;
  int64_t steps, prefill_tokens, decode_tokens, tokens_recomputed;
  int64_t parks_by_kind[5]; /* resident, snapshot_ram, snapshot_disk, partial, full */
  int64_t preemptions;
  valet_lifecycle_state lifecycle;
} valet_stats;

valet_params valet_default_params(void);
valet_task_params valet_default_task_params(void);

valet_status valet_create(const valet_params* params, valet_scheduler** out);
/* Stops after the current step; unfinished tasks get no callback. NULL is a no-op. */
void valet_destroy(valet_scheduler* scheduler);

valet_status valet_submit(valet_scheduler* scheduler, const valet_task_params* params, valet_task_id* out_id);
/* VALET_NOT_FOUND for an unknown id, VALET_INVALID_ARGUMENT for a finished task. */
valet_status valet_cancel(valet_scheduler* scheduler, valet_task_id id);
/* VALET_INVALID_ARGUMENT when out of order (the state is then unchanged). */
valet_status valet_send_lifecycle_event(valet_scheduler* scheduler, valet_lifecycle_event event);
/* Blocks until every task submitted so far has finished. */
valet_status valet_wait_idle(valet_scheduler* scheduler);
valet_status valet_get_stats(const valet_scheduler* scheduler, valet_stats* out);
/* Chrome trace-event JSON of the run so far; free with valet_free_string. */
valet_status valet_chrome_trace(const valet_scheduler* scheduler, char** out_json);
void valet_free_string(char* s);

const char* valet_status_name(valet_status status);
/* The message of the last failed call on this thread ("" if none). */
const char* valet_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* VALET_VALET_H_ */
