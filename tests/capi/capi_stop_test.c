/* valet_stop and valet_destroy through the C API on stories260K: waiters
 * wake, unfinished tasks get on_done once before valet_stop returns, later
 * calls are refused or still answer; callbacks run on delivery threads, so
 * one may stop or even destroy its own scheduler, and many threads may stop
 * it at once; only valet_wait_idle, which would wait for the callback's own
 * on_done, is refused there. (That a running step stops at its next layer is
 * tests/sched/scheduler_stop_test.) Exits 77 (skipped) when ../shared/models
 * is absent. */
#include <pthread.h>
#include <string.h>

#include "capi_test_util.h"

/* What a callback got from the calls it tried on its own scheduler. */
typedef struct {
  int tried;
  valet_status stop, wait_idle, budgets;
  int error_says_why; /* valet_last_error() named valet_wait_idle and the callback */
  valet_status stats, tokenize;
} callback_calls;

static void try_calls(valet_scheduler* s, callback_calls* out, int stop) {
  valet_memory_budgets b = valet_default_memory_budgets();
  valet_stats stats = valet_default_stats();
  int32_t ids[8];
  int32_t n = 0;
  out->tried++;
  out->wait_idle = valet_wait_idle(s);
  out->error_says_why = strstr(valet_last_error(), "valet_wait_idle") != NULL &&
                        strstr(valet_last_error(), "from a task callback") != NULL;
  out->budgets = valet_get_memory_budgets(s, &b);
  if (out->budgets == VALET_OK) out->budgets = valet_set_memory_budgets(s, &b);
  out->stop = stop ? valet_stop(s) : VALET_OK;
  out->stats = valet_get_stats(s, &stats);
  out->tokenize = valet_tokenize(s, "Once", 4, ids, 8, &n);
}

typedef struct {
  valet_scheduler* s;
  callback_calls calls;
  int tokens;
  int stop; /* the first token's callback stops the scheduler */
} token_ctx;

static void token_tries_calls(void* user, valet_task_id id, int32_t token, const char* text) {
  token_ctx* ctx = (token_ctx*)user;
  (void)id;
  (void)token;
  (void)text;
  if (ctx->tokens++ == 0) try_calls(ctx->s, &ctx->calls, ctx->stop);
}

/* From a token callback: valet_wait_idle is refused with a reason, the rest
 * answers (valet_set_memory_budgets waits for the inference thread, which
 * never waits for a callback), and the task goes on to its end. */
static int test_calls_from_a_callback(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  token_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.s = s;
  valet_task_params t = valet_default_task_params();
  t.prompt = "Once upon a time";
  t.max_tokens = 4;
  t.on_token = token_tries_calls;
  t.user_data = &ctx;
  valet_task_id id = 0;
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(ctx.calls.tried == 1 && ctx.calls.wait_idle == VALET_INVALID_ARGUMENT && ctx.calls.error_says_why);
  CHECK(ctx.calls.budgets == VALET_OK && ctx.calls.stats == VALET_OK && ctx.calls.tokenize == VALET_OK);
  CHECK(ctx.tokens == 4);
  valet_stats stats = valet_default_stats();
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.done == 1 && stats.cancelled == 0);
  valet_destroy(s);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done_calls;
  int aborted; /* CANCELLED, VALET_ABORTED, with `message` */
  const char* message;
  int submits_refused;
  int destroy_in_token; /* the first token's callback destroys the scheduler */
  int tokens;
  valet_status token_stop; /* what the first token's valet_stop returned */
  callback_calls calls; /* tried from the first aborted task's on_done */
} stop_log;

static void done_during_stop(void* user, valet_task_id id, const valet_task_result* r) {
  stop_log* log = (stop_log*)user;
  valet_task_params again = valet_default_task_params();
  valet_task_id ignored = 0;
  (void)id;
  pthread_mutex_lock(&log->mu);
  log->done_calls++;
  if (r->state == VALET_TASK_CANCELLED && r->status == VALET_ABORTED && strcmp(r->message, log->message) == 0) {
    log->aborted++;
    again.prompt = "too late";
    if (log->s != NULL && valet_submit(log->s, &again, &ignored) == VALET_INVALID_ARGUMENT) log->submits_refused++;
    if (log->s != NULL && log->calls.tried == 0) try_calls(log->s, &log->calls, 1);
  }
  pthread_cond_broadcast(&log->cv);
  pthread_mutex_unlock(&log->mu);
}

static void token_stops(void* user, valet_task_id id, int32_t token, const char* text) {
  stop_log* log = (stop_log*)user;
  (void)id;
  (void)token;
  (void)text;
  pthread_mutex_lock(&log->mu);
  const int first = log->tokens++ == 0;
  pthread_mutex_unlock(&log->mu);
  if (!first) return;
  if (log->destroy_in_token) {
    valet_scheduler* s = log->s;
    pthread_mutex_lock(&log->mu);
    log->s = NULL; /* no callback may use it once it is destroyed */
    pthread_mutex_unlock(&log->mu);
    valet_destroy(s);
  } else {
    const valet_status stopped = valet_stop(log->s);
    pthread_mutex_lock(&log->mu);
    log->token_stop = stopped;
    pthread_mutex_unlock(&log->mu);
  }
}

static void init_log(stop_log* log, valet_scheduler* s, const char* message) {
  memset(log, 0, sizeof *log);
  log->s = s;
  log->message = message;
  pthread_mutex_init(&log->mu, NULL);
  pthread_cond_init(&log->cv, NULL);
}

static void free_log(stop_log* log) {
  pthread_cond_destroy(&log->cv);
  pthread_mutex_destroy(&log->mu);
}

/* Tasks the heat holds back (only the chat tier runs), each reporting to log. */
static int submit_held_tasks(valet_scheduler* s, stop_log* log, int n) {
  CHECK(valet_on_thermal_status(s, VALET_THERMAL_EMERGENCY, -1.0f) == VALET_OK);
  for (int i = 0; i < n; ++i) {
    valet_task_params t = valet_default_task_params();
    t.tier = 1 + i % (VALET_NUM_TIERS - 1);
    t.prompt = "Once upon a time, there was a little dog.";
    t.max_tokens = 100;
    t.on_done = done_during_stop;
    t.user_data = log;
    valet_task_id id = 0;
    CHECK(valet_submit(s, &t, &id) == VALET_OK);
  }
  return 0;
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

/* Two threads wait for tasks the heat holds back; valet_stop ends them all,
 * every on_done having run when it returns. */
static int test_stop_wakes_waiters_and_ends_every_task(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  stop_log log;
  init_log(&log, s, "scheduler stopped");
  enum { kTasks = 8 };
  if (submit_held_tasks(s, &log, kTasks) != 0) return 1;
  waiter waiters[2] = {{s, pthread_self(), VALET_INTERNAL}, {s, pthread_self(), VALET_INTERNAL}};
  for (int i = 0; i < 2; ++i) CHECK(pthread_create(&waiters[i].thread, NULL, wait_idle_thread, &waiters[i]) == 0);
  CHECK(valet_stop(s) == VALET_OK);
  pthread_mutex_lock(&log.mu);
  const int done_when_stopped = log.done_calls;
  pthread_mutex_unlock(&log.mu);
  CHECK(done_when_stopped == kTasks);
  for (int i = 0; i < 2; ++i) {
    CHECK(pthread_join(waiters[i].thread, NULL) == 0);
    CHECK(waiters[i].result == VALET_OK);
  }
  CHECK(log.aborted == kTasks && log.submits_refused == kTasks);
  /* From an on_done during the stop: stopping again returns, waiting for idle is refused. */
  CHECK(log.calls.tried == 1 && log.calls.stop == VALET_OK && log.calls.wait_idle == VALET_INVALID_ARGUMENT);
  CHECK(log.calls.budgets == VALET_ABORTED && log.calls.stats == VALET_OK && log.calls.tokenize == VALET_OK);

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
  free_log(&log);
  return 0;
}

/* A chat's token callback stops (or destroys) the scheduler while other
 * tasks wait: it returns, and every task, the chat included, still gets its
 * on_done once, cancelled with the reason. */
static int stop_from_a_callback(int destroy) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  stop_log log;
  init_log(&log, s, destroy ? "scheduler destroyed" : "scheduler stopped");
  log.destroy_in_token = destroy;
  enum { kHeld = 3 };
  if (submit_held_tasks(s, &log, kHeld) != 0) return 1;
  valet_task_params chat = valet_default_task_params();
  chat.prompt = "Once upon a time";
  chat.max_tokens = 400;
  chat.on_token = token_stops;
  chat.on_done = done_during_stop;
  chat.user_data = &log;
  valet_task_id id = 0;
  CHECK(valet_submit(s, &chat, &id) == VALET_OK);
  pthread_mutex_lock(&log.mu);
  while (log.done_calls < kHeld + 1) pthread_cond_wait(&log.cv, &log.mu);
  pthread_mutex_unlock(&log.mu);
  CHECK(log.done_calls == kHeld + 1 && log.aborted >= kHeld);
  if (!destroy) {
    CHECK(log.token_stop == VALET_OK);
    CHECK(valet_wait_idle(s) == VALET_OK);
    valet_destroy(s);
  }
  free_log(&log);
  return 0;
}

typedef struct {
  valet_scheduler* s;
  pthread_t thread;
  valet_status result;
} stopper;

static void* stop_thread(void* arg) {
  stopper* st = (stopper*)arg;
  st->result = valet_stop(st->s);
  return NULL;
}

/* Sixteen threads stop at once: each returns once every on_done has run. */
static int test_racing_stops(void) {
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  stop_log log;
  init_log(&log, s, "scheduler stopped");
  enum { kTasks = 6, kStoppers = 16 };
  if (submit_held_tasks(s, &log, kTasks) != 0) return 1;
  stopper stoppers[kStoppers];
  for (int i = 0; i < kStoppers; ++i) {
    stoppers[i].s = s;
    stoppers[i].result = VALET_INTERNAL;
    CHECK(pthread_create(&stoppers[i].thread, NULL, stop_thread, &stoppers[i]) == 0);
  }
  for (int i = 0; i < kStoppers; ++i) {
    CHECK(pthread_join(stoppers[i].thread, NULL) == 0);
    CHECK(stoppers[i].result == VALET_OK);
  }
  CHECK(log.done_calls == kTasks && log.aborted == kTasks);
  valet_destroy(s);
  free_log(&log);
  return 0;
}

int main(void) {
  const int found = find_model();
  if (found != 0) return found;
  if (test_calls_from_a_callback() != 0 || test_stop_wakes_waiters_and_ends_every_task() != 0 ||
      stop_from_a_callback(0) != 0 || stop_from_a_callback(1) != 0 || test_racing_stops() != 0) {
    return 1;
  }
  printf("capi_stop_test: ok\n");
  return 0;
}
