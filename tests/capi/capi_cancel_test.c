/* valet_cancel's truth on stories260K: sixteen threads submit short tasks
 * and cancel them (at once, a moment later, or from the task's own first
 * token), many of the cancels landing as the tasks finish. VALET_OK always
 * means the task ended CANCELLED, and a task that ended CANCELLED was always
 * cancelled by a call that returned VALET_OK. Exits 77 (skipped) when
 * ../shared/models is absent. */
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "capi_test_util.h"

enum { kThreads = 16, kTasksPerThread = 24 };

typedef struct {
  valet_scheduler* s;
  pthread_mutex_t mu;
  int cancel_ok[kThreads * kTasksPerThread];
  valet_task_state state[kThreads * kTasksPerThread];
  int done_calls[kThreads * kTasksPerThread];
  valet_task_id ids[kThreads * kTasksPerThread];
} run;

typedef struct {
  run* r;
  int slot;
  int cancel_in_token;
  int tokens;
} task_ctx;

static task_ctx g_tasks[kThreads * kTasksPerThread];

static void note_cancel(run* r, int slot, valet_status status) {
  pthread_mutex_lock(&r->mu);
  if (status == VALET_OK) r->cancel_ok[slot]++;
  pthread_mutex_unlock(&r->mu);
}

static void on_token(void* user, valet_task_id id, int32_t token, const char* text) {
  task_ctx* t = (task_ctx*)user;
  (void)token;
  (void)text;
  if (t->tokens++ == 0 && t->cancel_in_token) note_cancel(t->r, t->slot, valet_cancel(t->r->s, id));
}

static void on_done(void* user, valet_task_id id, const valet_task_result* result) {
  task_ctx* t = (task_ctx*)user;
  (void)id;
  pthread_mutex_lock(&t->r->mu);
  t->r->state[t->slot] = result->state;
  t->r->done_calls[t->slot]++;
  pthread_mutex_unlock(&t->r->mu);
}

typedef struct {
  run* r;
  int thread;
} worker_arg;

static void* worker(void* arg) {
  const worker_arg* w = (const worker_arg*)arg;
  unsigned rng = 977u * (unsigned)(w->thread + 1);
  for (int i = 0; i < kTasksPerThread; ++i) {
    const int slot = w->thread * kTasksPerThread + i;
    rng = rng * 1103515245u + 12345u;
    task_ctx* t = &g_tasks[slot];
    t->r = w->r;
    t->slot = slot;
    t->cancel_in_token = (rng >> 16) % 3 == 0;
    valet_task_params p = valet_default_task_params();
    p.tier = (int32_t)((rng >> 8) % VALET_NUM_TIERS);
    p.prompt = "Once upon a time";
    p.max_tokens = 1 + (int32_t)((rng >> 20) % 4);
    p.on_token = on_token;
    p.on_done = on_done;
    p.user_data = t;
    valet_task_id id = 0;
    if (valet_submit(w->r->s, &p, &id) != VALET_OK) return (void*)1;
    w->r->ids[slot] = id;
    /* Cancel this one or an earlier one of this thread, now or after a yield. */
    const int victim = w->thread * kTasksPerThread + (int)((rng >> 4) % (unsigned)(i + 1));
    if ((rng >> 12) % 2 == 0) sched_yield();
    if ((rng >> 24) % 4 != 0) note_cancel(w->r, victim, valet_cancel(w->r->s, w->r->ids[victim]));
  }
  return NULL;
}

int main(void) {
  const int found = find_model();
  if (found != 0) return found;
  valet_params params = model_params();
  static run r;
  memset(&r, 0, sizeof r);
  pthread_mutex_init(&r.mu, NULL);
  CHECK(valet_create(&params, &r.s) == VALET_OK);
  pthread_t threads[kThreads];
  worker_arg args[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    args[t].r = &r;
    args[t].thread = t;
    CHECK(pthread_create(&threads[t], NULL, worker, &args[t]) == 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    void* failed = NULL;
    CHECK(pthread_join(threads[t], &failed) == 0 && failed == NULL);
  }
  CHECK(valet_wait_idle(r.s) == VALET_OK);
  int cancelled = 0;
  for (int i = 0; i < kThreads * kTasksPerThread; ++i) {
    CHECK(r.done_calls[i] == 1);
    CHECK(r.state[i] == VALET_TASK_DONE || r.state[i] == VALET_TASK_CANCELLED);
    CHECK((r.cancel_ok[i] > 0) == (r.state[i] == VALET_TASK_CANCELLED));
    cancelled += r.state[i] == VALET_TASK_CANCELLED;
  }
  CHECK(cancelled > 0 && cancelled < kThreads * kTasksPerThread);
  valet_stats stats = valet_default_stats();
  CHECK(valet_get_stats(r.s, &stats) == VALET_OK);
  CHECK(stats.cancelled == cancelled);
  valet_destroy(r.s);
  pthread_mutex_destroy(&r.mu);
  printf("capi_cancel_test: ok (%d of %d cancelled)\n", cancelled, kThreads * kTasksPerThread);
  return 0;
}
