/* The C API, compiled as C11: create from a model path, submit with
 * callbacks, a slow background listener that holds back only its own task,
 * cancel, lifecycle events, errors as status values, struct versions, budget
 * tables from JSON strings, thermal status, destroy. Exits 77 (skipped) when
 * ../shared/models is absent. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "capi_test_util.h"

typedef struct {
  int tokens;
  int done_calls;
  int done_tokens;
  valet_task_state final_state;
  valet_status final_status;
  char message[64];
  valet_task_metrics metrics;
  size_t result_size;
  int parked_seen;
  int second_token_seq; /* when its second token was delivered (event_seq) */
  int done_seq;         /* when its on_done was */
} task_log;

/* The order in which callbacks of every task ran. */
static atomic_int event_seq;

static void on_token(void* user, valet_task_id id, int32_t token, const char* text) {
  task_log* log = (task_log*)user;
  (void)id;
  (void)token;
  (void)text;
  log->tokens++;
  if (log->tokens == 2) log->second_token_seq = atomic_fetch_add(&event_seq, 1);
}

static void on_state(void* user, valet_task_id id, valet_task_state state) {
  task_log* log = (task_log*)user;
  (void)id;
  if (state == VALET_TASK_PARKED) log->parked_seen = 1;
}

static void on_done(void* user, valet_task_id id, const valet_task_result* r) {
  task_log* log = (task_log*)user;
  (void)id;
  log->done_calls++;
  log->result_size = r->struct_size;
  log->done_tokens = r->n_tokens;
  log->final_state = r->state;
  log->final_status = r->status;
  snprintf(log->message, sizeof log->message, "%s", r->message);
  log->metrics = r->metrics;
  log->done_seq = atomic_fetch_add(&event_seq, 1);
}

static int test_errors_without_model(void) {
  valet_params params = valet_default_params();
  valet_scheduler* s = NULL;
  CHECK(params.struct_size == sizeof(valet_params));
  CHECK(valet_create(NULL, &s) == VALET_INVALID_ARGUMENT);
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT); /* no model path */
  params.model_path = "/nonexistent/model.gguf";
  CHECK(valet_create(&params, &s) != VALET_OK);
  CHECK(strlen(valet_last_error()) > 0);
  CHECK(s == NULL);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  task_log log;
  valet_task_params chat;
  valet_status chat_submitted;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int chat_done;
} background_ctx;

typedef struct {
  task_log log;
  background_ctx* background;
} chat_ctx;

/* A slow background listener: its first token submits the chat and then
 * blocks (a database write, say) until the chat has finished. The chat is
 * not held back by it, and the background task, its consumer behind (39
 * tokens to go), is parked rather than run on without bound. */
static void background_token_submits_chat(void* user, valet_task_id id, int32_t token, const char* text) {
  background_ctx* ctx = (background_ctx*)user;
  valet_task_id chat_id = 0;
  on_token(&ctx->log, id, token, text);
  if (ctx->log.tokens != 1) return;
  ctx->chat_submitted = valet_submit(ctx->s, &ctx->chat, &chat_id);
  pthread_mutex_lock(&ctx->mu);
  while (ctx->chat_submitted == VALET_OK && !ctx->chat_done) pthread_cond_wait(&ctx->cv, &ctx->mu);
  pthread_mutex_unlock(&ctx->mu);
}

static void chat_done(void* user, valet_task_id id, const valet_task_result* r) {
  chat_ctx* ctx = (chat_ctx*)user;
  on_done(&ctx->log, id, r);
  pthread_mutex_lock(&ctx->background->mu);
  ctx->background->chat_done = 1;
  pthread_cond_signal(&ctx->background->cv);
  pthread_mutex_unlock(&ctx->background->mu);
}

static void background_state(void* user, valet_task_id id, valet_task_state state) {
  on_state(&((background_ctx*)user)->log, id, state);
}

static void background_done(void* user, valet_task_id id, const valet_task_result* r) {
  on_done(&((background_ctx*)user)->log, id, r);
}

/* Two tiers with a preemption, bad input, lifecycle, on_done's result and
 * metrics, stats. */
static int test_run(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);

  background_ctx bg_ctx;
  memset(&bg_ctx, 0, sizeof bg_ctx);
  bg_ctx.s = s;
  bg_ctx.chat_submitted = VALET_INTERNAL;
  pthread_mutex_init(&bg_ctx.mu, NULL);
  pthread_cond_init(&bg_ctx.cv, NULL);
  chat_ctx fg_ctx;
  memset(&fg_ctx, 0, sizeof fg_ctx);
  fg_ctx.background = &bg_ctx;
  valet_task_params bg = valet_default_task_params();
  bg.tier = VALET_TIER_OFFLINE_INDEXING;
  bg.prompt = "Once upon a time, there was a big red ball.";
  bg.max_tokens = 40;
  bg.on_token = background_token_submits_chat;
  bg.on_state = background_state;
  bg.on_done = background_done;
  bg.user_data = &bg_ctx;

  valet_chat_message messages[1] = {{"user", "Tell me a story."}};
  valet_task_params* fg = &bg_ctx.chat;
  *fg = valet_default_task_params();
  fg->tier = VALET_TIER_FOREGROUND_CHAT;
  fg->system_prompt = "You tell short stories.";
  fg->messages = messages;
  fg->n_messages = 1;
  fg->max_tokens = 8;
  fg->temperature = 0.0f;
  fg->on_token = on_token;
  fg->on_done = chat_done;
  fg->user_data = &fg_ctx;
  valet_task_id bg_id = 0, id = 0;
  CHECK(valet_submit(s, &bg, &bg_id) == VALET_OK);

  /* Bad input: clear statuses, no effect on the running tasks. */
  valet_task_params bad = valet_default_task_params();
  bad.prompt = "x";
  bad.tier = 9;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  bad.tier = VALET_TIER_FOREGROUND_CHAT;
  bad.max_tokens = -1;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  bad.max_tokens = 1 << 30;
  CHECK(valet_submit(s, &bad, &id) == VALET_OUT_OF_RANGE);
  bad.max_tokens = 4;
  bad.prompt = "";
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  CHECK(valet_cancel(s, 987654) == VALET_NOT_FOUND);
  CHECK(valet_send_lifecycle_event(s, VALET_ON_START) == VALET_INVALID_ARGUMENT);
  CHECK(valet_send_lifecycle_event(s, VALET_ON_PAUSE) == VALET_OK);
  CHECK(valet_send_lifecycle_event(s, VALET_ON_PAUSE) == VALET_INVALID_ARGUMENT); /* repeated */

  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(bg_ctx.chat_submitted == VALET_OK);
  const task_log bg_log = bg_ctx.log;
  const task_log fg_log = fg_ctx.log;
  CHECK(fg_log.done_seq < bg_log.second_token_seq); /* the chat ended before the slow listener's next token */
  CHECK(valet_cancel(s, bg_id) == VALET_INVALID_ARGUMENT); /* finished */
  CHECK(bg_log.done_calls == 1 && fg_log.done_calls == 1);
  CHECK(bg_log.result_size == sizeof(valet_task_result));
  CHECK(bg_log.final_state == VALET_TASK_DONE && bg_log.final_status == VALET_OK);
  CHECK(strcmp(bg_log.message, "") == 0);
  CHECK(fg_log.final_state == VALET_TASK_DONE);
  CHECK(bg_log.tokens == bg_log.done_tokens && bg_log.tokens > 0);
  CHECK(fg_log.tokens == fg_log.done_tokens && fg_log.tokens > 0);
  CHECK(bg_log.metrics.generated_tokens == bg_log.tokens && fg_log.metrics.generated_tokens == fg_log.tokens);
  CHECK(fg_log.metrics.ttft_seconds >= 0.0 && fg_log.metrics.e2e_seconds >= fg_log.metrics.ttft_seconds);
  CHECK(fg_log.metrics.prompt_tokens > 0);
  int parks = 0;
  for (int k = 0; k < VALET_NUM_PARK_KINDS; ++k) parks += bg_log.metrics.parks_by_kind[k];
  CHECK(parks == bg_log.metrics.parks);
  CHECK(bg_log.metrics.parks > 0 && bg_log.parked_seen);

  valet_stats stats = valet_default_stats();
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  /* The unknown tier is refused by the C layer before it reaches the scheduler. */
  CHECK(stats.done == 2 && stats.cancelled == 0 && stats.failed == 0 && stats.rejected == 3);
  CHECK(stats.lifecycle == VALET_STATE_STARTED);
  CHECK(stats.thermal == VALET_THERMAL_NONE);
  CHECK(stats.tiers[VALET_TIER_OFFLINE_INDEXING].done == 1 && stats.tiers[VALET_TIER_FOREGROUND_CHAT].done == 1);
  CHECK(stats.tiers[VALET_TIER_OFFLINE_INDEXING].generated_tokens == bg_log.tokens);
  CHECK(stats.tiers[VALET_TIER_OFFLINE_INDEXING].active == 0 && stats.tiers[VALET_TIER_OFFLINE_INDEXING].parked == 0);
  CHECK(stats.memory.pool_capacity_bytes > 0 && stats.memory.pool_capacity_bytes <= params.kv_capacity_bytes);
  CHECK(stats.memory.pool_used_bytes <= stats.memory.pool_capacity_bytes);

  char* trace = NULL;
  CHECK(valet_chrome_trace(s, &trace) == VALET_OK);
  CHECK(strstr(trace, "traceEvents") != NULL);
  valet_free_string(trace);

  valet_destroy(s);
  valet_destroy(NULL);
  pthread_cond_destroy(&bg_ctx.cv);
  pthread_mutex_destroy(&bg_ctx.mu);
  return 0;
}

/* struct_size: older (shorter) structs take defaults for what they lack;
 * sizes that are no version of the struct are refused. */
static int test_struct_versions(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  params.struct_size = 3;
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT);
  params.struct_size = sizeof(valet_params) + 8;
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT);
  params.struct_size = offsetof(valet_params, model_path) + 1;
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT);
  /* A caller built before budget_table_json existed: the bytes there are not read. */
  params.struct_size = offsetof(valet_params, budget_table_json);
  params.budget_table_json = "{ not json";
  CHECK(valet_create(&params, &s) == VALET_OK);

  valet_task_params t = valet_default_task_params();
  valet_task_id id = 0;
  t.prompt = "Once upon a time";
  t.max_tokens = 4;
  t.struct_size = 2;
  CHECK(valet_submit(s, &t, &id) == VALET_INVALID_ARGUMENT);
  /* Ends before max_tokens: the default max_tokens applies, not this one. */
  t.struct_size = offsetof(valet_task_params, max_tokens);
  t.max_tokens = -5;
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);

  valet_stats stats = valet_default_stats();
  stats.struct_size = offsetof(valet_stats, rejected) + 1;
  CHECK(valet_get_stats(s, &stats) == VALET_INVALID_ARGUMENT);
  /* An older, shorter valet_stats: nothing past it is written. */
  valet_stats old = valet_default_stats();
  old.struct_size = offsetof(valet_stats, thermal);
  old.thermal = (valet_thermal_status)77;
  CHECK(valet_get_stats(s, &old) == VALET_OK);
  CHECK(old.struct_size == offsetof(valet_stats, thermal) && old.done == 1);
  CHECK((int)old.thermal == 77);
  valet_destroy(s);
  return 0;
}

static int test_budget_json(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  params.budget_table_json = "{\"RESUMED\": {\"OFFLINE_INDEXING\": {\"turn_tokens\": 4}}, \"thermal\": "
                             "{\"LIGHT\": {\"lowest_running_tier\": \"INLINE_SUGGESTION\"}}}";
  CHECK(valet_create(&params, &s) == VALET_OK);
  valet_destroy(s);
  s = NULL;
  params.budget_table_json = "{\"RESUMED\": {\"OFFLINE_INDEXING\": {\"turn_tokens\": -4}}}";
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT);
  CHECK(strstr(valet_last_error(), "turn_tokens") != NULL);
  params.budget_table_json = "{\"thermal\": {\"WARM\": {}}}";
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT);
  params.budget_table_json = "{}";
  params.budget_table_path = "/nonexistent.json";
  CHECK(valet_create(&params, &s) == VALET_INVALID_ARGUMENT); /* one source only */
  CHECK(s == NULL);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  task_log chat;
  int background_tokens_at_chat_done;
  task_log* background;
} thermal_ctx;

/* The chat finishes while background work is held by the heat; cooling
 * down from the chat's on_done lets the background task run to the end. */
static void chat_done_cools(void* user, valet_task_id id, const valet_task_result* r) {
  thermal_ctx* ctx = (thermal_ctx*)user;
  on_done(&ctx->chat, id, r);
  ctx->background_tokens_at_chat_done = ctx->background->tokens;
  valet_on_thermal_status(ctx->s, VALET_THERMAL_NONE, -1.0f);
}

static int test_thermal(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  CHECK(valet_on_thermal_status(s, 7, -1.0f) == VALET_INVALID_ARGUMENT);
  CHECK(valet_on_thermal_status(s, -1, -1.0f) == VALET_INVALID_ARGUMENT);
  CHECK(valet_on_thermal_status(s, VALET_THERMAL_EMERGENCY, -1.0f) == VALET_OK);

  task_log bg_log = {0};
  thermal_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.s = s;
  ctx.background = &bg_log;
  valet_task_params bg = valet_default_task_params();
  bg.tier = VALET_TIER_BACKGROUND_SUMMARY;
  bg.prompt = "Once upon a time";
  bg.max_tokens = 6;
  bg.on_token = on_token;
  bg.on_state = on_state;
  bg.on_done = on_done;
  bg.user_data = &bg_log;
  valet_task_params fg = valet_default_task_params();
  fg.prompt = "Tell me";
  fg.max_tokens = 6;
  fg.on_done = chat_done_cools;
  fg.user_data = &ctx;
  valet_task_id id = 0;
  CHECK(valet_submit(s, &bg, &id) == VALET_OK);
  CHECK(valet_submit(s, &fg, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(ctx.chat.done_calls == 1 && ctx.chat.final_state == VALET_TASK_DONE);
  CHECK(ctx.background_tokens_at_chat_done == 0);
  CHECK(bg_log.done_calls == 1 && bg_log.final_state == VALET_TASK_DONE && bg_log.tokens > 0);

  /* A headroom forecast at 1.0 or above counts as SEVERE. Events apply in
   * order, so a task submitted after one finishes after it took effect. */
  valet_stats stats = valet_default_stats();
  fg.on_done = on_done;
  fg.user_data = &ctx.chat;
  CHECK(valet_on_thermal_status(s, VALET_THERMAL_LIGHT, 1.25f) == VALET_OK);
  CHECK(valet_submit(s, &fg, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.thermal == VALET_THERMAL_SEVERE);
  CHECK(valet_on_thermal_status(s, VALET_THERMAL_LIGHT, 0.5f) == VALET_OK);
  CHECK(valet_submit(s, &fg, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.thermal == VALET_THERMAL_LIGHT && stats.cancelled == 0);
  valet_destroy(s);
  return 0;
}

/* What an Android app sends: an observer attached to ProcessLifecycleOwner
 * while the app is in the foreground is brought up from ON_CREATE. */
static int test_lifecycle(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(params.initial_state == VALET_STATE_RESUMED);
  CHECK(valet_create(&params, &s) == VALET_OK);
  const valet_lifecycle_event attach[] = {VALET_ON_CREATE, VALET_ON_START, VALET_ON_RESUME,
                                          VALET_ON_PAUSE,  VALET_ON_STOP,  VALET_ON_START};
  for (size_t i = 0; i < sizeof attach / sizeof attach[0]; ++i) CHECK(valet_send_lifecycle_event(s, attach[i]) == VALET_OK);
  valet_stats stats = valet_default_stats();
  CHECK(valet_send_lifecycle_event(s, VALET_ON_CREATE) == VALET_INVALID_ARGUMENT); /* only once */
  CHECK(valet_send_lifecycle_event(s, VALET_ON_START) == VALET_INVALID_ARGUMENT);  /* repeated */
  CHECK(valet_send_lifecycle_event(s, (valet_lifecycle_event)42) == VALET_INVALID_ARGUMENT);
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.lifecycle == VALET_STATE_STARTED);
  valet_destroy(s);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  pthread_mutex_t mu; /* on_done of different tasks may run at once */
  int done_calls;
  int aborted;
  int done;
  int submit_refused;
} destroy_log;

static void count_done(void* user, valet_task_id id, const valet_task_result* r) {
  destroy_log* log = (destroy_log*)user;
  valet_task_params again = valet_default_task_params();
  valet_task_id ignored = 0;
  (void)id;
  pthread_mutex_lock(&log->mu);
  log->done_calls++;
  if (r->state == VALET_TASK_DONE) log->done++;
  if (r->state == VALET_TASK_CANCELLED && r->status == VALET_ABORTED &&
      strcmp(r->message, "scheduler destroyed") == 0) {
    log->aborted++;
    again.prompt = "too late";
    if (valet_submit(log->s, &again, &ignored) == VALET_INVALID_ARGUMENT) log->submit_refused++;
  }
  pthread_mutex_unlock(&log->mu);
}

/* Destroy with tasks queued, parked and running: every on_done, once. */
static int test_destroy_in_flight(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  destroy_log log;
  memset(&log, 0, sizeof log);
  log.s = s;
  pthread_mutex_init(&log.mu, NULL);
  /* Only the chat runs: the other tiers are surely unfinished (held). */
  CHECK(valet_on_thermal_status(s, VALET_THERMAL_EMERGENCY, -1.0f) == VALET_OK);
  enum { kTasks = 12 };
  for (int i = 0; i < kTasks; ++i) {
    valet_task_params t = valet_default_task_params();
    t.tier = i % VALET_NUM_TIERS;
    t.prompt = "Once upon a time, there was a little dog.";
    t.max_tokens = 200;
    t.on_done = count_done;
    t.user_data = &log;
    valet_task_id id = 0;
    CHECK(valet_submit(s, &t, &id) == VALET_OK);
  }
  valet_destroy(s);
  CHECK(log.done_calls == kTasks);
  CHECK(log.done + log.aborted == kTasks);
  CHECK(log.aborted >= kTasks * 3 / 4 && log.submit_refused == log.aborted);
  pthread_mutex_destroy(&log.mu);
  return 0;
}

int main(void) {
  const int found = find_model();
  if (test_errors_without_model() != 0) return 1;
  if (found != 0) return found;
  if (test_run() != 0 || test_struct_versions() != 0 || test_budget_json() != 0 || test_thermal() != 0 ||
      test_lifecycle() != 0 || test_destroy_in_flight() != 0) {
    return 1;
  }
  CHECK(strcmp(valet_status_name(VALET_OUT_OF_RANGE), "OUT_OF_RANGE") == 0);
  CHECK(strcmp(valet_status_name(VALET_ABORTED), "ABORTED") == 0);
  printf("capi_c_test: ok\n");
  return 0;
}
