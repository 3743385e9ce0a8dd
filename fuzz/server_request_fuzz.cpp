// libFuzzer target for the HTTP server: any input is the bytes a client
// sends on one connection. They go through the transport's request parser;
// every request it completes (up to four, pipelined) goes through the whole
// server handler (routing, JSON parsing, submission, the task's callbacks,
// durable tasks' journals) over the deterministic fake engine. Oracles: each request gets exactly one
// reply, in a legal order of operations (a whole reply, or a stream head,
// pieces and an end), every JSON body and every stream event is valid JSON,
// and nothing crashes or hangs.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/private_files.h"
#include "server/api_router.h"
#include "server/http/request_parser.h"
#include "server/work_queue.h"
#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

namespace {

using valet::http::ExchangeOp;

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

// Server-sent events: "data: <json>\n\n" each, the last one "data: [DONE]".
void CheckEvents(std::string_view text) {
  while (!text.empty()) {
    const size_t end = text.find("\n\n");
    Check(text.substr(0, 6) == "data: " && end != std::string_view::npos);
    const std::string_view data = text.substr(6, end - 6);
    Check(data == "[DONE]" || nlohmann::json::accept(data));
    text.remove_prefix(end + 2);
  }
}

// Takes one exchange's operations and checks their order as they come.
class CheckingSink final : public valet::http::ExchangeSink {
 public:
  void Post(uint64_t, ExchangeOp op) override {
    std::lock_guard<std::mutex> lock(mu_);
    Check(state_ != State::kDone);
    switch (op.kind) {
      case ExchangeOp::Kind::kReply:
        Check(state_ == State::kNone);
        Check(op.response.content_type != "application/json" || nlohmann::json::accept(op.response.body));
        state_ = State::kDone;
        break;
      case ExchangeOp::Kind::kBeginStream:
        Check(state_ == State::kNone);
        state_ = State::kStreaming;
        break;
      case ExchangeOp::Kind::kWrite:
        Check(state_ == State::kStreaming);
        CheckEvents(op.data);
        break;
      case ExchangeOp::Kind::kEndStream:
        Check(state_ == State::kStreaming);
        state_ = State::kDone;
        break;
    }
    cv_.notify_all();
  }

  void WaitDone() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return state_ == State::kDone; });
  }

 private:
  enum class State { kNone, kStreaming, kDone };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kNone;
};

struct Harness {
  Harness() : engine(EngineOptions()) {
    // Durable tasks too: their journals go to a scratch directory, within a
    // small budget (a full one is a 507 the fuzzer reaches as well).
    static const std::string scratch = valet::MakeScratchDirectory("valet-fuzz-durable-").value();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch, ec);
    });
    const std::string dir = scratch + "/tasks";
    valet::SchedulerOptions so;
    so.clock = engine.ClockFunction();
    so.durable_dir = dir;
    so.model_fingerprint = "fuzz";
    so.durable_disk_budget_bytes = 4u << 20;
    scheduler = std::move(valet::Scheduler::Create(engine, so)).value();
    valet::ServerOptions o;
    o.model_name = "fuzz";
    o.defaults.vocab_size = 512;
    o.durable.dir = dir;
    o.durable.model_fingerprint = so.model_fingerprint;
    std::unique_ptr<const valet::DurableStore> durable =
        std::move(valet::DurableStore::Open(engine, o.durable)).value();
    ctx = std::make_shared<valet::ServerContext>(*scheduler, engine, o, std::move(durable));
    router = std::make_unique<valet::ApiRouter>(ctx, control, requests);
  }
  static valet::testing::FakeEngineOptions EngineOptions() {
    valet::testing::FakeEngineOptions o;
    o.context_length = 256;  // short tasks: a request without max_tokens fills it
    return o;
  }

  valet::testing::FakeEngine engine;
  std::unique_ptr<valet::Scheduler> scheduler;
  std::shared_ptr<valet::ServerContext> ctx;
  valet::WorkQueue control{1};
  valet::WorkQueue requests{2};
  std::unique_ptr<valet::ApiRouter> router;
};

Harness& TheHarness() {
  static Harness* h = new Harness;  // never destroyed: its threads run until the process exits
  return *h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness& h = TheHarness();
  valet::http::ParserLimits limits;
  limits.max_body_bytes = 64 * 1024;
  valet::http::RequestParser parser(limits);
  std::string input(reinterpret_cast<const char*>(data), size);
  for (int handled = 0; handled < 4;) {
    const valet::http::RequestParser::Progress p = parser.Feed(input);
    if (p == valet::http::RequestParser::Progress::kHead) continue;
    if (p != valet::http::RequestParser::Progress::kComplete) break;
    auto sink = std::make_shared<CheckingSink>();
    auto exchange = std::make_shared<valet::http::HttpExchange>(sink, 1, std::move(parser.request()));
    h.router->OnRequest(exchange);
    sink->WaitDone();
    // A lifecycle event could leave background tiers without a budget, and
    // the next request waiting forever: every request starts from RESUMED.
    for (valet::LifecycleEvent e : {valet::LifecycleEvent::kOnCreate, valet::LifecycleEvent::kOnStart,
                                    valet::LifecycleEvent::kOnResume}) {
      (void)h.scheduler->OnLifecycleEvent(e).ok();
    }
    parser.Reset();
    ++handled;
  }
  // Late operations on a finished exchange would trap in the sink.
  h.scheduler->WaitIdle();
  return 0;
}
