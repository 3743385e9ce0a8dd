// valet_fake_serve: the HTTP server over the deterministic fake engine, for
// client tests in other languages (tests/server/node). Prints
// "listening on 127.0.0.1:PORT" and serves until stdin closes.
#include <cstdio>
#include <memory>

#include "server/api_server.h"
#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

int main() {
  valet::testing::FakeEngine engine;
  valet::SchedulerOptions so;
  so.clock = engine.ClockFunction();
  valet::Result<std::unique_ptr<valet::Scheduler>> scheduler = valet::Scheduler::Create(engine, so);
  if (!scheduler.ok()) return 1;
  valet::ServerOptions options;
  options.port = 0;
  options.model_name = "fake";
  valet::Result<std::unique_ptr<valet::ApiServer>> server = valet::ApiServer::Create(**scheduler, engine, options);
  if (!server.ok() || !(*server)->Start().ok()) return 1;
  std::printf("listening on 127.0.0.1:%d\n", (*server)->port());
  std::fflush(stdout);
  // The parent test ends the server by closing our stdin (also when it dies).
  while (std::getchar() != EOF) {
  }
  (*server)->Stop();
  return 0;
}
