/* valet_on_power_state: on a low battery (not charging) an indexing task
 * waits while the chat runs, and finishes with every token once the phone
 * charges; a bad report or struct is refused. (Which park cause a running
 * task reports is the C++ core's test, power_test.) Exits 77 (skipped) when ../shared/models is
 * absent. */
#include <pthread.h>
#include <string.h>

#include "capi_test_util.h"

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int tokens;
  int done;
  valet_task_state final_state;
  int final_tokens;
} Watch;

static void on_token(void* user_data, valet_task_id id, int32_t token, const char* text) {
  (void)id;
  (void)token;
  (void)text;
  Watch* w = (Watch*)user_data;
  pthread_mutex_lock(&w->mu);
  w->tokens++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void on_state(void* user_data, valet_task_id id, valet_task_state state) {
  (void)id;
  Watch* w = (Watch*)user_data;
  pthread_mutex_lock(&w->mu);
  (void)state;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void on_done(void* user_data, valet_task_id id, const valet_task_result* result) {
  (void)id;
  Watch* w = (Watch*)user_data;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  w->final_state = result->state;
  w->final_tokens = result->n_tokens;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static valet_task_params task(valet_tier tier, int max_tokens, Watch* w) {
  valet_task_params t = valet_default_task_params();
  t.tier = tier;
  t.prompt = "Once upon a time";
  t.max_tokens = max_tokens;
  t.on_token = on_token;
  t.on_state = on_state;
  t.on_done = on_done;
  t.user_data = w;
  return t;
}

int main(void) {
  if (find_model() != 0) return SKIPPED;
  valet_params p = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&p, &s) == VALET_OK);

  valet_power_state bad = valet_default_power_state();
  CHECK(bad.charging == 1 && bad.battery_percent == -1 && bad.power_save == 0 && bad.battery_low == 0);
  bad.battery_percent = 140;
  CHECK(valet_on_power_state(s, &bad) == VALET_INVALID_ARGUMENT);
  bad = valet_default_power_state();
  bad.struct_size = 3;
  CHECK(valet_on_power_state(s, &bad) == VALET_INVALID_ARGUMENT);
  CHECK(valet_on_power_state(s, NULL) == VALET_INVALID_ARGUMENT);

  valet_power_state low = valet_default_power_state();
  low.charging = 0;
  low.battery_low = 1;
  low.battery_percent = 9;
  CHECK(valet_on_power_state(s, &low) == VALET_OK);
  Watch indexing = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, VALET_TASK_QUEUED, 0};
  valet_task_params t = task(VALET_TIER_OFFLINE_INDEXING, 8, &indexing);
  valet_task_id id = 0;
  CHECK(valet_submit(s, &t, &id) == VALET_OK);
  Watch chat = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, VALET_TASK_QUEUED, 0};
  valet_task_params c = task(VALET_TIER_FOREGROUND_CHAT, 4, &chat);
  valet_task_id chat_id = 0;
  CHECK(valet_submit(s, &c, &chat_id) == VALET_OK);
  pthread_mutex_lock(&chat.mu);
  while (!chat.done) pthread_cond_wait(&chat.cv, &chat.mu);
  pthread_mutex_unlock(&chat.mu);
  CHECK(chat.final_state == VALET_TASK_DONE && chat.final_tokens == 4);
  /* The chat ran after the indexer was submitted, which still waits for the battery. */
  valet_task_info info = valet_default_task_info();
  CHECK(valet_get_task_info(s, id, &info) == VALET_OK && info.state == VALET_TASK_QUEUED);
  pthread_mutex_lock(&indexing.mu);
  CHECK(indexing.tokens == 0 && !indexing.done);
  pthread_mutex_unlock(&indexing.mu);

  valet_power_state charging = low;
  charging.charging = 1;
  CHECK(valet_on_power_state(s, &charging) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(indexing.done && indexing.final_state == VALET_TASK_DONE && indexing.final_tokens == 8);
  valet_destroy(s);
  printf("ok\n");
  return 0;
}
