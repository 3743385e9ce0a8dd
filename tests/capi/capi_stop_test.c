/* valet_stop through the C API on stories260K: waiters wake, unfinished
 * tasks get on_done once on the stopping thread, later calls are refused or
 * still answer; and the calls that wait for the scheduler (valet_wait_idle,
 * valet_set_memory_budgets, valet_stop, valet_destroy) are refused from its
 * callbacks, on the inference thread and on the stopping thread. (That a
 * running step stops at its next layer is tests/sched/scheduler_stop_test.)
 * Exits 77 (skipped) when ../shared/models is absent. */
#include <pthread.h>
#include <string.h>

#include "capi_test_util.h"

/* What a callback got from the calls that would wait for its own thread. */
typedef struct {
  int tried;
  valet_status stop, wait_idle, budgets;
  int errors_say_why; /* valet_last_error() named the call and the callback, each time */
  int destroy_refused;
  valet_status stats, tokenize; /* calls that do not wait still answer */
} waiting_calls;

static int last_error_says(const char* call) {
  return strstr(valet_last_error(), call) != NULL && strstr(valet_last_error(), "from a task callback") != NULL;
}

static void try_waiting_calls(valet_scheduler* s, waiting_calls* out) {
  valet_memory_budgets b = valet_default_memory_budgets();
  valet_stats stats = valet_default_stats();
  int32_t ids[8];
  int32_t n = 0;
  out->tried++;
  out->stop = valet_stop(s);
  out->errors_say_why = last_error_says("valet_stop");
  out->wait_idle = valet_wait_idle(s);
  out->errors_say_why &= last_error_says("valet_wait_idle");
  out->budgets = valet_set_memory_budgets(s, &b);
  out->errors_say_why &= last_error_says("valet_set_memory_budgets");
  valet_destroy(s); /* refused: s stays valid */
  out->destroy_refused = last_error_says("valet_destroy");
  out->stats = valet_get_stats(s, &stats);
  out->tokenize = valet_tokenize(s, "Once", 4, ids, 8, &n);
}

static int check_refused(const waiting_calls* c) {
  CHECK(c->tried == 1);
  CHECK(c->stop == VALET_INVALID_ARGUMENT && c->wait_idle == VALET_INVALID_ARGUMENT);
  CHECK(c->budgets == VALET_INVALID_ARGUMENT);
  CHECK(c->errors_say_why && c->destroy_refused);
  CHECK(c->stats == VALET_OK && c->tokenize == VALET_OK);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  waiting_calls calls;
  int tokens;
} inference_ctx;

static void token_tries_waiting_calls(void* user, valet_task_id id, int32_t token, const char* text) {
  inference_ctx* ctx = (inference_ctx*)user;
  (void)id;
  (void)token;
  (void)text;
  if (ctx->tokens++ == 0) try_waiting_calls(ctx->s, &ctx->calls);
}

/* On the inference thread: refused, and the task and scheduler go on. */
static int test_refused_on_the_inference_thread(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  inference_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.s = s;
  valet_task_params t = valet_default_task_params();
  t.prompt = "Once upon a time";
  t.max_tokens = 4;
  t.on_token = token_tries_waiting_calls;
  t.user_data = &ctx;
  valet_task_id id = 0;
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  if (check_refused(&ctx.calls) != 0) return 1;
  CHECK(ctx.tokens == 4);
  valet_stats stats = valet_default_stats();
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.done == 1 && stats.cancelled == 0);
  valet_destroy(s);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  pthread_t stopper;
  pthread_mutex_t mu;
  int done_calls;
  int aborted_on_stopper; /* CANCELLED, VALET_ABORTED, "scheduler stopped", on the stopping thread */
  int submits_refused;
  waiting_calls calls; /* tried from the first aborted task's on_done */
} stop_log;

static void done_during_stop(void* user, valet_task_id id, const valet_task_result* r) {
  stop_log* log = (stop_log*)user;
  valet_task_params again = valet_default_task_params();
  valet_task_id ignored = 0;
  (void)id;
  pthread_mutex_lock(&log->mu);
  log->done_calls++;
  if (r->state == VALET_TASK_CANCELLED && r->status == VALET_ABORTED && strcmp(r->message, "scheduler stopped") == 0 &&
      pthread_equal(pthread_self(), log->stopper)) {
    log->aborted_on_stopper++;
    again.prompt = "too late";
    if (valet_submit(log->s, &again, &ignored) == VALET_INVALID_ARGUMENT) log->submits_refused++;
    if (log->calls.tried == 0) try_waiting_calls(log->s, &log->calls);
  }
  pthread_mutex_unlock(&log->mu);
}

typedef struct {
  valet_scheduler* s;
  pthread_t thread;
  valet_status result;
} waiter;

static void* wait_idle_thread(void* arg) {
  waiter* w = (waiter*)arg;
  w->result = valet_wait_idle(w->s);
  return NULL;
}

/* Two threads wait for tasks the heat holds back; valet_stop ends them all. */
static int test_stop_wakes_waiters_and_ends_every_task(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  stop_log log;
  memset(&log, 0, sizeof log);
  log.s = s;
  log.stopper = pthread_self();
  pthread_mutex_init(&log.mu, NULL);
  /* Only the chat tier runs: the other tiers' tasks are surely unfinished. */
  CHECK(valet_on_thermal_status(s, VALET_THERMAL_EMERGENCY, -1.0f) == VALET_OK);
  enum { kTasks = 8 };
  for (int i = 0; i < kTasks; ++i) {
    valet_task_params t = valet_default_task_params();
    t.tier = 1 + i % (VALET_NUM_TIERS - 1);
    t.prompt = "Once upon a time, there was a little dog.";
    t.max_tokens = 100;
    t.on_done = done_during_stop;
    t.user_data = &log;
    valet_task_id id = 0;
    CHECK(valet_submit(s, &t, &id) == VALET_OK);
  }
  waiter waiters[2] = {{s, pthread_self(), VALET_INTERNAL}, {s, pthread_self(), VALET_INTERNAL}};
  for (int i = 0; i < 2; ++i) CHECK(pthread_create(&waiters[i].thread, NULL, wait_idle_thread, &waiters[i]) == 0);
  CHECK(valet_stop(s) == VALET_OK);
  for (int i = 0; i < 2; ++i) {
    CHECK(pthread_join(waiters[i].thread, NULL) == 0);
    CHECK(waiters[i].result == VALET_OK);
  }
  CHECK(log.done_calls == kTasks && log.aborted_on_stopper == kTasks && log.submits_refused == kTasks);
  if (check_refused(&log.calls) != 0) return 1;

  /* Stopped for good: refused, or still answering, never waiting. */
  valet_task_params late = valet_default_task_params();
  late.prompt = "late";
  valet_task_id id = 0;
  CHECK(valet_submit(s, &late, &id) == VALET_INVALID_ARGUMENT);
  CHECK(valet_stop(s) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  valet_memory_budgets b = valet_default_memory_budgets();
  CHECK(valet_get_memory_budgets(s, &b) == VALET_OK);
  CHECK(valet_set_memory_budgets(s, &b) == VALET_ABORTED);
  valet_stats stats = valet_default_stats();
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.cancelled == kTasks && stats.done == 0);
  int32_t ids[8];
  int32_t n = 0;
  CHECK(valet_tokenize(s, "Once", 4, ids, 8, &n) == VALET_OK && n > 0);
  valet_destroy(s);
  pthread_mutex_destroy(&log.mu);
  return 0;
}

int main(void) {
  const int found = find_model();
  if (found != 0) return found;
  if (test_refused_on_the_inference_thread() != 0 || test_stop_wakes_waiters_and_ends_every_task() != 0) return 1;
  printf("capi_stop_test: ok\n");
  return 0;
}
