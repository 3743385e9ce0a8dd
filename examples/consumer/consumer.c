/* The smallest app on the installed libvalet: one foreground prompt on the
 * model given as argv[1], tokens streamed to stdout. Exit status 0 only when
 * at least one token arrived, so the package test can tell it worked. */
#include <stdio.h>

#include "valet/valet.h"
#include "valet/version.h"

static void print_token(void* user_data, valet_task_id id, int32_t token, const char* text) {
  (void)id;
  (void)token;
  ++*(int*)user_data;
  fputs(text, stdout);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  printf("libvalet %s\n", valet_version());

  valet_params params = valet_default_params();
  params.model_path = argv[1];
  valet_scheduler* scheduler = NULL;
  if (valet_create(&params, &scheduler) != VALET_OK) {
    fprintf(stderr, "valet_create: %s\n", valet_last_error());
    return 1;
  }

  int n_tokens = 0;
  valet_task_params task = valet_default_task_params();
  task.prompt = "Once upon a time";
  task.max_tokens = 8;
  task.temperature = 0.0f;
  task.on_token = print_token;
  task.user_data = &n_tokens;
  valet_task_id id;
  valet_status status = valet_submit(scheduler, &task, &id);
  if (status == VALET_OK) status = valet_wait_idle(scheduler);
  if (status != VALET_OK) fprintf(stderr, "valet: %s\n", valet_last_error());
  valet_destroy(scheduler);

  printf("\n%d tokens\n", n_tokens);
  return status == VALET_OK && n_tokens > 0 ? 0 : 1;
}
