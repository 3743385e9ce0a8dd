#include "testing/sched/durable_faults.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <memory>
#include <span>
#include <string>

namespace valet::testing {
namespace {

// The whole of `text` as a number of type T no smaller than `min`.
template <typename T>
bool ParseWhole(std::string_view text, T min, T& out) {
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), out);
  return err == std::errc() && end == text.data() + text.size() && !text.empty() && out >= min;
}

// True on the `n`-th call across every copy (n from the plan; 0: never).
// Atomic: journals and checkpoints may be written from more than one thread.
class Countdown {
 public:
  explicit Countdown(int64_t n) : left_(std::make_shared<std::atomic<int64_t>>(n)) {}
  bool Fires() const {
    int64_t left = left_->load();
    while (left > 0 && !left_->compare_exchange_weak(left, left - 1)) {
    }
    return left == 1;
  }

 private:
  std::shared_ptr<std::atomic<int64_t>> left_;
};

void WritePrefix(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // dying anyway: what reached the file is what the reader sees
    done += static_cast<size_t>(n);
  }
}

}  // namespace

Status AddFault(std::string_view spec, FaultPlan& plan) {
  constexpr std::string_view kAppend = "journal-append:";
  constexpr std::string_view kRename = "checkpoint-rename:";
  const std::string usage =
      "fault '" + std::string(spec) + "' is neither journal-append:<n>:<bytes> nor checkpoint-rename:<n>";
  if (spec.starts_with(kAppend)) {
    const std::string_view rest = spec.substr(kAppend.size());
    const size_t colon = rest.find(':');
    FaultPlan parsed;
    if (colon == std::string_view::npos || !ParseWhole<int64_t>(rest.substr(0, colon), 0, parsed.journal_append) ||
        !ParseWhole<uint32_t>(rest.substr(colon + 1), 0, parsed.after_bytes)) {
      return InvalidArgument(usage);
    }
    plan.journal_append = parsed.journal_append;
    plan.after_bytes = parsed.after_bytes;
    return Status::Ok();
  }
  if (spec.starts_with(kRename)) {
    int64_t write = 0;
    if (!ParseWhole<int64_t>(spec.substr(kRename.size()), 0, write)) return InvalidArgument(usage);
    plan.checkpoint_rename = write;
    return Status::Ok();
  }
  return InvalidArgument(usage);
}

DurableWriteHooks KillHooks(const FaultPlan& plan) {
  DurableWriteHooks hooks;
  if (plan.journal_append > 0) {
    hooks.before_journal_append = [countdown = Countdown(plan.journal_append), after = plan.after_bytes](
                                      int fd, std::span<const uint8_t> record) {
      if (!countdown.Fires()) return;
      WritePrefix(fd, record.first(std::min<size_t>(after, record.size())));
      std::raise(SIGKILL);
    };
  }
  if (plan.checkpoint_rename > 0) {
    hooks.before_checkpoint_rename = [countdown = Countdown(plan.checkpoint_rename)] {
      if (countdown.Fires()) std::raise(SIGKILL);
    };
  }
  return hooks;
}

}  // namespace valet::testing
