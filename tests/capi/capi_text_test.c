/* Text through the C API on stories260K: valet_tokenize's buffer protocol,
 * prompts and chat contents with NUL bytes (prompt_length,
 * message_lengths), and input refused before it is read (text and list
 * bounds); and on synth-tiny (random weights: byte tokens galore) generated
 * text with its length, a generated NUL byte kept and a character split
 * across tokens delivered whole; a JSON Schema constraint's output, and its
 * refusal at submission; tools offered, a required call parsed back, and an
 * earlier turn's calls and results replayed. Exits 77 (skipped) when ../shared/models is
 * absent. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test_util.h"

typedef struct {
  int done_calls;
  valet_task_state state;
  int32_t prompt_tokens;
} prompt_log;

static void log_done(void* user, valet_task_id id, const valet_task_result* r) {
  prompt_log* log = (prompt_log*)user;
  (void)id;
  log->done_calls++;
  log->state = r->state;
  log->prompt_tokens = r->metrics.prompt_tokens;
}

/* The prompt tokens valet_submit reports for `t` (run to its end). */
static int32_t submitted_prompt_tokens(valet_scheduler* s, valet_task_params t) {
  prompt_log log = {0, VALET_TASK_QUEUED, -1};
  valet_task_id id = 0;
  t.max_tokens = 1;
  t.on_done = log_done;
  t.user_data = &log;
  if (valet_submit(s, &t, &id) != VALET_OK || valet_wait_idle(s) != VALET_OK) return -1;
  return log.done_calls == 1 && log.state == VALET_TASK_DONE ? log.prompt_tokens : -1;
}

static int32_t count_tokens(valet_scheduler* s, const char* text, size_t len) {
  int32_t n = -1;
  return valet_tokenize(s, text, len, NULL, 0, &n) == VALET_OUT_OF_RANGE ? n : -1;
}

static int test_tokenize_buffer_protocol(valet_scheduler* s) {
  const char* text = "Once upon a time";
  int32_t n = -1;
  CHECK(valet_tokenize(s, text, strlen(text), NULL, 0, &n) == VALET_OUT_OF_RANGE);
  CHECK(n > 1 && n < 16);
  CHECK(strstr(valet_last_error(), "tokens") != NULL);
  int32_t ids[16];
  for (int i = 0; i < 16; ++i) ids[i] = -7;
  int32_t m = -1;
  CHECK(valet_tokenize(s, text, strlen(text), ids, n - 1, &m) == VALET_OUT_OF_RANGE);
  CHECK(m == n && ids[0] == -7); /* too small: the count needed, nothing written */
  CHECK(valet_tokenize(s, text, strlen(text), ids, n, &m) == VALET_OK);
  CHECK(m == n && ids[n - 1] >= 0 && ids[n] == -7);
  CHECK(ids[0] == 1); /* stories260K's vocabulary asks for BOS */
  /* What a raw prompt feeds: the task reports as many prompt tokens. */
  valet_task_params t = valet_default_task_params();
  t.prompt = text;
  CHECK(submitted_prompt_tokens(s, t) == n);
  /* An empty text is BOS alone; bad arguments are refused. */
  CHECK(valet_tokenize(s, NULL, 0, ids, 16, &m) == VALET_OK && m == 1);
  CHECK(valet_tokenize(s, NULL, 3, ids, 16, &m) == VALET_INVALID_ARGUMENT);
  CHECK(valet_tokenize(s, text, 4, NULL, 2, &m) == VALET_INVALID_ARGUMENT);
  CHECK(valet_tokenize(s, text, 4, ids, -1, &m) == VALET_INVALID_ARGUMENT);
  CHECK(valet_tokenize(s, text, 4, ids, 16, NULL) == VALET_INVALID_ARGUMENT);
  CHECK(valet_tokenize(NULL, text, 4, ids, 16, &m) == VALET_INVALID_ARGUMENT);
  /* Absurd lengths are refused before the text is read (it is 17 bytes). */
  CHECK(valet_tokenize(s, text, VALET_MAX_TEXT_BYTES + 1, ids, 16, &m) == VALET_INVALID_ARGUMENT);
  CHECK(strstr(valet_last_error(), "VALET_MAX_TEXT_BYTES") != NULL);
  return 0;
}

static int test_prompts_with_nul_bytes(valet_scheduler* s) {
  static const char prompt[] = "Once\0upon a time";
  const size_t len = sizeof prompt - 1;
  const int32_t whole = count_tokens(s, prompt, len);
  const int32_t to_nul = count_tokens(s, prompt, 4);
  CHECK(whole > to_nul && to_nul > 1);
  valet_task_params t = valet_default_task_params();
  t.prompt = prompt;
  t.prompt_length = len;
  CHECK(submitted_prompt_tokens(s, t) == whole);
  t.prompt_length = 0; /* up to the NUL */
  CHECK(submitted_prompt_tokens(s, t) == to_nul);
  /* A caller built before prompt_length existed: it is not read. */
  t.prompt_length = len;
  t.struct_size = offsetof(valet_task_params, prompt_length);
  CHECK(submitted_prompt_tokens(s, t) == to_nul);

  static const char content[] = "Hi\0there, tell me a story";
  valet_chat_message messages[2] = {{"system", "Be brief."}, {"user", content}};
  const size_t lengths[2] = {0, sizeof content - 1};
  valet_task_params chat = valet_default_task_params();
  chat.messages = messages;
  chat.n_messages = 2;
  const int32_t chat_to_nul = submitted_prompt_tokens(s, chat);
  chat.message_lengths = lengths;
  const int32_t chat_whole = submitted_prompt_tokens(s, chat);
  CHECK(chat_to_nul > 0 && chat_whole > chat_to_nul);
  return 0;
}

static int test_bounds(valet_scheduler* s) {
  valet_task_id id = 0;
  valet_task_params t = valet_default_task_params();
  t.prompt = "x"; /* two bytes: a length past them must never be read */
  t.prompt_length = VALET_MAX_TEXT_BYTES + 1;
  CHECK(valet_submit(s, &t, &id) == VALET_INVALID_ARGUMENT);
  CHECK(strstr(valet_last_error(), "prompt is longer than VALET_MAX_TEXT_BYTES") != NULL);
  t.prompt = NULL;
  t.prompt_length = 3;
  CHECK(valet_submit(s, &t, &id) == VALET_INVALID_ARGUMENT);
  valet_chat_message one = {"user", "hello"};
  valet_task_params chat = valet_default_task_params();
  chat.messages = &one;
  chat.n_messages = VALET_MAX_LIST_ITEMS + 1;
  CHECK(valet_submit(s, &chat, &id) == VALET_INVALID_ARGUMENT);
  CHECK(strstr(valet_last_error(), "VALET_MAX_LIST_ITEMS") != NULL);
  const size_t too_long = VALET_MAX_TEXT_BYTES + 1;
  chat.n_messages = 1;
  chat.message_lengths = &too_long;
  CHECK(valet_submit(s, &chat, &id) == VALET_INVALID_ARGUMENT);
  const char* stop = "the end";
  t = valet_default_task_params();
  t.prompt = "Once";
  t.stop = &stop;
  t.n_stop = VALET_MAX_LIST_ITEMS + 1;
  CHECK(valet_submit(s, &t, &id) == VALET_INVALID_ARGUMENT);
  return 0;
}

/* The generated text as on_text delivered it, chunk by chunk. */
typedef struct {
  char text[8192];
  size_t len;
  size_t ends[1024]; /* where each chunk ended in text */
  int texts;         /* on_text calls */
  int tokens;        /* on_token calls (each right after its on_text) */
  int order_ok;
  int split_char;    /* a chunk held a character begun by an earlier token */
  int nul_token;     /* the <0x00> byte token was generated */
  int done;
  valet_task_state state;
  char result[8192];
  size_t result_len;
} text_log;

/* synth-tiny's vocabulary is stories260K's: byte fallback <0xNN> is token 3 + NN. */
static int byte_of_token(int32_t token) { return token >= 3 && token < 259 ? token - 3 : -1; }

/* The length of the valid UTF-8 character of 2-4 bytes at s[0..n), else 0. */
static size_t multibyte_char_at(const unsigned char* s, size_t n) {
  const unsigned char c = s[0];
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  if (c >= 0xE0 && c <= 0xEF) need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  if (c >= 0xF0 && c <= 0xF4) need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  if (need == 0 || n < need || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < need; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
  }
  return need;
}

/* True when no valid multi-byte character of the text straddles two chunks. */
static int chunks_keep_characters_whole(const text_log* log) {
  int chunk = 0;
  for (size_t i = 0; i < log->len;) {
    const size_t n = multibyte_char_at((const unsigned char*)log->text + i, log->len - i);
    if (n == 0) {
      ++i;
      continue;
    }
    while (chunk < log->texts && log->ends[chunk] <= i) ++chunk;
    if (chunk < log->texts && log->ends[chunk] < i + n) return 0;
    i += n;
  }
  return 1;
}

static void text_chunk(void* user, valet_task_id id, int32_t token, const char* text, size_t len) {
  text_log* log = (text_log*)user;
  (void)id;
  if (log->len + len > sizeof log->text || log->texts >= 1024) abort();
  if (text[len] != '\0') abort(); /* NUL-terminated after its length too */
  memcpy(log->text + log->len, text, len);
  log->len += len;
  log->ends[log->texts++] = log->len;
  const int b = byte_of_token(token);
  if (b == 0) log->nul_token = 1;
  /* A continuation byte's token delivering a whole character: its lead came with an earlier token. */
  if (b >= 0x80 && b <= 0xBF && len >= 2 && multibyte_char_at((const unsigned char*)text, len) >= 2) {
    log->split_char = 1;
  }
}

static void text_token(void* user, valet_task_id id, int32_t token, const char* text) {
  text_log* log = (text_log*)user;
  (void)id;
  (void)token;
  (void)text;
  log->tokens++;
  if (log->tokens == log->texts) log->order_ok++;
}

static void text_done(void* user, valet_task_id id, const valet_task_result* r) {
  text_log* log = (text_log*)user;
  (void)id;
  log->done++;
  log->state = r->state;
  if (r->text_len > sizeof log->result || r->text[r->text_len] != '\0') abort();
  memcpy(log->result, r->text, r->text_len);
  log->result_len = r->text_len;
}

/* Seeds are tried in order until one generates both a NUL byte and a
 * character split across tokens; the run is deterministic, so this always
 * stops at the same seed. */
static int test_generated_text_is_exact(void) {
  char model[1024];
  snprintf(model, sizeof model, "%s/models/synth-tiny-q8_0.gguf", VALET_SHARED_DIR);
  valet_params params = model_params();
  params.model_path = model;
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  int saw_nul = 0, saw_split = 0;
  for (uint64_t seed = 1; seed <= 64 && !(saw_nul && saw_split); ++seed) {
    static text_log log;
    memset(&log, 0, sizeof log);
    valet_task_params t = valet_default_task_params();
    t.prompt = "Once upon a time";
    t.max_tokens = 300;
    t.temperature = 3.0f;
    t.top_k = 0;
    t.top_p = 1.0f;
    t.min_p = 0.0f;
    t.seed = seed;
    t.on_text = text_chunk;
    t.on_token = text_token;
    t.on_done = text_done;
    t.user_data = &log;
    valet_task_id id = 0;
    CHECK(valet_submit(s, &t, &id) == VALET_OK);
    CHECK(valet_wait_idle(s) == VALET_OK);
    CHECK(log.done == 1 && log.state == VALET_TASK_DONE);
    CHECK(log.texts == log.tokens && log.order_ok == log.tokens);
    CHECK(log.len == log.result_len && memcmp(log.text, log.result, log.len) == 0);
    CHECK(chunks_keep_characters_whole(&log));
    if (log.nul_token) {
      saw_nul = 1;
      CHECK(memchr(log.result, '\0', log.result_len) != NULL); /* kept, not cut short */
    }
    saw_split |= log.split_char;
  }
  CHECK(saw_nul && saw_split);
  valet_destroy(s);
  return 0;
}

/* A JSON Schema constraint: the text parses as the schema says whatever the
 * seed; a schema keyword valet does not compile fails valet_submit, named. */
typedef struct {
  char text[4096];
  size_t len;
  valet_task_state state;
} output_log;

static void log_output(void* user, valet_task_id id, int32_t token, const char* text, size_t len) {
  output_log* log = (output_log*)user;
  (void)id, (void)token;
  if (log->len + len < sizeof log->text) {
    memcpy(log->text + log->len, text, len);
    log->len += len;
  }
}

static void log_output_done(void* user, valet_task_id id, const valet_task_result* r) {
  (void)id;
  ((output_log*)user)->state = r->state;
}

static int test_constrained_output(valet_scheduler* s) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    output_log log;
    memset(&log, 0, sizeof log);
    valet_task_params t = valet_default_task_params();
    t.prompt = "Once upon a time";
    t.max_tokens = 120;
    t.temperature = 1.0f;
    t.top_k = 0;
    t.top_p = 1.0f;
    t.min_p = 0.0f;
    t.seed = seed;
    t.constraint_kind = VALET_CONSTRAINT_JSON_SCHEMA;
    t.constraint_text = "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},"
                        "\"n\":{\"type\":\"integer\",\"minimum\":10,\"maximum\":99}},"
                        "\"required\":[\"ok\",\"n\"],\"additionalProperties\":false}";
    t.on_text = log_output;
    t.on_done = log_output_done;
    t.user_data = &log;
    valet_task_id id = 0;
    CHECK(valet_submit(s, &t, &id) == VALET_OK);
    CHECK(valet_wait_idle(s) == VALET_OK);
    CHECK(log.state == VALET_TASK_DONE);
    log.text[log.len] = 0;
    const int ok_true = strncmp(log.text, "{\"ok\":true,\"n\":", 15) == 0;
    const int ok_false = strncmp(log.text, "{\"ok\":false,\"n\":", 16) == 0;
    CHECK(ok_true || ok_false);
    const char* n = log.text + (ok_true ? 15 : 16);
    CHECK(n[0] >= '1' && n[0] <= '9' && n[1] >= '0' && n[1] <= '9' && n[2] == '}' && n[3] == 0);
  }
  valet_task_params bad = valet_default_task_params();
  bad.prompt = "x";
  bad.constraint_kind = VALET_CONSTRAINT_JSON_SCHEMA;
  bad.constraint_text = "{\"type\":\"integer\",\"multipleOf\":3}";
  valet_task_id id = 0;
  CHECK(valet_submit(s, &bad, &id) == VALET_UNSUPPORTED);
  CHECK(strstr(valet_last_error(), "multipleOf") != NULL);
  bad.constraint_kind = 9;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  return 0;
}

/* Tools: a required call comes back parsed (arguments under the tool's
 * schema), an earlier turn's call and its result reach the template, and
 * what cannot be honoured is refused at submission. */
typedef struct {
  int calls;
  char name[64];
  char arguments[256];
  char id[64];
  size_t content_len;
  valet_task_state state;
  int32_t prompt_tokens;
} call_log;

static void copy_text(char* out, size_t size, const char* text) {
  strncpy(out, text, size - 1);
  out[size - 1] = 0;
}

static void log_calls(void* user, valet_task_id id, const valet_task_result* r) {
  call_log* log = (call_log*)user;
  (void)id;
  log->state = r->state;
  log->calls = (int)r->n_tool_calls;
  log->content_len = r->content_len;
  log->prompt_tokens = r->metrics.prompt_tokens;
  if (r->n_tool_calls > 0) {
    copy_text(log->name, sizeof log->name, r->tool_calls[0].name);
    copy_text(log->arguments, sizeof log->arguments, r->tool_calls[0].arguments);
    copy_text(log->id, sizeof log->id, r->tool_calls[0].id);
  }
}

static const valet_tool kTools[] = {
    {"get_weather", "The weather in a city.",
     "{\"type\":\"object\",\"properties\":{\"city\":{\"enum\":[\"Oslo\",\"Paris\"]}},"
     "\"required\":[\"city\"],\"additionalProperties\":false}"},
    {"ping", NULL, "{\"type\":\"object\",\"additionalProperties\":false}"}};

static valet_task_params tool_task(const valet_chat_message* messages, size_t n, call_log* log) {
  valet_task_params t = valet_default_task_params();
  t.messages = messages;
  t.n_messages = n;
  t.tools = kTools;
  t.n_tools = 2;
  t.max_tokens = 200;
  t.temperature = 1.0f;
  t.top_k = 0;
  t.top_p = 1.0f;
  t.min_p = 0.0f;
  t.on_done = log_calls;
  t.user_data = log;
  return t;
}

static int test_tool_calls(valet_scheduler* s) {
  const valet_chat_message ask[] = {{"user", "Weather in Oslo?"}};
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    call_log log;
    memset(&log, 0, sizeof log);
    valet_task_params t = tool_task(ask, 1, &log);
    t.tool_choice = seed % 2 == 0 ? VALET_TOOL_CHOICE_REQUIRED : VALET_TOOL_CHOICE_NAMED;
    t.tool_choice_name = t.tool_choice == VALET_TOOL_CHOICE_NAMED ? "get_weather" : NULL;
    t.seed = seed;
    valet_task_id id = 0;
    CHECK(valet_submit(s, &t, &id) == VALET_OK);
    CHECK(valet_wait_idle(s) == VALET_OK);
    CHECK(log.state == VALET_TASK_DONE);
    CHECK(log.calls == 1);
    CHECK(strlen(log.id) == 9);
    CHECK(log.content_len == 0);
    if (strcmp(log.name, "get_weather") == 0) {
      CHECK(strcmp(log.arguments, "{\"city\":\"Oslo\"}") == 0 || strcmp(log.arguments, "{\"city\":\"Paris\"}") == 0);
    } else {
      CHECK(t.tool_choice == VALET_TOOL_CHOICE_REQUIRED && strcmp(log.name, "ping") == 0);
      CHECK(strcmp(log.arguments, "{}") == 0);
    }
  }

  /* The call and its result replayed: more prompt than the question alone. */
  call_log first, replayed;
  memset(&first, 0, sizeof first);
  memset(&replayed, 0, sizeof replayed);
  valet_task_params alone = tool_task(ask, 1, &first);
  alone.max_tokens = 1;
  valet_task_id id = 0;
  CHECK(valet_submit(s, &alone, &id) == VALET_OK);
  const valet_tool_call call = {"abc123XYZ", "get_weather", "{\"city\":\"Oslo\"}"};
  const valet_chat_message turns[] = {{"user", "Weather in Oslo?"}, {"assistant", ""}, {"tool", "-3 C"}};
  const valet_message_tools extra[] = {{NULL, 0, NULL}, {&call, 1, NULL}, {NULL, 0, "abc123XYZ"}};
  valet_task_params again = tool_task(turns, 3, &replayed);
  again.message_tools = extra;
  again.max_tokens = 1;
  CHECK(valet_submit(s, &again, &id) == VALET_OK);
  CHECK(valet_wait_idle(s) == VALET_OK);
  CHECK(first.state == VALET_TASK_DONE && replayed.state == VALET_TASK_DONE);
  CHECK(replayed.prompt_tokens > first.prompt_tokens + 10);

  /* Refused: a tool message's id on a user message, an unknown choice, a
   * named tool not offered, a required call beside a constraint. */
  call_log unused;
  const valet_message_tools misplaced[] = {{NULL, 0, "abc"}};
  valet_task_params bad = tool_task(ask, 1, &unused);
  bad.message_tools = misplaced;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  bad = tool_task(ask, 1, &unused);
  bad.tool_choice = 4;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  bad.tool_choice = VALET_TOOL_CHOICE_NAMED;
  bad.tool_choice_name = "rm";
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  CHECK(strstr(valet_last_error(), "rm") != NULL);
  bad.tool_choice = VALET_TOOL_CHOICE_REQUIRED;
  bad.constraint_kind = VALET_CONSTRAINT_JSON_OBJECT;
  CHECK(valet_submit(s, &bad, &id) == VALET_INVALID_ARGUMENT);
  return 0;
}

int main(void) {
  const int found = find_model();
  if (found != 0) return found;
  valet_params params = model_params();
  valet_scheduler* s = NULL;
  CHECK(valet_create(&params, &s) == VALET_OK);
  if (test_tokenize_buffer_protocol(s) != 0 || test_prompts_with_nul_bytes(s) != 0 || test_bounds(s) != 0 ||
      test_constrained_output(s) != 0 || test_tool_calls(s) != 0) {
    return 1;
  }
  valet_destroy(s);
  if (test_generated_text_is_exact() != 0) return 1;
  printf("capi_text_test: ok\n");
  return 0;
}
