// valet serve: the OpenAI-compatible HTTP server over a model, until SIGINT
// or SIGTERM.
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "api_key_source.h"
#include "cli_args.h"
#include "commands.h"
#include "engine/real_engine.h"
#include "server/api_server.h"
#include "testing/sched/durable_faults.h"
#include "valet/scheduler.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--host", nullptr, true, "address to listen on (default 127.0.0.1: this machine only)"},
    {"--port", nullptr, true, "port (default 8080; 0: any free port, printed at start)"},
    {"--api-key-file", nullptr, true,
     "require \"Authorization: Bearer KEY\" on /v1/*, /metrics and /tokenize, KEY read from FILE (no permission "
     "for group or others; a trailing newline is dropped); or set VALET_API_KEY"},
    {"--api-key", nullptr, true, "the key itself: every local user can read it in ps (prefer --api-key-file)"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--ctx-size", "-c", true,
     "context size per sequence (default: the model's); durable tasks resume only under the one they began with"},
    {"--kv-budget-mb", nullptr, true, "KV pool size in MiB (default 256)"},
    {"--snapshot-dir", nullptr, true,
     "directory for parked sequences' disk snapshots and durable tasks' journals (<dir>/tasks), created 0700; "
     "refused if it or <dir>/tasks is a symlink, another user's or writable by others; "
     "default: no disk tier, no durable tasks"},
    {"--weights-cache", nullptr, true,
     "packed weights as a file, mapped by later starts instead of repacking: a directory (the file in it named "
     "for the model) or a file, made by this start when missing or stale (valet pack); default <snapshot-dir>/weights "
     "with --snapshot-dir, else none; 'none': none"},
    {"--budgets", nullptr, true, "per-lifecycle-state tier budgets, JSON (see include/valet/scheduler.h)"},
    {"--task-history", nullptr, true, "finished tasks /v1/tasks keeps, the oldest forgotten first (default 4096)"},
    {"--special-in-messages", nullptr, false,
     "parse special-token texts (\"<|im_start|>\") typed in chat messages as control tokens (default: text); "
     "durable tasks resume only under the setting they began with"},
    {"--fault", nullptr, true,
     "test seam for the kill soak (scripts/soak-durable-serve.py), not for use: SIGKILL this process in its Nth "
     "durable journal append after B bytes of the record (journal-append:N:B) or in its Nth KV checkpoint write "
     "before the rename (checkpoint-rename:N); may be given twice"},
};

struct Flags {
  RealEngineOptions engine;
  ServerOptions server;
  bool api_key_on_command_line = false;
  std::string budgets;
  bool special_in_messages = false;
  size_t task_history = 4096;
  testing::FaultPlan faults;
};

Result<Flags> ReadFlags(const Args& a) {
  Flags f;
  VALET_ASSIGN_OR_RETURN(f.engine.engine.model_path, a.String("--model", std::nullopt));
  VALET_ASSIGN_OR_RETURN(f.server.host, a.String("--host", "127.0.0.1"));
  VALET_ASSIGN_OR_RETURN(int64_t port, a.Int("--port", 8080, 0, 65535));
  f.server.port = static_cast<int>(port);
  ApiKeySources keys;
  if (a.Has("--api-key")) {
    VALET_ASSIGN_OR_RETURN(keys.flag, a.String("--api-key", std::nullopt));
  }
  if (a.Has("--api-key-file")) {
    VALET_ASSIGN_OR_RETURN(keys.file_path, a.String("--api-key-file", std::nullopt));
  }
  if (const char* env = std::getenv(kApiKeyEnv)) keys.env = env;
  VALET_ASSIGN_OR_RETURN(ApiKey key, ResolveApiKey(keys));
  f.server.api_key = std::move(key.key);
  f.api_key_on_command_line = key.from_command_line;
  VALET_ASSIGN_OR_RETURN(f.engine.engine.n_threads, a.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256));
  VALET_ASSIGN_OR_RETURN(f.engine.engine.n_ctx, a.Int("--ctx-size", 0, 0, 1 << 20));
  VALET_ASSIGN_OR_RETURN(int64_t kv_mb, a.Int("--kv-budget-mb", 256, 1, 1 << 20));
  f.engine.engine.kv_capacity_bytes = static_cast<size_t>(kv_mb) << 20;
  VALET_ASSIGN_OR_RETURN(f.engine.store.disk_dir, a.String("--snapshot-dir", ""));
  const std::string cache_default = f.engine.store.disk_dir.empty() ? "" : f.engine.store.disk_dir + "/weights/";
  VALET_ASSIGN_OR_RETURN(f.engine.engine.weights_cache.path, WeightsCachePath(a, cache_default));
  VALET_ASSIGN_OR_RETURN(f.budgets, a.String("--budgets", ""));
  f.special_in_messages = a.Has("--special-in-messages");
  VALET_ASSIGN_OR_RETURN(int64_t history, a.Int("--task-history", 4096, 1, int64_t{1} << 24));
  f.task_history = static_cast<size_t>(history);
  for (const std::string& spec : a.All("--fault")) {
    VALET_RETURN_IF_ERROR(testing::AddFault(spec, f.faults));
  }
  f.server.model_name = std::filesystem::path(f.engine.engine.model_path).stem().string();
  return f;
}

// Every connection is a descriptor; the usual soft limit (1024) would refuse
// connections below ServerOptions::max_connections. Raised up to the hard limit.
void RaiseOpenFileLimit(size_t connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(connections) + 256;  // the model, snapshots, logs
  if (limit.rlim_cur >= wanted) return;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  (void)setrlimit(RLIMIT_NOFILE, &limit);
}

bool IsLoopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

// SIGINT and SIGTERM stop the server. valet's threads start with them
// blocked, but a library's threads made before main (OpenBLAS's pool) have
// them open: a handler, not the default action, meets them wherever they
// land and tells the main thread through a pipe.
int g_stop_fds[2] = {-1, -1};

extern "C" void NoteStopSignal(int) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_stop_fds[1], &byte, 1);
}

bool CatchStopSignals() {
  if (pipe2(g_stop_fds, O_CLOEXEC) != 0) return false;
  struct sigaction action {};
  action.sa_handler = NoteStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  return sigaction(SIGINT, &action, nullptr) == 0 && sigaction(SIGTERM, &action, nullptr) == 0;
}

// Opens the main thread to the signals (a pending one is handled at once)
// and waits for one.
void WaitForStopSignal(const sigset_t& signals) {
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
  char byte = 0;
  while (read(g_stop_fds[0], &byte, 1) < 0 && errno == EINTR) {
  }
}

int Serve(const Flags& f, const sigset_t& signals) {
  Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(f.engine);
  if (!engine.ok()) return Fail("serve", engine.status());
  ReportWeightsCache("serve", (*engine)->engine().model().load_report());
  std::fprintf(stderr, "valet serve: model loaded in %s\n", LoadProfileText((*engine)->load_profile()).c_str());
  SchedulerOptions so;
  so.parse_special_in_messages = f.special_in_messages;
  so.finished_task_records = f.task_history;
  so.durable_write_hooks = testing::KillHooks(f.faults);
  if (!f.budgets.empty()) {
    Result<BudgetTable> budgets = LoadBudgetTable(f.budgets);
    if (!budgets.ok()) return Fail("serve", budgets.status());
    so.budgets = *budgets;
  }
  ServerOptions options = f.server;
  // Durable tasks journal next to the snapshots, as the C API has them.
  if (!f.engine.store.disk_dir.empty()) {
    so.durable_dir = f.engine.store.disk_dir + "/tasks";
    so.model_fingerprint = (*engine)->engine().fingerprint();
    options.durable.dir = so.durable_dir;
    options.durable.model_fingerprint = so.model_fingerprint;
    options.durable.parse_special_in_messages = so.parse_special_in_messages;
  }
  Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(**engine, so);
  if (!scheduler.ok()) return Fail("serve", scheduler.status());
  RaiseOpenFileLimit(options.max_connections);
  options.defaults.vocab_size = (*engine)->engine().model().config().n_vocab;
  Result<std::unique_ptr<ApiServer>> server = ApiServer::Create(**scheduler, **engine, std::move(options));
  if (!server.ok()) return Fail("serve", server.status());
  if (Status s = (*server)->Start(); !s.ok()) return Fail("serve", s);
  if (!IsLoopback(f.server.host) && f.server.api_key.empty()) {
    std::fprintf(stderr, "valet serve: warning: listening on %s without an API key (--api-key-file)\n",
                 f.server.host.c_str());
  }
  std::printf("valet serve: listening on http://%s:%d (model %s, context %d)\n", f.server.host.c_str(),
              (*server)->port(), f.server.model_name.c_str(), (*engine)->context_length());
  std::fflush(stdout);
  WaitForStopSignal(signals);
  std::printf("valet serve: stopping\n");
  std::fflush(stdout);
  (*server)->Stop();
  return 0;
}

}  // namespace

int RunServe(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("serve", "-m MODEL [--host H] [--port P] [--api-key-file FILE] [flags]", kFlags,
                                   argv, &args)) {
    return *code;
  }
  // Args holds copies: from here on ps shows x's where the key was.
  HideFlagValue(argv, "--api-key");
  Result<Flags> flags = ReadFlags(args);
  if (!flags.ok()) return Fail("serve", flags.status());
  if (flags->api_key_on_command_line) {
    std::fprintf(stderr,
                 "valet serve: warning: --api-key puts the key on the command line, where other local users can "
                 "read it (ps, /proc/PID/cmdline) until it is blanked at start, and shell history keeps it; use "
                 "--api-key-file FILE or %s instead\n",
                 kApiKeyEnv);
  }
  // Blocked before valet's threads start, so they inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (!CatchStopSignals()) return Fail("serve", IoError("cannot catch SIGINT and SIGTERM"));
  return Serve(*flags, signals);
}

}  // namespace valet::cli
