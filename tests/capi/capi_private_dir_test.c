/* valet_create checks the snapshot directory and its tasks/ instead of
 * trusting them: a symbolic link planted at either (to a directory anyone may
 * write), a directory others may write, or one of another user (as root:
 * given to nobody) fails with VALET_INVALID_ARGUMENT and valet_last_error()
 * naming the path and what is wrong, and nothing is written through; a
 * directory valet makes is 0700. Exits 77 (skipped) when ../shared/models is absent. */
#define _DEFAULT_SOURCE /* mkdtemp, symlink */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi_test_util.h"

/* 1 when valet_create over `snapshot_dir` fails as refused, saying `what`. */
static int refused(const char* snapshot_dir, const char* what) {
  valet_params p = model_params();
  p.snapshot_dir = snapshot_dir;
  valet_scheduler* s = NULL;
  const valet_status status = valet_create(&p, &s);
  if (status == VALET_OK) {
    fprintf(stderr, "valet_create accepted %s\n", snapshot_dir);
    valet_destroy(s);
    return 0;
  }
  if (status != VALET_INVALID_ARGUMENT || s != NULL || strstr(valet_last_error(), what) == NULL) {
    fprintf(stderr, "over %s: status %d, \"%s\"; expected \"%s\"\n", snapshot_dir, (int)status,
            valet_last_error(), what);
    return 0;
  }
  return 1;
}

static int is_empty(const char* path) {
  DIR* d = opendir(path);
  if (d == NULL) return 0;
  int entries = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  }
  closedir(d);
  return entries == 0;
}

int main(void) {
  if (find_model() != 0) return SKIPPED;
  char root[] = "/tmp/valet-capi-private-dir-XXXXXX";
  CHECK(mkdtemp(root) != NULL);
  char open_to_all[128], link[128], snapshots[128], tasks[160], theirs[128], expected[256];
  snprintf(open_to_all, sizeof open_to_all, "%s/public", root);
  snprintf(link, sizeof link, "%s/link", root);
  snprintf(snapshots, sizeof snapshots, "%s/snapshots", root);
  snprintf(tasks, sizeof tasks, "%s/tasks", snapshots);
  snprintf(theirs, sizeof theirs, "%s/theirs", root);
  CHECK(mkdir(open_to_all, 0777) == 0 && chmod(open_to_all, 0777) == 0);

  CHECK(symlink(open_to_all, link) == 0);
  snprintf(expected, sizeof expected, "%s is a symbolic link", link);
  CHECK(refused(link, expected));
  snprintf(expected, sizeof expected, "%s is writable by its group and others (mode 0777)",
           open_to_all);
  CHECK(refused(open_to_all, expected));

  CHECK(mkdir(snapshots, 0700) == 0);
  CHECK(symlink(open_to_all, tasks) == 0);
  snprintf(expected, sizeof expected, "%s is a symbolic link", tasks);
  CHECK(refused(snapshots, expected));
  CHECK(is_empty(open_to_all));

  if (geteuid() == 0) { /* only root can give a directory to another user */
    CHECK(mkdir(theirs, 0700) == 0 && chown(theirs, 65534, 65534) == 0);
    snprintf(expected, sizeof expected, "%s is owned by uid 65534, not 0", theirs);
    CHECK(refused(theirs, expected));
  } else {
    printf("not root: the other user's directory is not tried\n");
  }

  /* The happy path: the planted link gone, valet makes tasks/ itself, 0700. */
  CHECK(unlink(tasks) == 0);
  valet_params p = model_params();
  p.snapshot_dir = snapshots;
  valet_scheduler* s = NULL;
  CHECK(valet_create(&p, &s) == VALET_OK);
  struct stat st;
  CHECK(lstat(tasks, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);
  valet_destroy(s);

  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK(system(cmd) == 0);
  printf("capi_private_dir_test: ok\n");
  return 0;
}
