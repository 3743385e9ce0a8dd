/* valet_create_async: a load on valet's own thread reports its stages in
 * order (packing up to all of its bytes) and hands over a working scheduler;
 * one cancelled from its first packing report ends VALET_ABORTED without a
 * scheduler; a missing model reaches `done` with VALET_NOT_FOUND; the handle
 * may be freed from inside `done`. Exits 77 (skipped) when ../shared/models
 * is absent. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test_util.h"

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ended;
  valet_status status;
  char message[512];
  valet_scheduler* scheduler;
  int stages[4];          /* reports per stage */
  int out_of_order;       /* a stage reported after a later one */
  int last_stage;
  uint64_t packed, pack_total;
  int cancel_at_pack;     /* cancel from the first packing report */
  int free_in_done;       /* valet_load_free from inside done */
  valet_load* load;
} Load;

static void on_progress(void* user_data, valet_load_stage stage, uint64_t done, uint64_t total) {
  Load* l = (Load*)user_data;
  pthread_mutex_lock(&l->mu);
  l->stages[stage]++;
  if ((int)stage < l->last_stage) l->out_of_order = 1;
  l->last_stage = (int)stage;
  if (stage == VALET_LOAD_PACK) {
    l->packed = done;
    l->pack_total = total;
  }
  const int cancel = l->cancel_at_pack && stage == VALET_LOAD_PACK;
  valet_load* load = l->load;
  pthread_mutex_unlock(&l->mu);
  if (cancel) valet_load_cancel(load);
}

static void on_done(void* user_data, valet_status status, const char* message, valet_scheduler* scheduler) {
  Load* l = (Load*)user_data;
  pthread_mutex_lock(&l->mu);
  l->status = status;
  snprintf(l->message, sizeof l->message, "%s", message);
  l->scheduler = scheduler;
  const int free_here = l->free_in_done;
  valet_load* load = l->load;
  pthread_mutex_unlock(&l->mu);
  if (free_here) valet_load_free(load);
  pthread_mutex_lock(&l->mu);
  l->ended = 1;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

static int g_task_tokens = -1;
static valet_task_state g_task_state;

static void on_task_done(void* user_data, valet_task_id id, const valet_task_result* result) {
  (void)user_data;
  (void)id;
  g_task_state = result->state;  /* read after valet_wait_idle returns */
  g_task_tokens = result->n_tokens;
}

/* Starts a load of `model` and waits for its end. */
static int run(Load* l, const char* model) {
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  valet_params p = model_params();
  p.model_path = model;
  pthread_mutex_lock(&l->mu); /* done may not run before l->load is set */
  const valet_status started = valet_create_async(&p, on_progress, on_done, l, &l->load);
  pthread_mutex_unlock(&l->mu);
  CHECK(started == VALET_OK && l->load != NULL);
  pthread_mutex_lock(&l->mu);
  while (!l->ended) pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
  if (!l->free_in_done) valet_load_free(l->load);
  return 0;
}

int main(void) {
  if (find_shared_model("synth-tiny-q4_0.gguf") != 0) return SKIPPED; /* quantized: its load packs */
  const char* model = g_model;

  Load done = {0};
  CHECK(run(&done, model) == 0);
  CHECK(done.status == VALET_OK && done.scheduler != NULL);
  CHECK(done.stages[VALET_LOAD_MAP] == 1 && done.stages[VALET_LOAD_PACK] >= 2 && done.stages[VALET_LOAD_PREPARE] == 1);
  CHECK(done.stages[VALET_LOAD_WRITE_CACHE] == 0 && !done.out_of_order);
  CHECK(done.pack_total > 0 && done.packed == done.pack_total);
  valet_task_params t = valet_default_task_params();
  t.prompt = "Once upon a time";
  t.max_tokens = 4;
  t.on_done = on_task_done;
  valet_task_id id = 0;
  CHECK(valet_submit(done.scheduler, &t, &id) == VALET_OK);
  CHECK(valet_wait_idle(done.scheduler) == VALET_OK);
  CHECK(g_task_state == VALET_TASK_DONE && g_task_tokens == 4);
  valet_destroy(done.scheduler);

  Load cancelled = {0};
  cancelled.cancel_at_pack = 1;
  CHECK(run(&cancelled, model) == 0);
  CHECK(cancelled.status == VALET_ABORTED && cancelled.scheduler == NULL);
  CHECK(strstr(cancelled.message, "cancelled") != NULL);
  CHECK(cancelled.stages[VALET_LOAD_PREPARE] == 0);

  Load missing = {0};
  missing.free_in_done = 1;
  char absent[1100];
  snprintf(absent, sizeof absent, "%s.absent", model);
  CHECK(run(&missing, absent) == 0);
  CHECK(missing.status == VALET_NOT_FOUND && missing.scheduler == NULL);
  CHECK(strstr(missing.message, absent) != NULL);

  valet_load* none = NULL;
  valet_params bad = valet_default_params();
  bad.struct_size = 3;
  CHECK(valet_create_async(&bad, NULL, on_done, &missing, &none) == VALET_INVALID_ARGUMENT && none == NULL);
  CHECK(valet_create_async(&bad, NULL, NULL, &missing, &none) == VALET_INVALID_ARGUMENT);
  printf("ok\n");
  return 0;
}
