// Lifecycle events as Android sends them. Every event sequence of up to six
// events, from every starting state, is checked against a model of
// androidx's Lifecycle (targets and up/down moves, not the scheduler's edge
// table); then ProcessLifecycleOwner's own dispatch (activity counters, the
// delayed pause/stop, a resume inside the delay) is driven through every
// short sequence of activity callbacks, and everything it sends is accepted.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "sched/governor.h"
#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

namespace valet {
using namespace valet::testing;
namespace {

constexpr LifecycleEvent kEvents[] = {LifecycleEvent::kOnCreate, LifecycleEvent::kOnStart, LifecycleEvent::kOnResume,
                                      LifecycleEvent::kOnPause,  LifecycleEvent::kOnStop,  LifecycleEvent::kOnDestroy};

// androidx: Event.getTargetState(), and upFrom/downFrom: an up event moves one
// state up to its target, a down event one state down to it.
std::optional<LifecycleState> AndroidxNext(LifecycleState s, LifecycleEvent e, bool first_event) {
  int target = 0;
  bool up = true;
  switch (e) {
    case LifecycleEvent::kOnCreate: target = 1; break;
    case LifecycleEvent::kOnStart: target = 2; break;
    case LifecycleEvent::kOnResume: target = 3; break;
    case LifecycleEvent::kOnPause: target = 2, up = false; break;
    case LifecycleEvent::kOnStop: target = 1, up = false; break;
    case LifecycleEvent::kOnDestroy: target = 0, up = false; break;
  }
  // An observer added late is brought up from the start: the scheduler's
  // initial state was a guess.
  if (first_event && e == LifecycleEvent::kOnCreate) return LifecycleState::kCreated;
  const int from = static_cast<int>(s);
  if (from != (up ? target - 1 : target + 1)) return std::nullopt;
  return static_cast<LifecycleState>(target);
}

struct Counts {
  int64_t sequences = 0;
  int64_t accepted = 0;
  int64_t refused = 0;
};

void Walk(const Governor& g, bool first_event, int depth, Counts& counts) {
  ++counts.sequences;
  if (depth == 0) return;
  for (LifecycleEvent e : kEvents) {
    Governor next = g;
    const std::optional<LifecycleState> want = AndroidxNext(g.state(), e, first_event);
    const Status s = next.OnLifecycleEvent(e);
    ASSERT_EQ(s.ok(), want.has_value()) << LifecycleEventName(e) << " from " << LifecycleStateName(g.state());
    if (!s.ok()) {
      ++counts.refused;
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(LifecycleEventName(e)), std::string::npos) << s.message();
      ASSERT_EQ(next.state(), g.state());  // unchanged, and the sequence goes on from there
      Walk(next, first_event, depth - 1, counts);
      continue;
    }
    ++counts.accepted;
    ASSERT_EQ(next.state(), *want);
    Walk(next, false, depth - 1, counts);
  }
}

TEST(LifecycleSequences, EverySequenceUpToSixEventsFollowsAndroidx) {
  Counts counts;
  for (int s = 0; s < kNumLifecycleStates; ++s) {
    Walk(Governor(BudgetTable::Defaults(), static_cast<LifecycleState>(s)), true, 6, counts);
  }
  // Every sequence was walked, and both outcomes were exercised many times.
  EXPECT_EQ(counts.sequences, 4 * (1 + 6 + 36 + 216 + 1296 + 7776 + 46656));
  EXPECT_GT(counts.accepted, 1000);
  EXPECT_GT(counts.refused, 1000);
}

TEST(LifecycleSequences, UnknownEventValuesAreRefused) {
  Governor g(BudgetTable::Defaults(), LifecycleState::kResumed);
  for (int raw : {-1, 6, 99}) {
    EXPECT_EQ(g.OnLifecycleEvent(static_cast<LifecycleEvent>(raw)).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(g.state(), LifecycleState::kResumed);
  }
}

// androidx.lifecycle.ProcessLifecycleOwner's dispatch, from its source's
// rules: ON_CREATE once at start; ON_START with the first started activity;
// ON_RESUME with the first resumed one unless a pause is still pending (then
// the pending pause is just removed); ON_PAUSE and ON_STOP only when the
// delay after the last pause elapses; ON_STOP right away when the last
// activity stops after the pause was sent. Never ON_DESTROY.
class ProcessOwnerModel {
 public:
  explicit ProcessOwnerModel(std::function<void(LifecycleEvent)> send) : send_(std::move(send)) {
    send_(LifecycleEvent::kOnCreate);
  }
  void ActivityStarted() {
    if (++started_ == 1 && stop_sent_) {
      stop_sent_ = false;
      send_(LifecycleEvent::kOnStart);
    }
  }
  void ActivityResumed() {
    if (++resumed_ != 1) return;
    if (pause_sent_) {
      pause_sent_ = false;
      send_(LifecycleEvent::kOnResume);
    } else {
      delay_pending_ = false;  // a resume inside the delay sends nothing
    }
  }
  void ActivityPaused() {
    if (--resumed_ == 0) delay_pending_ = true;
  }
  void ActivityStopped() {
    --started_;
    StopIfNeeded();
  }
  void DelayElapsed() {
    if (!delay_pending_) return;
    delay_pending_ = false;
    if (resumed_ == 0) {
      pause_sent_ = true;
      send_(LifecycleEvent::kOnPause);
    }
    StopIfNeeded();
  }

 private:
  void StopIfNeeded() {
    if (started_ == 0 && pause_sent_ && !stop_sent_) {
      stop_sent_ = true;
      send_(LifecycleEvent::kOnStop);
    }
  }
  std::function<void(LifecycleEvent)> send_;
  int started_ = 0;
  int resumed_ = 0;
  bool pause_sent_ = true;
  bool stop_sent_ = true;
  bool delay_pending_ = false;
};

enum class ActivityState { kCreated, kStarted, kResumed };
enum class Action { kStart, kResume, kPause, kStop, kDelay };

struct World {
  std::vector<ActivityState> activities;
  std::vector<std::pair<int, Action>> done;  // the actions so far
};

bool Legal(const World& w, int a, Action act) {
  if (act == Action::kDelay) return a == 0;
  const ActivityState s = w.activities[static_cast<size_t>(a)];
  switch (act) {
    case Action::kStart: return s == ActivityState::kCreated;
    case Action::kResume: return s == ActivityState::kStarted;
    case Action::kPause: return s == ActivityState::kResumed;
    case Action::kStop: return s == ActivityState::kStarted;
    case Action::kDelay: return true;
  }
  return false;
}

void Apply(World& w, int a, Action act) {
  ActivityState& s = w.activities[static_cast<size_t>(a)];
  if (act == Action::kStart || act == Action::kPause) s = ActivityState::kStarted;
  if (act == Action::kResume) s = ActivityState::kResumed;
  if (act == Action::kStop) s = ActivityState::kCreated;
  w.done.emplace_back(a, act);
}

// Replays the actions through the model into a governor that starts from
// `guess`; returns how many events were sent. Every one must be accepted.
int Replay(const World& w, LifecycleState guess) {
  Governor g(BudgetTable::Defaults(), guess);
  int sent = 0;
  ProcessOwnerModel owner([&](LifecycleEvent e) {
    const Status s = g.OnLifecycleEvent(e);
    EXPECT_TRUE(s.ok()) << s.ToString();
    ++sent;
  });
  for (const auto& [a, act] : w.done) {
    switch (act) {
      case Action::kStart: owner.ActivityStarted(); break;
      case Action::kResume: owner.ActivityResumed(); break;
      case Action::kPause: owner.ActivityPaused(); break;
      case Action::kStop: owner.ActivityStopped(); break;
      case Action::kDelay: owner.DelayElapsed(); break;
    }
  }
  return sent;
}

void Explore(World& w, int depth, int64_t& sequences, int& most_events) {
  for (int guess = 0; guess < kNumLifecycleStates; ++guess) {
    most_events = std::max(most_events, Replay(w, static_cast<LifecycleState>(guess)));
  }
  ++sequences;
  if (depth == 0 || ::testing::Test::HasFailure()) return;
  for (int a = 0; a < static_cast<int>(w.activities.size()); ++a) {
    for (Action act : {Action::kStart, Action::kResume, Action::kPause, Action::kStop, Action::kDelay}) {
      if (!Legal(w, a, act)) continue;
      World next = w;
      Apply(next, a, act);
      Explore(next, depth - 1, sequences, most_events);
    }
  }
}

TEST(ProcessLifecycleOwner, EveryShortRunOfTwoActivitiesIsAccepted) {
  World w;
  w.activities = {ActivityState::kCreated, ActivityState::kCreated};
  int64_t sequences = 0;
  int most_events = 0;
  Explore(w, 8, sequences, most_events);
  EXPECT_GT(sequences, 10000);
  EXPECT_GE(most_events, 5);  // create, start, resume, pause, stop (and back) were all sent
}

TEST(ProcessLifecycleOwner, ResumeInsideTheDelaySendsNothing) {
  std::vector<LifecycleEvent> sent;
  ProcessOwnerModel owner([&](LifecycleEvent e) { sent.push_back(e); });
  owner.ActivityStarted();
  owner.ActivityResumed();
  owner.ActivityPaused();  // a rotation: pause, stop, then the new activity
  owner.ActivityStopped();
  owner.ActivityStarted();
  owner.ActivityResumed();
  owner.DelayElapsed();
  EXPECT_EQ(sent, (std::vector<LifecycleEvent>{LifecycleEvent::kOnCreate, LifecycleEvent::kOnStart,
                                               LifecycleEvent::kOnResume}));
}

// The threaded Scheduler checks events on the caller's thread with the same
// rule: a random walk of events, each compared with the androidx model.
TEST(LifecycleSequences, ThreadedSchedulerAgreesOnARandomWalk) {
  FakeEngine engine;
  SchedulerOptions o;
  o.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> s = std::move(Scheduler::Create(engine, o)).value();
  std::mt19937 rng(11);
  LifecycleState state = o.initial_state;
  bool first = true;
  for (int i = 0; i < 3000; ++i) {
    const LifecycleEvent e = kEvents[rng() % 6];
    const std::optional<LifecycleState> want = AndroidxNext(state, e, first);
    ASSERT_EQ(s->OnLifecycleEvent(e).ok(), want.has_value());
    if (want) state = *want, first = false;
    ASSERT_EQ(s->lifecycle_state(), state);
  }
  s->WaitIdle();
}

}  // namespace
}  // namespace valet
