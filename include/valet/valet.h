/* valet C API v3: a priority scheduler for on-device LLM inference.
 *
 * One valet_scheduler owns a model, its engine and the scheduler's inference
 * thread, which never runs the app's code. All functions may be called from
 * any thread. Task callbacks run on the scheduler's delivery threads, never
 * under a scheduler lock: each task's callbacks one at a time, in order,
 * exactly once each, on_done last. A slow callback holds back only its own
 * task: once 32 of its events wait, the task is parked (resumed exactly
 * where it was when its callbacks catch up) while the engine and every other
 * task go on. Callbacks may call every function but valet_wait_idle, which
 * would wait for their own on_done (VALET_INVALID_ARGUMENT). No C++
 * exception crosses this boundary: failures are status values, with a
 * message from valet_last_error() on the calling thread.
 *
 * Text: every string is UTF-8. Where a length can be given (prompt_length,
 * message_lengths, valet_tokenize's text_len) the text may hold NUL bytes;
 * elsewhere it ends at its NUL. No text may be longer than
 * VALET_MAX_TEXT_BYTES, nor a list (messages, stop strings) longer than
 * VALET_MAX_LIST_ITEMS: such input is refused before it is read.
 *
 * Versioning: every struct starts with struct_size. The library reads (or,
 * for valet_stats, writes) only the fields that lie wholly within it, and
 * gives the rest their defaults, so a caller built against an older, shorter
 * struct keeps working. A struct_size that is not the end of one of the
 * struct's fields, or is larger than the library's struct, is
 * VALET_INVALID_ARGUMENT. The _default_*() functions set it.
 *
 * Usage:
 *   valet_params p = valet_default_params();
 *   p.model_path = "model.gguf";
 *   valet_scheduler* s;
 *   if (valet_create(&p, &s) != VALET_OK) { puts(valet_last_error()); }
 *   valet_task_params t = valet_default_task_params();
 *   t.prompt = "Once upon a time"; t.on_token = my_token_fn; t.user_data = ctx;
 *   valet_task_id id;
 *   valet_submit(s, &t, &id);
 *   valet_wait_idle(s);
 *   valet_destroy(s);
 */
#ifndef VALET_VALET_H_
#define VALET_VALET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is libvalet.so's exported C API (the library is
 * built with -fvisibility=hidden; see valet/export.h). */
#pragma GCC visibility push(default)

/* 3: valet_stop, valet_tokenize, text lengths in valet_task_params, models
 * read from a file descriptor (valet_params.model_fd).
 * 5: valet_log_set, valet_log_default (the log); callbacks on delivery
 * threads; valet_task_params.on_text and valet_task_result.text_len (text
 * with its length, NUL bytes included).
 * 6: packed weights as a file (valet_params.weights_cache,
 * valet_weights_cache_remove, valet_stats.weights); valet_create_async.
 * 8: output constraints (valet_task_params.constraint_*).
 * 9: tool calls (valet_task_params.tools, tool_choice, message_tools;
 * valet_task_result.tool_calls, content). */
#define VALET_API_VERSION 9

#define VALET_MAX_TEXT_BYTES ((size_t)64 << 20)
#define VALET_MAX_LIST_ITEMS ((size_t)1 << 16)

typedef struct valet_scheduler valet_scheduler;
typedef int64_t valet_task_id;

typedef enum valet_status {
  VALET_OK = 0,
  VALET_INVALID_ARGUMENT = 1, /* bad tier, empty prompt, max_tokens < 0, event out of order, bad struct_size, ... */
  VALET_NOT_FOUND = 2,        /* unknown task id, missing model file */
  VALET_CORRUPT = 3,          /* the model file is malformed */
  VALET_UNSUPPORTED = 4,
  VALET_OUT_OF_RANGE = 5,     /* past the context */
  VALET_RESOURCE_EXHAUSTED = 6,
  VALET_IO = 7,
  VALET_INTERNAL = 8,
  VALET_ABORTED = 9           /* a task cancelled because the scheduler was stopped or destroyed */
} valet_status;

typedef enum valet_tier {
  VALET_TIER_FOREGROUND_CHAT = 0,
  VALET_TIER_INLINE_SUGGESTION = 1,
  VALET_TIER_BACKGROUND_SUMMARY = 2,
  VALET_TIER_OFFLINE_INDEXING = 3
} valet_tier;
#define VALET_NUM_TIERS 4

/* v8. What a task's output must follow (docs/structured-output.md). */
typedef enum valet_constraint_kind {
  VALET_CONSTRAINT_NONE = 0,
  VALET_CONSTRAINT_JSON_SCHEMA = 1, /* constraint_text: the JSON Schema */
  VALET_CONSTRAINT_JSON_OBJECT = 2, /* any JSON object; constraint_text unused */
  VALET_CONSTRAINT_GRAMMAR = 3,     /* constraint_text: a GBNF grammar (llama.cpp's syntax) */
  VALET_CONSTRAINT_REGEX = 4,       /* constraint_text: a regular expression the whole output matches */
  VALET_CONSTRAINT_TOOL_CALL = 5    /* constraint_text: tools and how the model writes a call (JSON) */
} valet_constraint_kind;

typedef enum valet_task_state {
  VALET_TASK_QUEUED = 0,
  VALET_TASK_PREFILLING = 1,
  VALET_TASK_PARKED = 2,
  VALET_TASK_DECODING = 3,
  VALET_TASK_DONE = 4,
  VALET_TASK_CANCELLED = 5,
  VALET_TASK_FAILED = 6
} valet_task_state;

/* androidx.lifecycle.Lifecycle.Event. The scheduler accepts every order
 * androidx can send: ON_CREATE -> ON_START -> ON_RESUME -> ON_PAUSE ->
 * ON_STOP -> ON_DESTROY, moving back up from any stop (ON_START after ON_STOP,
 * ON_RESUME after ON_PAUSE, ON_CREATE after ON_DESTROY for a recreated
 * Activity). ProcessLifecycleOwner sends ON_CREATE once, never ON_DESTROY,
 * and ON_PAUSE/ON_STOP only after a delay. valet_params.initial_state is a
 * guess until the first event, so the first event may be ON_CREATE from any
 * state (an observer added late is brought up to date from ON_CREATE). A
 * repeated or out-of-order event is VALET_INVALID_ARGUMENT and changes
 * nothing. */
typedef enum valet_lifecycle_event {
  VALET_ON_CREATE = 0,
  VALET_ON_START = 1,
  VALET_ON_RESUME = 2,
  VALET_ON_PAUSE = 3,
  VALET_ON_STOP = 4,
  VALET_ON_DESTROY = 5,
  /* Not an event: makes every int a valid value of the type, so a bad value
   * from a caller is refused (VALET_INVALID_ARGUMENT), never undefined. */
  VALET_LIFECYCLE_EVENT_INT_RANGE_ = 0x7fffffff
} valet_lifecycle_event;

typedef enum valet_lifecycle_state {
  VALET_STATE_DESTROYED = 0,
  VALET_STATE_CREATED = 1,
  VALET_STATE_STARTED = 2,
  VALET_STATE_RESUMED = 3
} valet_lifecycle_state;

/* android.os.PowerManager.THERMAL_STATUS_*. */
typedef enum valet_thermal_status {
  VALET_THERMAL_NONE = 0,
  VALET_THERMAL_LIGHT = 1,
  VALET_THERMAL_MODERATE = 2,
  VALET_THERMAL_SEVERE = 3,
  VALET_THERMAL_CRITICAL = 4,
  VALET_THERMAL_EMERGENCY = 5,
  VALET_THERMAL_SHUTDOWN = 6
} valet_thermal_status;

typedef enum valet_batch_mode { VALET_BATCH_STRICT = 0, VALET_BATCH_FILL = 1 } valet_batch_mode;

typedef struct valet_params {
  size_t struct_size;              /* sizeof(valet_params) as the caller was built */
  const char* model_path;          /* GGUF file; required unless model_fd >= 0 (then only its name in messages) */
  int32_t n_threads;               /* 0: all cores */
  int32_t n_ctx;                   /* 0: the model's training context */
  int32_t max_batch_tokens;        /* tokens per engine step */
  size_t kv_capacity_bytes;        /* KV pool budget */
  size_t snapshot_ram_bytes;       /* RAM tier of the snapshot store */
  const char* snapshot_dir;        /* disk tier directory, and durable tasks' in
                                    * <snapshot_dir>/tasks; NULL: none. Both are
                                    * created 0700 if missing; valet_create fails
                                    * (VALET_INVALID_ARGUMENT) for either when it is
                                    * a symbolic link, not a directory, another
                                    * user's, or writable by others (docs/durable.md) */
  const char* budget_table_path;   /* governor budgets as a JSON file; NULL: defaults */
  valet_lifecycle_state initial_state;
  valet_batch_mode batch_mode;
  double fill_max_cost_fraction;   /* FILL: riders' measured extra cost, at most this
                                    * fraction of a solo decode step (default 0.05) */
  const char* budget_table_json;   /* the same as a JSON string (not with budget_table_path); NULL: none */
  /* v3. The model as model_size bytes (0: to the end of the file) at
   * model_offset of an open file: Android's ParcelFileDescriptor.getFd(), or
   * an uncompressed APK asset's AssetFileDescriptor (the APK's fd,
   * getStartOffset(), getLength()). -1: read model_path. The caller keeps the
   * descriptor; valet_create is done with it when it returns (a mapping holds
   * its own reference). At an offset that is a multiple of 4 the range is
   * mapped like a file; elsewhere the tensors would be misaligned, so it is
   * read into memory instead (the model's size in RAM, not page cache). */
  int32_t model_fd;
  uint64_t model_offset;
  uint64_t model_size;
  /* v4. The most bytes durable tasks' journals and KV checkpoints may take in
   * <snapshot_dir>/tasks; beyond it new durable tasks are refused
   * (VALET_RESOURCE_EXHAUSTED) until finished ones are acknowledged
   * (valet_task_ack). 0: 1 GiB. */
  uint64_t durable_disk_budget_bytes;
  /* v6. Packed weights as a file (docs/engine.md, "Packed weights as a
   * file"): loads map it read-only instead of repacking every quantized
   * matrix into anonymous memory, which is slower to start and what
   * Android's low-memory killer weighs. A directory (existing, or ending in
   * '/'; created 0700; the file in it is named for the model) or a file,
   * made by valet_create when missing, stale or damaged, and checked like
   * snapshot_dir. NULL: <snapshot_dir>/weights/ with a snapshot_dir, else
   * none; "": none. */
  const char* weights_cache;
  /* v6. The most the weights cache directory may hold: older caches of other
   * models are removed to make room, and a cache that still does not fit is
   * not written (the weights are packed in memory). 0: 8 GiB. */
  uint64_t weights_cache_budget_bytes;
} valet_params;

typedef struct valet_chat_message {
  const char* role; /* "system", "user", "assistant" or (v9) "tool" */
  const char* content;
} valet_chat_message;

/* v9. A function the model may call, shown to it by its chat template. */
typedef struct valet_tool {
  const char* name;        /* 1-64 of [A-Za-z0-9_-] */
  const char* description; /* NULL: none */
  const char* parameters;  /* a JSON Schema object's text; NULL: {"type": "object"} */
} valet_tool;

/* v9. A call of a tool: as the model wrote it (valet_task_result) or as
 * the app replays an earlier turn (valet_message_tools). */
typedef struct valet_tool_call {
  const char* id;        /* names the call; the "tool" message answering it gives it back */
  const char* name;
  const char* arguments; /* a JSON object's text */
} valet_tool_call;

/* v9. What a chat message holds beyond its role and content. */
typedef struct valet_message_tools {
  const valet_tool_call* tool_calls; /* an "assistant" message: the calls it made */
  size_t n_tool_calls;
  const char* tool_call_id;          /* a "tool" message: the call whose result it is; NULL: none */
} valet_message_tools;

/* v9. How the model may use the tools a task offers (OpenAI's tool_choice). */
typedef enum valet_tool_choice {
  VALET_TOOL_CHOICE_AUTO = 0,     /* text or calls, as the model chooses; a call follows its schema */
  VALET_TOOL_CHOICE_NONE = 1,     /* the tools are shown, never called */
  VALET_TOOL_CHOICE_REQUIRED = 2, /* calls, generated under the tools' parameter schemas */
  VALET_TOOL_CHOICE_NAMED = 3     /* a call of tool_choice_name, likewise */
} valet_tool_choice;

typedef enum valet_park_kind {
  VALET_PARK_RESIDENT = 0,
  VALET_PARK_SNAPSHOT_RAM = 1,
  VALET_PARK_SNAPSHOT_DISK = 2,
  VALET_PARK_PARTIAL = 3,
  VALET_PARK_FULL = 4
} valet_park_kind;
#define VALET_NUM_PARK_KINDS 5

typedef struct valet_task_metrics {
  double ttft_seconds;       /* submit to first token; -1: no token */
  double tpot_seconds;       /* per output token after the first; -1: fewer than two */
  double e2e_seconds;        /* submit to finish */
  int32_t prompt_tokens;     /* including the shared prefix */
  int32_t cached_prompt_tokens;
  int32_t generated_tokens;
  int32_t parks;
  int32_t parks_by_kind[VALET_NUM_PARK_KINDS]; /* indexed by valet_park_kind */
  int32_t tokens_recomputed;
  uint64_t park_bytes;
} valet_task_metrics;

/* What on_done receives; valid only during the call. */
typedef struct valet_task_result {
  size_t struct_size;       /* the library's sizeof; read only fields within it */
  valet_task_state state;   /* DONE, CANCELLED or FAILED */
  valet_status status;      /* FAILED: why; CANCELLED: VALET_OK (the app) or VALET_ABORTED (stopped, destroyed) */
  const char* message;      /* the failure message, "scheduler stopped", "scheduler destroyed", or "" */
  const char* text;         /* the generated text, NUL-terminated (see text_len) */
  int32_t n_tokens;         /* generated tokens */
  valet_task_metrics metrics;
  const char* durable_key;  /* a durable task's key, else "" (within struct_size from v4) */
  size_t text_len;          /* v5: the bytes of text, which may hold NUL bytes (a generated <0x00>) */
  /* v9. A task that offered tools (tool_choice not NONE) and ended DONE: the
   * calls its answer made, each with a fresh id, when the answer reads as
   * calls of offered tools (in the syntax the model's family writes calls
   * in); content is then the text before them, trimmed. Otherwise no calls
   * and content is text. */
  const valet_tool_call* tool_calls;
  size_t n_tool_calls;
  const char* content;      /* NUL-terminated, content_len bytes */
  size_t content_len;
} valet_task_result;

/* `text` is NUL-terminated and valid only during the call; a NUL byte the
 * model generated ends it early (valet_text_fn has the length). */
typedef void (*valet_token_fn)(void* user_data, valet_task_id id, int32_t token, const char* text);
/* v5: the same with text's length: text_len bytes (NUL bytes included),
 * then a NUL. The text never ends inside a UTF-8 character: a character
 * split across tokens comes whole with its last token. */
typedef void (*valet_text_fn)(void* user_data, valet_task_id id, int32_t token, const char* text, size_t text_len);
typedef void (*valet_state_fn)(void* user_data, valet_task_id id, valet_task_state state);
/* Exactly once per accepted task: when it finishes, fails, is cancelled, or
 * is still unfinished when valet_stop or valet_destroy runs (then on that
 * thread, CANCELLED with VALET_ABORTED), so user_data may be freed here. */
typedef void (*valet_done_fn)(void* user_data, valet_task_id id, const valet_task_result* result);

typedef struct valet_task_params {
  size_t struct_size;                 /* sizeof(valet_task_params) as the caller was built */
  int32_t tier;                       /* a valet_tier value */
  const char* system_prompt;          /* shared prefix (KV shared between tasks); NULL: none */
  const valet_chat_message* messages; /* chat form, rendered by the model's template; or */
  size_t n_messages;
  const char* prompt;                 /* raw prompt, used when n_messages == 0 (see prompt_length) */
  int32_t max_tokens;                 /* 0: until the context is full (or the KV pool, if smaller) */
  float temperature;                  /* <= 0: greedy */
  int32_t top_k;
  float top_p;
  float min_p;
  float repeat_penalty;
  uint64_t seed;
  const char* const* stop;            /* stop strings */
  size_t n_stop;
  valet_token_fn on_token;
  valet_state_fn on_state;
  valet_done_fn on_done;
  void* user_data;
  /* v3. Bytes of `prompt`, which may then hold NUL bytes; 0: up to its NUL. */
  size_t prompt_length;
  /* v3. n_messages byte counts of the messages' contents, which may then hold
   * NUL bytes (a 0 entry: up to its NUL); NULL: every content up to its NUL. */
  const size_t* message_lengths;
  /* v4. Non-zero: a durable task (needs valet_params.snapshot_dir): journaled
   * in <snapshot_dir>/tasks as it runs, so that after the process dies
   * valet_recover resumes it token-identically; its journal stays after it
   * ends until valet_task_ack. A cancel forgets it; valet_stop/valet_destroy
   * keep it for the next valet_recover. */
  int32_t durable;
  /* v4. Names a durable task across restarts: 1-128 of [A-Za-z0-9_.-], not
   * starting with '.'; NULL: one is made up (valet_task_result.durable_key). */
  const char* durable_key;
  /* v5. Each generated token with its text and length; called just before
   * on_token when both are set. */
  valet_text_fn on_text;
  /* v8. A valet_constraint_kind: every token is masked to the constraint
   * before sampling, and generation ends where it may. One that does not
   * compile fails valet_submit (VALET_INVALID_ARGUMENT, or VALET_UNSUPPORTED
   * for a schema keyword valet does not compile), valet_last_error naming it. */
  int32_t constraint_kind;
  const char* constraint_text;
  /* v8. JSON kinds: 0 for compact JSON; else at most this many spaces, tabs
   * or newlines between two tokens (<= 16). */
  uint32_t constraint_max_whitespace;
  /* v9. With messages: the tools the template shows the model (at most 128)
   * and how it may call them; the answer's calls come back in
   * valet_task_result.tool_calls. A REQUIRED or NAMED choice excludes
   * constraint_kind (it is the constraint). */
  const valet_tool* tools;
  size_t n_tools;
  int32_t tool_choice;          /* a valet_tool_choice */
  const char* tool_choice_name; /* NAMED: one of tools */
  int32_t parallel_tool_calls;  /* non-zero: several calls in one answer (else one) */
  /* v9. NULL, or n_messages entries: an assistant message's calls and a
   * tool message's tool_call_id. */
  const valet_message_tools* message_tools;
} valet_task_params;

/* A durable task found by valet_recover; valid only during the call. */
typedef struct valet_recovered_task {
  size_t struct_size;       /* the library's sizeof */
  const char* durable_key;
  int32_t tier;
  const int32_t* tokens;    /* generated before the process ended */
  int32_t n_tokens;
  valet_task_id id;         /* resumed under this id; 0: it had ended before */
  valet_task_state state;   /* QUEUED: resumed; DONE or FAILED: ended, waiting for valet_task_ack */
  const char* message;      /* why a FAILED one failed, else "" */
} valet_recovered_task;

/* For a resumed task (`callbacks` non-NULL) sets the callbacks it runs with:
 * on_token, on_text, on_state, on_done and user_data of *callbacks (the
 * other fields are ignored); for an ended one `callbacks` is NULL. Called on
 * valet_recover's thread before it returns, never on the scheduler's: a
 * resumed task may already run, but none of its callbacks comes before fn
 * has set them. */
typedef void (*valet_recover_fn)(void* user_data, const valet_recovered_task* task, valet_task_params* callbacks);

typedef struct valet_tier_stats {
  int64_t active;    /* accepted, not finished */
  int64_t parked;    /* of which parked now */
  int64_t done, cancelled, failed;
  int64_t generated_tokens;
  int64_t prefill_tokens; /* prompt tokens fed (recompute excluded) */
  double busy_seconds;    /* engine time charged to the tier */
} valet_tier_stats;

/* As of the end of the last engine step. */
typedef struct valet_memory_stats {
  uint64_t pool_used_bytes;
  uint64_t pool_capacity_bytes;
  uint64_t snapshot_ram_bytes;
  uint64_t snapshot_disk_bytes;
} valet_memory_stats;

/* v6. Where the weights the forward pass reads live, and how this start
 * came by its packed ones (valet_params.weights_cache). */
typedef struct valet_weights_stats {
  uint64_t file_backed_bytes; /* the model's mapping and the weights cache's: pages the system may drop */
  uint64_t anonymous_bytes;   /* row groups packed in memory (no weights cache) */
  int32_t matrices_mapped;    /* from the weights cache */
  int32_t matrices_packed;    /* repacked by this start (which then wrote the cache, when one was asked for) */
} valet_weights_stats;

typedef struct valet_stats {
  size_t struct_size; /* set by the caller (valet_default_stats()); fields beyond it are not written */
  int64_t submitted, done, cancelled, failed, rejected;
  int64_t steps, prefill_tokens, decode_tokens, tokens_recomputed;
  int64_t parks_by_kind[VALET_NUM_PARK_KINDS];
  int64_t preemptions;
  valet_lifecycle_state lifecycle;
  valet_thermal_status thermal; /* effective: a headroom forecast >= 1.0 counts as SEVERE */
  valet_tier_stats tiers[VALET_NUM_TIERS];
  valet_memory_stats memory;
  valet_weights_stats weights; /* v6 */
  uint64_t scratch_bytes;      /* v7: the forward pass's activations and matmul buffers */
} valet_stats;

/* v5. Why a PARKED task waits. */
typedef enum valet_park_cause {
  VALET_PARK_CAUSE_NONE = 0,        /* not parked */
  VALET_PARK_CAUSE_HIGHER_TIER = 1, /* a higher tier runs */
  VALET_PARK_CAUSE_TURN = 2,        /* a task of its tier takes its turn */
  VALET_PARK_CAUSE_BUDGET = 3,      /* its tier's lifecycle or thermal budget is spent */
  VALET_PARK_CAUSE_MEMORY = 4,      /* memory pressure, a trim, the app's destruction */
  VALET_PARK_CAUSE_CONSUMER = 5,    /* its callbacks fell behind */
  VALET_PARK_CAUSE_JOURNAL_IO = 6,  /* its journal cannot be written: valet_retry_journals */
  VALET_PARK_CAUSE_POWER = 7        /* v7: its tier waits for the battery (the budget table's power column) */
} valet_park_cause;

typedef struct valet_task_info {
  size_t struct_size;
  valet_task_state state;
  valet_park_cause park_cause;
} valet_task_info;

typedef struct valet_memory_budgets {
  size_t struct_size;
  uint64_t pool_bytes;         /* KV pool capacity */
  uint64_t snapshot_ram_bytes; /* RAM tier of the snapshot store */
} valet_memory_budgets;

valet_params valet_default_params(void);
valet_task_params valet_default_task_params(void);
valet_stats valet_default_stats(void);
valet_memory_budgets valet_default_memory_budgets(void);
valet_task_info valet_default_task_info(void);

valet_status valet_create(const valet_params* params, valet_scheduler** out);
/* Stops the scheduler for good. The engine's abort flag is raised, so a
 * running step of any tier stops at its next layer boundary; then every
 * unfinished task (queued, parked or running) ends CANCELLED (VALET_ABORTED,
 * "scheduler stopped"), every on_done has run when valet_stop returns, and
 * valet_wait_idle returns. From a task callback of this scheduler it returns
 * once the tasks are cancelled: their callbacks (the calling task's own
 * included) follow after the callback returns. Later submits are refused
 * (VALET_INVALID_ARGUMENT); the other calls still answer (stats, tokenize)
 * or find nothing to do. Idempotent: a call made while another stops waits
 * for it. Safe concurrently with every call but valet_destroy. */
valet_status valet_stop(valet_scheduler* scheduler);
/* valet_stop (the tasks it cancels get "scheduler destroyed"), then frees
 * the scheduler once every callback has returned; during the on_done
 * callbacks the scheduler is still valid. From a task callback of this
 * scheduler it stops the engine at once and leaves the freeing to a thread
 * of valet's, which waits for the callbacks still running (the calling one
 * included). Not concurrently with any other call on the scheduler, and the
 * handle is not to be used once it returns. NULL is a no-op. */
void valet_destroy(valet_scheduler* scheduler);

/* Renders and tokenizes the prompt on the calling thread, so every invalid
 * request is refused here: VALET_INVALID_ARGUMENT, or VALET_OUT_OF_RANGE for
 * a prompt plus max_tokens over the context. Only a task too large for the KV
 * pool even alone is accepted and then ends FAILED (VALET_RESOURCE_EXHAUSTED,
 * through on_done). A durable task's journal is on the device when this
 * returns VALET_OK; VALET_RESOURCE_EXHAUSTED here means the durable directory
 * is at valet_params.durable_disk_budget_bytes. */
valet_status valet_submit(valet_scheduler* scheduler, const valet_task_params* params, valet_task_id* out_id);
/* VALET_NOT_FOUND for an unknown id, VALET_INVALID_ARGUMENT for a finished
 * task. VALET_OK exactly when the task ends CANCELLED: a cancel racing the
 * task's own end is settled under one lock, whichever comes first. */
valet_status valet_cancel(valet_scheduler* scheduler, valet_task_id id);
/* Durable tasks (docs/durable.md): resumes every unfinished task journaled in
 * <snapshot_dir>/tasks where its journal ends and reports every one found to
 * `fn`. Journals of another model or valet version, or written under
 * another n_ctx (or any other setting that decides tokens), are left alone
 * and not reported (not an error): such a task resumes only under the
 * settings it began with. Waits for the scheduler's thread (at most one
 * step). VALET_INVALID_ARGUMENT without a snapshot_dir. */
valet_status valet_recover(valet_scheduler* scheduler, valet_recover_fn fn, void* user_data);
/* Forgets an ended durable task: removes its journal. VALET_NOT_FOUND when
 * there is none, VALET_INVALID_ARGUMENT while it runs. */
valet_status valet_task_ack(valet_scheduler* scheduler, const char* durable_key);
/* v5. Writes again what durable tasks' journals could not take (a full or
 * failing disk: such a task is PARKED with VALET_PARK_CAUSE_JOURNAL_IO and
 * never reports an end its journal does not hold). Each task whose journal
 * now takes it goes on. Also tried on every lifecycle event and whenever
 * another durable write succeeds; never on a timer. Applied before the next
 * step; VALET_ABORTED after valet_stop. */
valet_status valet_retry_journals(valet_scheduler* scheduler);
/* ---- Loading off the caller's thread (v6) ----
 * valet_create blocks its caller for the whole load (seconds for a 3B model
 * without a weights cache: an ANR on Android's main thread). The async form
 * loads on a thread of valet's own, reports progress and can be cancelled. */
typedef enum valet_load_stage {
  VALET_LOAD_MAP = 0,         /* mapping and checking the model file */
  VALET_LOAD_PACK = 1,        /* repacking the weights: done of total bytes */
  VALET_LOAD_WRITE_CACHE = 2, /* publishing the weights cache */
  VALET_LOAD_PREPARE = 3      /* tokenizer, context, KV pool, snapshot store, scheduler */
} valet_load_stage;
/* Each stage's start (0 of 0) and packing's progress, on the loading thread:
 * keep it short, the load waits for it. */
typedef void (*valet_load_progress_fn)(void* user_data, valet_load_stage stage, uint64_t done, uint64_t total);
/* The load's end, called once on the loading thread: VALET_OK and the
 * scheduler (the callee owns it: valet_destroy), or NULL with the status and
 * message valet_create would have returned (VALET_ABORTED once cancelled). */
typedef void (*valet_load_done_fn)(void* user_data, valet_status status, const char* message,
                                   valet_scheduler* scheduler);
typedef struct valet_load valet_load;
/* Starts loading what `params` name (copied: the caller's strings may go, and
 * a model_fd is duplicated) and returns at once with the load's handle in
 * *out. A params struct that cannot be read (its struct_size) or a model_fd
 * that is not open is refused here and nothing starts; whatever else
 * valet_create would refuse (a missing model, a bad directory) reaches
 * `done`. `progress` may be NULL; `done` is required. */
valet_status valet_create_async(const valet_params* params, valet_load_progress_fn progress, valet_load_done_fn done,
                                void* user_data, valet_load** out);
/* Asks the load to stop at its next check (between stages and packed
 * matrices): `done` then reports VALET_ABORTED, or the scheduler when the
 * load had finished first. Never blocks. */
valet_status valet_load_cancel(valet_load* load);
/* Waits until `done` has returned, then frees the handle; from inside `done`
 * it does not wait. NULL is ignored. */
void valet_load_free(valet_load* load);
/* v6. Removes the weights caches at `path` (valet_params.weights_cache): the
 * file, or every cache in the directory. Nothing there is VALET_OK. */
valet_status valet_weights_cache_remove(const char* path);
/* VALET_INVALID_ARGUMENT when out of order (the state is then unchanged). */
valet_status valet_send_lifecycle_event(valet_scheduler* scheduler, valet_lifecycle_event event);
/* PowerManager's thermal status (0..6, else VALET_INVALID_ARGUMENT) and
 * getThermalHeadroom() (negative or NaN: unknown). Applies the budget
 * table's thermal column: background tiers get fewer threads, then park
 * (never cancelled) until it cools; see "thermal" in scheduler.h. */
valet_status valet_on_thermal_status(valet_scheduler* scheduler, int32_t status, float headroom);
/* v7. The battery, as Android reports it: ACTION_BATTERY_CHANGED's sticky
 * intent (EXTRA_PLUGGED != 0, EXTRA_LEVEL / EXTRA_SCALE),
 * ACTION_POWER_SAVE_MODE_CHANGED (PowerManager.isPowerSaveMode()) and
 * ACTION_BATTERY_LOW / _OKAY. The defaults constrain nothing. */
typedef struct valet_power_state {
  size_t struct_size;      /* valet_default_power_state() sets it */
  int32_t charging;        /* non-zero: plugged in (AC, USB, wireless) */
  int32_t battery_percent; /* 0..100; -1: unknown */
  int32_t power_save;      /* non-zero: battery saver is on */
  int32_t battery_low;     /* non-zero: between ACTION_BATTERY_LOW and ACTION_BATTERY_OKAY */
} valet_power_state;
valet_power_state valet_default_power_state(void);
/* v7. Each tier runs only while the budget table's "power" column allows it
 * (by default: chat and suggestions always; BACKGROUND_SUMMARY not in
 * battery saver; OFFLINE_INDEXING neither in battery saver nor on a low
 * battery unless charging) and parks otherwise (VALET_PARK_CAUSE_POWER),
 * never cancelled. Send the state right after valet_create and before
 * valet_recover, so recovered durable tasks wait for the battery too.
 * VALET_INVALID_ARGUMENT for a battery_percent outside -1..100. */
valet_status valet_on_power_state(valet_scheduler* scheduler, const valet_power_state* power);
/* Android's ComponentCallbacks2.onTrimMemory level: RUNNING_MODERATE 5,
 * RUNNING_LOW 10, RUNNING_CRITICAL 15, UI_HIDDEN 20, BACKGROUND 40,
 * MODERATE 60, COMPLETE 80 (a value between two levels counts as the lower).
 * Demotes RAM snapshots to disk, evicts parked KV down to the shared prefix
 * and shrinks the pool as the level rises (docs/memory.md); never cancels.
 * VALET_INVALID_ARGUMENT below 5. */
valet_status valet_on_trim_memory(valet_scheduler* scheduler, int32_t level);
/* New KV pool and snapshot-RAM budgets (they also end a trim's reductions).
 * Waits for the inference thread (at most one step); after valet_stop,
 * VALET_ABORTED. */
valet_status valet_set_memory_budgets(valet_scheduler* scheduler, const valet_memory_budgets* budgets);
/* out->struct_size must be set (valet_default_memory_budgets()). */
valet_status valet_get_memory_budgets(const valet_scheduler* scheduler, valet_memory_budgets* out);
/* Blocks until every task submitted so far has finished (or valet_stop has
 * cancelled it). From a task callback of this scheduler, which it would wait
 * for: VALET_INVALID_ARGUMENT. */
valet_status valet_wait_idle(valet_scheduler* scheduler);
/* The token ids valet_submit feeds for `text` as a raw prompt without a
 * system prompt: BOS where the vocabulary asks for it (not twice when the
 * text starts with the BOS text), special-token texts ("<|im_start|>")
 * parsed. `valet tokenize` prints the same ids, but for a second BOS before
 * a text that starts with one and an EOS where the vocabulary asks for it
 * (as llama.cpp's tokenizer does). `text` is text_len bytes (NUL
 * bytes included; text_len at most VALET_MAX_TEXT_BYTES). *n_tokens is set to
 * the number of ids; when it exceeds n_tokens_max nothing is written and the
 * call returns VALET_OUT_OF_RANGE, so tokens = NULL, n_tokens_max = 0 asks
 * for the count. Any thread, callbacks included, also after valet_stop. */
valet_status valet_tokenize(const valet_scheduler* scheduler, const char* text, size_t text_len, int32_t* tokens,
                            int32_t n_tokens_max, int32_t* n_tokens);
/* out->struct_size must be set (valet_default_stats()). */
valet_status valet_get_stats(const valet_scheduler* scheduler, valet_stats* out);
/* v5. A task's state and, when PARKED, why. out->struct_size must be set
 * (valet_default_task_info()). VALET_NOT_FOUND for an unknown id, or a
 * finished one whose record is no longer kept. */
valet_status valet_get_task_info(const valet_scheduler* scheduler, valet_task_id id, valet_task_info* out);
/* Chrome trace-event JSON of the run so far; free with valet_free_string. */
valet_status valet_chrome_trace(const valet_scheduler* scheduler, char** out_json);
void valet_free_string(char* s);

const char* valet_status_name(valet_status status);
/* The message of the last failed call on this thread ("" if none). */
const char* valet_last_error(void);

/* ---- The log (v5) ----
 * What valet reports but cannot return from a call (a snapshot kept in RAM
 * because the disk failed, a corrupt snapshot) goes to one process-wide
 * sink, like llama_log_set's. Without one (the default), each message is
 * written at once on the thread that logs it, to logcat (tag "valet") when
 * liblog.so loads, else to stderr. C++: valet/log.h. */

/* android.util.Log's priorities, so a level reaches logcat as it is. */
typedef enum valet_log_level {
  VALET_LOG_INFO = 4,
  VALET_LOG_WARN = 5,
  VALET_LOG_ERROR = 6,
  /* Not a level: makes every int a valid value of the type (below INFO
   * counts as INFO, above ERROR as ERROR). */
  VALET_LOG_LEVEL_INT_RANGE_ = 0x7fffffff
} valet_log_level;

/* `text` is text_len bytes of UTF-8 followed by a NUL, valid only during
 * the call. */
typedef void (*valet_log_fn)(void* user_data, valet_log_level level, const char* text, size_t text_len);

/* Sets the sink (fn NULL: back to the default). fn runs on valet's logger
 * thread ("valet-log", started on first use), never on the thread that
 * logged, which may be the inference thread: nothing fn does can stall
 * valet. It gets one message at a time, in order. Messages wait for it in a
 * queue of 256; beyond that they are dropped, and the next message fn gets
 * is "valet: N log messages dropped" (VALET_LOG_WARN) where they were.
 * Queued messages are lost when the process exits.
 *
 * Any thread, any time. Once valet_log_set returns, the previous fn is
 * never called again with its user_data (which may then be freed): a call
 * in progress on the logger thread is waited for, unless valet_log_set is
 * called from within fn, when that call is the last. So fn must not wait
 * for a thread that is in valet_log_set. Messages still queued go to
 * whichever sink is set when their turn comes; messages logged from within
 * fn go to the default log, never back to fn. */
void valet_log_set(valet_log_fn fn, void* user_data);

/* The default log: writes one message at once, on the calling thread, to
 * logcat or stderr. A valet_log_fn, so a sink can pass messages on to it;
 * user_data is unused. */
void valet_log_default(void* user_data, valet_log_level level, const char* text, size_t text_len);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* VALET_VALET_H_ */
