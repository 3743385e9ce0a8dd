/* Durable tasks through the C API: a task whose scheduler is destroyed
 * mid-generation is found by valet_recover on a new one (over the same
 * snapshot_dir) and finishes with the tokens of an uninterrupted run;
 * valet_task_ack forgets an ended one. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capi_test_util.h"

#define MAX_TOKENS 48

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int32_t tokens[MAX_TOKENS * 2];
  int n;
  int done; /* on_done calls */
  int recovered, resumed;
  char key[64];
  const char* want; /* the key on_recovered continues */
} run_state;

static void on_token(void* user, valet_task_id id, int32_t token, const char* text) {
  (void)id;
  (void)text;
  run_state* r = (run_state*)user;
  pthread_mutex_lock(&r->mu);
  if (r->n < MAX_TOKENS * 2) r->tokens[r->n++] = token;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void on_done(void* user, valet_task_id id, const valet_task_result* result) {
  (void)id;
  run_state* r = (run_state*)user;
  pthread_mutex_lock(&r->mu);
  ++r->done;
  snprintf(r->key, sizeof r->key, "%s", result->durable_key);
  pthread_mutex_unlock(&r->mu);
}

/* Resumed tasks continue into the same run_state; ended ones add their tokens. */
static void on_recovered(void* user, const valet_recovered_task* task, valet_task_params* callbacks) {
  run_state* r = (run_state*)user;
  ++r->recovered;
  if (strcmp(task->durable_key, r->want) != 0) return;
  r->n = 0;
  for (int32_t i = 0; i < task->n_tokens && r->n < MAX_TOKENS * 2; ++i) r->tokens[r->n++] = task->tokens[i];
  if (callbacks != NULL) {
    ++r->resumed;
    callbacks->on_token = on_token;
    callbacks->on_done = on_done;
    callbacks->user_data = r;
  }
}

static valet_task_params durable_task(run_state* r, const char* key) {
  valet_task_params t = valet_default_task_params();
  t.tier = VALET_TIER_OFFLINE_INDEXING;
  t.prompt = "Once upon a time";
  t.max_tokens = MAX_TOKENS;
  t.temperature = 0.8f;
  t.repeat_penalty = 1.1f;
  t.seed = 77;
  t.durable = 1;
  t.durable_key = key;
  t.on_token = on_token;
  t.on_done = on_done;
  t.user_data = r;
  return t;
}

static void init_state(run_state* r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  r->want = "doc-1";
}

int main(void) {
  if (find_model() != 0) return SKIPPED;
  char dir[] = "/tmp/valet-capi-durable-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  valet_params p = model_params();
  p.snapshot_dir = dir;

  /* The uninterrupted run. */
  run_state ref;
  init_state(&ref);
  valet_scheduler* s = NULL;
  CHECK(valet_create(&p, &s) == VALET_OK);
  valet_task_params t = durable_task(&ref, "ref-1");
  valet_task_id id = 0;
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  valet_wait_idle(s);
  CHECK(ref.done == 1 && ref.n > 10);
  CHECK(strcmp(ref.key, "ref-1") == 0);
  CHECK(valet_task_ack(s, "ref-1") == VALET_OK);
  CHECK(valet_task_ack(s, "ref-1") == VALET_NOT_FOUND);
  CHECK(valet_task_ack(s, "../ref-1") == VALET_INVALID_ARGUMENT);
  valet_destroy(s);

  /* Destroyed after a few tokens: the journal stays. */
  run_state cut;
  init_state(&cut);
  CHECK(valet_create(&p, &s) == VALET_OK);
  t = durable_task(&cut, "doc-1");
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  pthread_mutex_lock(&cut.mu);
  while (cut.n < 4) pthread_cond_wait(&cut.cv, &cut.mu);
  pthread_mutex_unlock(&cut.mu);
  valet_destroy(s);

  /* A new scheduler over the same directory finishes it. */
  run_state after;
  init_state(&after);
  CHECK(valet_create(&p, &s) == VALET_OK);
  CHECK(valet_recover(s, on_recovered, &after) == VALET_OK);
  CHECK(after.recovered == 1);
  valet_wait_idle(s);
  CHECK(after.n == ref.n);
  CHECK(memcmp(after.tokens, ref.tokens, (size_t)ref.n * sizeof(int32_t)) == 0);
  CHECK(after.resumed == 0 || after.done == 1);
  CHECK(valet_task_ack(s, "doc-1") == VALET_OK);
  valet_destroy(s);

  /* The context decides tokens, so it is part of a journal's identity: under
   * another n_ctx the journal is skipped (fn never hears of it) and left as
   * it is; under its own it resumes with the uninterrupted run's tokens. */
  run_state cut3;
  init_state(&cut3);
  CHECK(valet_create(&p, &s) == VALET_OK);
  t = durable_task(&cut3, "doc-3");
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  pthread_mutex_lock(&cut3.mu);
  while (cut3.n < 4) pthread_cond_wait(&cut3.cv, &cut3.mu);
  pthread_mutex_unlock(&cut3.mu);
  valet_destroy(s);
  char journal[256];
  snprintf(journal, sizeof journal, "%s/tasks/doc-3.journal", dir);
  struct stat before;
  CHECK(stat(journal, &before) == 0);
  valet_params other_ctx = p;
  other_ctx.n_ctx = 64;
  run_state skipped;
  init_state(&skipped);
  skipped.want = "doc-3";
  CHECK(valet_create(&other_ctx, &s) == VALET_OK);
  CHECK(valet_recover(s, on_recovered, &skipped) == VALET_OK);
  CHECK(skipped.recovered == 0);
  valet_destroy(s);
  struct stat after_skip;
  CHECK(stat(journal, &after_skip) == 0 && after_skip.st_size == before.st_size);
  run_state back;
  init_state(&back);
  back.want = "doc-3";
  CHECK(valet_create(&p, &s) == VALET_OK);
  CHECK(valet_recover(s, on_recovered, &back) == VALET_OK);
  CHECK(back.recovered == 1);
  valet_wait_idle(s);
  CHECK(back.n == ref.n);
  CHECK(memcmp(back.tokens, ref.tokens, (size_t)ref.n * sizeof(int32_t)) == 0);
  CHECK(valet_task_ack(s, "doc-3") == VALET_OK);
  valet_destroy(s);

  /* Durable needs a directory for its journal. */
  valet_params no_dir = model_params();
  CHECK(valet_create(&no_dir, &s) == VALET_OK);
  t = durable_task(&after, "doc-2");
  CHECK(valet_submit(s, &t, &id) == VALET_INVALID_ARGUMENT);
  CHECK(valet_recover(s, on_recovered, &after) == VALET_INVALID_ARGUMENT);
  valet_destroy(s);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  printf("ok (%s)\n", after.resumed ? "resumed mid-way" : "it had ended before the destroy");
  return 0;
}
