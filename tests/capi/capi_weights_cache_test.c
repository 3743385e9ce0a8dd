/* Packed weights as a file through the C API: valet_create with
 * weights_cache makes the cache and maps it (valet_stats.weights: every
 * packed matrix mapped, nothing anonymous), the next valet_create maps it
 * without repacking, a snapshot_dir alone puts it in <snapshot_dir>/weights/,
 * "" asks for none, and valet_weights_cache_remove removes it. Exits 77
 * (skipped) when ../shared/models is absent. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capi_test_util.h"

/* The *.weights files in `dir` (0 when it does not exist). */
static int caches_in(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return 0;
  int n = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    const size_t len = strlen(e->d_name);
    n += len > 8 && strcmp(e->d_name + len - 8, ".weights") == 0;
  }
  closedir(d);
  return n;
}

/* valet_create over `p`, its weights stats into *out, then valet_destroy. */
static int weights_of(const valet_params* p, valet_weights_stats* out) {
  valet_scheduler* s = NULL;
  CHECK(valet_create(p, &s) == VALET_OK);
  valet_stats stats = valet_default_stats();
  CHECK(valet_get_stats(s, &stats) == VALET_OK);
  CHECK(stats.scratch_bytes > 0); /* v7: the forward pass's buffers, apart from the weights */
  *out = stats.weights;
  valet_destroy(s);
  return 0;
}

int main(void) {
  if (find_shared_model("synth-tiny-q4_0.gguf") != 0) return SKIPPED; /* quantized: its load packs */
  char root[] = "/tmp/valet-capi-weights-XXXXXX";
  CHECK(mkdtemp(root) != NULL);
  char caches[128], snapshots[128], snapshot_caches[160];
  snprintf(caches, sizeof caches, "%s/caches/", root);
  snprintf(snapshots, sizeof snapshots, "%s/snapshots", root);
  snprintf(snapshot_caches, sizeof snapshot_caches, "%s/weights", snapshots);

  valet_params p = model_params();
  valet_weights_stats plain, made, mapped;
  CHECK(weights_of(&p, &plain) == 0);  /* NULL without a snapshot_dir: none */
  CHECK(plain.matrices_packed > 0 && plain.matrices_mapped == 0 && plain.anonymous_bytes > 0);
  CHECK(caches_in(caches) == 0);

  p.weights_cache = caches;
  CHECK(weights_of(&p, &made) == 0);
  CHECK(made.matrices_packed == plain.matrices_packed && made.matrices_mapped == plain.matrices_packed);
  CHECK(made.anonymous_bytes == 0 && made.file_backed_bytes > plain.file_backed_bytes);
  CHECK(caches_in(caches) == 1);
  CHECK(weights_of(&p, &mapped) == 0);
  CHECK(mapped.matrices_packed == 0 && mapped.matrices_mapped == plain.matrices_packed);
  CHECK(mapped.anonymous_bytes == 0 && mapped.file_backed_bytes == made.file_backed_bytes);

  p.weights_cache = NULL;
  p.snapshot_dir = snapshots;
  CHECK(weights_of(&p, &made) == 0);
  CHECK(made.matrices_mapped == plain.matrices_packed && caches_in(snapshot_caches) == 1);
  p.weights_cache = "";
  CHECK(weights_of(&p, &made) == 0);
  CHECK(made.matrices_mapped == 0 && made.anonymous_bytes > 0);

  CHECK(valet_weights_cache_remove(caches) == VALET_OK);
  CHECK(caches_in(caches) == 0);
  CHECK(valet_weights_cache_remove(snapshot_caches) == VALET_OK);
  CHECK(caches_in(snapshot_caches) == 0);
  CHECK(valet_weights_cache_remove(caches) == VALET_OK); /* nothing there */
  CHECK(valet_weights_cache_remove(NULL) == VALET_INVALID_ARGUMENT);

  char cleanup[256];
  snprintf(cleanup, sizeof cleanup, "rm -rf '%s'", root);
  CHECK(system(cleanup) == 0);
  printf("ok\n");
  return 0;
}
