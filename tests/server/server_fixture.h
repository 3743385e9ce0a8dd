// A running ApiServer over the deterministic fake engine on an ephemeral
// loopback port, with a gate that can hold the engine's steps, and small
// helpers to talk to it with httplib's client.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_server.h"
#include "support/step_gate.h"
#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

namespace valet::testing {

struct SseEvents {
  std::vector<nlohmann::json> chunks;  // parsed data: payloads before [DONE]
  bool done = false;                   // ended with data: [DONE]
  bool well_formed = true;             // every event was "data: <json>\n\n"
};

// Splits a text/event-stream body into its data payloads. Comments (":...",
// the server's probe of a half-closed client) are skipped, as SSE readers do.
inline SseEvents ParseSse(const std::string& body) {
  SseEvents out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end != std::string::npos && body[pos] == ':' && body.find('\n', pos) == end) {
      pos = end + 2;
      continue;
    }
    if (end == std::string::npos || body.compare(pos, 6, "data: ") != 0 || out.done) {
      out.well_formed = false;
      return out;
    }
    const std::string data = body.substr(pos + 6, end - pos - 6);
    if (data == "[DONE]") {
      out.done = true;
    } else {
      nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
      if (j.is_discarded()) out.well_formed = false;
      out.chunks.push_back(std::move(j));
    }
    pos = end + 2;
  }
  return out;
}

inline nlohmann::json ParseJson(const std::string& body) { return nlohmann::json::parse(body, nullptr, false); }

class ServerFixture : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}, FakeEngineOptions engine_options = {}) {
    engine_ = MakeEngine(engine_options);
    engine_->set_step_hook([this](std::span<const StepItem>) { return gate_.Pass(); });
    SchedulerOptions so;
    so.clock = engine_->ClockFunction();
    so.parse_special_in_messages = special_in_messages_;
    if (!durable_dir_.empty()) {
      so.durable_dir = durable_dir_ + "/tasks";
      so.model_fingerprint = "fake-engine";
      options.durable.dir = so.durable_dir;
      options.durable.model_fingerprint = so.model_fingerprint;
      options.durable.parse_special_in_messages = so.parse_special_in_messages;
      options.log = [this](const std::string& line) {
        std::lock_guard<std::mutex> lock(log_mu_);
        log_.push_back(line);
      };
    }
    Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(*engine_, so);
    ASSERT_TRUE(scheduler.ok()) << scheduler.status().message();
    scheduler_ = std::move(scheduler).value();
    options.host = "127.0.0.1";
    options.port = 0;
    Result<std::unique_ptr<ApiServer>> server = ApiServer::Create(*scheduler_, *engine_, std::move(options));
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server).value();
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_GT(server_->port(), 0);
  }

  virtual std::unique_ptr<FakeEngine> MakeEngine(const FakeEngineOptions& o) {
    return std::make_unique<FakeEngine>(o);
  }

  void TearDown() override {
    gate_.Open();
    server_.reset();
    scheduler_.reset();
    engine_.reset();
  }

  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    return c;
  }

  httplib::Result Post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    return Client().Post(path.c_str(), headers, body, "application/json");
  }
  httplib::Result Post(const std::string& path, const nlohmann::json& body, const httplib::Headers& headers = {}) const {
    return Post(path, body.dump(), headers);
  }
  httplib::Result Get(const std::string& path, const httplib::Headers& headers = {}) const {
    return Client().Get(path.c_str(), headers);
  }

  // GET /v1/tasks's data array.
  nlohmann::json Tasks() const {
    httplib::Result r = Get("/v1/tasks");
    return r ? ParseJson(r->body)["data"] : nlohmann::json::array();
  }

  // Polls /v1/tasks until `pred` holds for it (the test fails by ctest's
  // timeout otherwise); used to wait for HTTP threads to have submitted.
  template <typename Pred>
  nlohmann::json WaitTasks(Pred pred) const {
    while (true) {
      nlohmann::json t = Tasks();
      if (pred(t)) return t;
      std::this_thread::yield();
    }
  }

  // The server's log lines (with durable_dir_ set).
  std::vector<std::string> LogLines() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }

  // Non-empty before StartServer: durable tasks on, journals in <it>/tasks.
  std::string durable_dir_;
  // The scheduler's and server's parse_special_in_messages (serve's --special-in-messages).
  bool special_in_messages_ = false;
  std::mutex log_mu_;
  std::vector<std::string> log_;
  StepGate gate_;
  std::unique_ptr<FakeEngine> engine_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ApiServer> server_;
};

}  // namespace valet::testing
