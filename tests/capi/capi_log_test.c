/* valet_log_set on stories260K: valet_create with a snapshot directory that
 * cannot exist (under /dev/null) logs two warnings (the directory, then the
 * calibration's disk write), which reach the C sink with their level, text,
 * length and NUL and the sink's user_data, on a thread that is not the
 * caller's; after valet_log_set(NULL, NULL) the sink is never called again.
 * Exits 77 (skipped) when ../shared/models is absent. */
#include <pthread.h>
#include <string.h>

#include "capi_test_util.h"

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t caller;
  int calls;
  int unusable_dir, disk_write_failed;
  int malformed; /* not WARN, no NUL after text_len, or on the caller's thread */
} log_seen;

static void on_log(void* user, valet_log_level level, const char* text, size_t text_len) {
  log_seen* seen = (log_seen*)user;
  pthread_mutex_lock(&seen->mu);
  seen->calls++;
  if (level != VALET_LOG_WARN || text[text_len] != '\0' || strlen(text) != text_len ||
      pthread_equal(pthread_self(), seen->caller)) {
    seen->malformed++;
  } else {
    seen->unusable_dir += strstr(text, "snapshot directory /dev/null/valet-capi-log-test is unusable") != NULL;
    seen->disk_write_failed += strstr(text, "snapshot to disk failed") != NULL;
  }
  pthread_cond_broadcast(&seen->cv);
  pthread_mutex_unlock(&seen->mu);
}

int main(void) {
  const int model = find_model();
  if (model != 0) return model;
  log_seen seen;
  memset(&seen, 0, sizeof seen);
  pthread_mutex_init(&seen.mu, NULL);
  pthread_cond_init(&seen.cv, NULL);
  seen.caller = pthread_self();
  valet_log_set(on_log, &seen);

  valet_params p = model_params();
  p.snapshot_dir = "/dev/null/valet-capi-log-test";
  valet_scheduler* s = NULL;
  CHECK(valet_create(&p, &s) == VALET_OK);
  pthread_mutex_lock(&seen.mu);
  while (seen.malformed == 0 && (seen.unusable_dir == 0 || seen.disk_write_failed == 0)) {
    pthread_cond_wait(&seen.cv, &seen.mu);
  }
  pthread_mutex_unlock(&seen.mu);
  valet_log_set(NULL, NULL);
  pthread_mutex_lock(&seen.mu);
  const int calls = seen.calls;
  CHECK(seen.malformed == 0);
  CHECK(seen.unusable_dir == 1 && seen.disk_write_failed == 1);
  pthread_mutex_unlock(&seen.mu);

  /* The sink is gone: what valet logs now goes to the default log at once. */
  valet_destroy(s);
  valet_log_default(NULL, VALET_LOG_INFO, "capi_log_test: the default log", strlen("capi_log_test: the default log"));
  pthread_mutex_lock(&seen.mu);
  CHECK(seen.calls == calls);
  pthread_mutex_unlock(&seen.mu);
  pthread_cond_destroy(&seen.cv);
  pthread_mutex_destroy(&seen.mu);
  printf("capi_log_test: ok\n");
  return 0;
}
