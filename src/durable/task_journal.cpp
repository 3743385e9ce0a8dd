#include "durable/task_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "kv/checksum.h"
#include "durable/task_checkpoint.h"

namespace valet {
namespace {

constexpr char kMagic[8] = {'V', 'A', 'L', 'E', 'T', 'J', 'N', 'L'};
constexpr size_t kHeaderFixedBytes = 16;  // magic, format version, identity length
constexpr uint32_t kMaxHeaderPayloadBytes = 64u << 10;
constexpr size_t kMaxTaskKeyBytes = 128;
constexpr size_t kMaxErrorBytes = 4096;
constexpr size_t kRecordPrefixBytes = 5;  // u32 length, u8 type
constexpr size_t kChecksumBytes = 8;

enum RecordType : uint8_t { kSubmit = 1, kTokens = 2, kDone = 3 };

std::string Errno() { return std::strerror(errno); }

// Little-endian fixed-width values, written byte by byte so the format never
// depends on the host's layout or padding.
class Encoder {
 public:
  void U8(uint8_t v) { out_.push_back(v); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void F32(float v) { U32(std::bit_cast<uint32_t>(v)); }
  void Bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // Strings are byte strings (UTF-8 with U+0000 included): length, then bytes.
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void I32s(std::span<const int32_t> v) {
    U32(static_cast<uint32_t>(v.size()));
    for (int32_t x : v) I32(x);
  }
  void Rng(const RngState& rng) {
    for (uint64_t w : rng.words) U64(w);
  }

  size_t size() const { return out_.size(); }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Reads what Encoder wrote; the first read past the end fails the decoder for
// good (every later read yields zeros), so callers check ok() once at the end.
// Every count is checked against the bytes left before anything is allocated.
class Decoder {
 public:
  explicit Decoder(std::span<const uint8_t> in) : in_(in) {}

  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && pos_ == in_.size(); }
  size_t left() const { return in_.size() - pos_; }

  uint8_t U8() { return Take(1) ? in_[pos_ - 1] : 0; }
  uint32_t U32() {
    if (!Take(4)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in_[pos_ - 4 + i]) << (8 * i);
    return v;
  }
  uint64_t U64() {
    if (!Take(8)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in_[pos_ - 8 + i]) << (8 * i);
    return v;
  }
  int32_t I32() { return static_cast<int32_t>(U32()); }
  float F32() { return std::bit_cast<float>(U32()); }
  std::string Str() {
    const uint32_t n = U32();
    if (!Take(n)) return {};
    return std::string(reinterpret_cast<const char*>(in_.data() + pos_ - n), n);
  }
  std::vector<int32_t> I32s() {
    const uint32_t n = Count(4);
    std::vector<int32_t> v;
    v.reserve(n);
    for (uint32_t i = 0; i < n; ++i) v.push_back(I32());
    return v;
  }
  // A count of items that each take at least `min_item_bytes`; 0 (and failed)
  // when the bytes left cannot hold that many.
  uint32_t Count(size_t min_item_bytes) {
    const uint32_t n = U32();
    if (n > left() / min_item_bytes) Fail();
    return ok_ ? n : 0;
  }
  RngState Rng() {
    RngState r;
    for (uint64_t& w : r.words) w = U64();
    return r;
  }

 private:
  bool Take(size_t n) {
    if (!ok_ || n > left()) {
      Fail();
      return false;
    }
    pos_ += n;
    return true;
  }
  void Fail() { ok_ = false; }

  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool AllZero(const RngState& rng) {
  return (rng.words[0] | rng.words[1] | rng.words[2] | rng.words[3]) == 0;
}

// Appends one whole record to `out`.
void EncodeRecord(uint8_t type, std::span<const uint8_t> payload, std::vector<uint8_t>& out) {
  Encoder e;
  e.U32(static_cast<uint32_t>(payload.size()));
  e.U8(type);
  e.Bytes(payload);
  e.U64(Checksum64(e.bytes()));
  out.insert(out.end(), e.bytes().begin(), e.bytes().end());
}

// The structured bindings are a tripwire: a field added to TaskRequest (or
// SamplingParams, ChatMessage) stops this from compiling until the journal
// stores it too (with kJournalFormatVersion bumped) or says here why not.
// A count, then per record its three strings (a ToolCall, a ToolDefinition);
// the binding stops the build if the record gains a field.
template <class Record>
void EncodeStringTriples(Encoder& e, const std::vector<Record>& records) {
  e.U32(static_cast<uint32_t>(records.size()));
  for (const auto& [a, b, c] : records) {
    e.Str(a);
    e.Str(b);
    e.Str(c);
  }
}

std::vector<uint8_t> EncodeSubmit(const TaskRequest& request) {
  [[maybe_unused]] const auto& [tier, system_prompt, messages, tools, tool_choice, prompt, prompt_tokens, max_tokens,
                                sampling, top_logprobs, stop, constraint, durable, durable_key, callbacks] = request;
  // Callbacks are code, not data: the app attaches them again on recovery.
  // durable is true and durable_key is the file's name: both are implied.
  const auto& [temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, presence_penalty,
               frequency_penalty, seed] = sampling;
  Encoder e;
  e.I32(static_cast<int32_t>(tier));
  e.Str(system_prompt);
  e.U32(static_cast<uint32_t>(messages.size()));
  for (const ChatMessage& m : messages) {
    const auto& [role, content, tool_calls, tool_call_id] = m;
    e.Str(role);
    e.Str(content);
    EncodeStringTriples(e, tool_calls);  // id, name, arguments
    e.Str(tool_call_id);
  }
  EncodeStringTriples(e, tools);  // name, description, parameters
  const auto& [choice_kind, choice_name, parallel] = tool_choice;
  e.I32(static_cast<int32_t>(choice_kind));
  e.Str(choice_name);
  e.U8(parallel ? 1 : 0);
  e.Str(prompt);
  e.I32s(prompt_tokens);
  e.I32(max_tokens);
  e.F32(temperature);
  e.I32(top_k);
  e.F32(top_p);
  e.F32(min_p);
  e.F32(repeat_penalty);
  e.I32(repeat_last_n);
  e.F32(presence_penalty);
  e.F32(frequency_penalty);
  e.U64(seed);
  e.I32(top_logprobs);
  e.U32(static_cast<uint32_t>(stop.size()));
  for (const std::string& s : stop) e.Str(s);
  const auto& [kind, text, max_whitespace] = constraint;
  e.I32(static_cast<int32_t>(kind));
  e.Str(text);
  e.U32(max_whitespace);
  return std::move(e.bytes());
}

template <class Record>
std::vector<Record> DecodeStringTriples(Decoder& d) {
  const uint32_t n = d.Count(12);
  std::vector<Record> records;
  records.reserve(n);
  for (uint32_t i = 0; i < n && d.ok(); ++i) {
    Record r;
    auto& [a, b, c] = r;
    a = d.Str();
    b = d.Str();
    c = d.Str();
    records.push_back(std::move(r));
  }
  return records;
}

bool DecodeSubmit(std::span<const uint8_t> payload, TaskRequest& r) {
  Decoder d(payload);
  Result<Tier> tier = TierFromInt(d.I32());
  if (!tier.ok()) return false;
  r.tier = *tier;
  r.system_prompt = d.Str();
  const uint32_t n_messages = d.Count(8);
  r.messages.reserve(n_messages);
  for (uint32_t i = 0; i < n_messages && d.ok(); ++i) {
    ChatMessage m;
    m.role = d.Str();
    m.content = d.Str();
    m.tool_calls = DecodeStringTriples<ToolCall>(d);
    m.tool_call_id = d.Str();
    r.messages.push_back(std::move(m));
  }
  r.tools = DecodeStringTriples<ToolDefinition>(d);
  const int32_t choice_kind = d.I32();
  if (choice_kind < 0 || choice_kind > static_cast<int32_t>(ToolChoice::Kind::kNamed)) return false;
  r.tool_choice.kind = static_cast<ToolChoice::Kind>(choice_kind);
  r.tool_choice.name = d.Str();
  const uint8_t parallel = d.U8();
  if (parallel > 1) return false;
  r.tool_choice.parallel = parallel == 1;
  r.prompt = d.Str();
  r.prompt_tokens = d.I32s();
  r.max_tokens = d.I32();
  SamplingParams& s = r.sampling;
  s.temperature = d.F32();
  s.top_k = d.I32();
  s.top_p = d.F32();
  s.min_p = d.F32();
  s.repeat_penalty = d.F32();
  s.repeat_last_n = d.I32();
  s.presence_penalty = d.F32();
  s.frequency_penalty = d.F32();
  s.seed = d.U64();
  r.top_logprobs = d.I32();
  const uint32_t n_stop = d.Count(4);
  r.stop.reserve(n_stop);
  for (uint32_t i = 0; i < n_stop && d.ok(); ++i) r.stop.push_back(d.Str());
  const int32_t kind = d.I32();
  if (kind < 0 || kind > static_cast<int32_t>(ConstraintKind::kToolCall)) return false;
  r.constraint.kind = static_cast<ConstraintKind>(kind);
  r.constraint.text = d.Str();
  r.constraint.max_whitespace = d.U32();
  return d.at_end();
}

Status WriteAll(int fd, std::span<const uint8_t> bytes, const JournalWriteFn& write = {}) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write ? write(fd, bytes.data() + done, bytes.size() - done)
                            : ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError(n < 0 ? Errno() : "no progress");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Up to `n` bytes at `offset`; fewer only at the end of the file.
Result<size_t> ReadAt(int fd, uint64_t offset, uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return IoError(Errno());
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads and checks the header; returns where the records start.
Result<uint64_t> ReadHeader(int fd, uint64_t file_size, const std::string& path,
                            const JournalIdentity& expected, std::string& task_key) {
  uint8_t fixed[kHeaderFixedBytes];
  VALET_ASSIGN_OR_RETURN(size_t got, ReadAt(fd, 0, fixed, sizeof(fixed)));
  if (got < sizeof(fixed) || std::memcmp(fixed, kMagic, sizeof(kMagic)) != 0) {
    return Corrupt(path + " is not a valet task journal");
  }
  Decoder d(std::span<const uint8_t>(fixed).subspan(sizeof(kMagic)));
  const uint32_t version = d.U32();
  const uint32_t n = d.U32();
  if (version == 1) {
    return Unsupported(path + " has journal format version 1, from before journals named the settings that decide a "
                       "task's tokens (parse_special_in_messages, context_length, ...): whether it would resume "
                       "token-identically here cannot be known, so it is left as it is");
  }
  if (version != kJournalFormatVersion) {
    return Unsupported(path + " has journal format version " + std::to_string(version) +
                       "; this valet reads version " + std::to_string(kJournalFormatVersion));
  }
  if (n > kMaxHeaderPayloadBytes || kHeaderFixedBytes + n + kChecksumBytes > file_size) {
    return Corrupt(path + " has a damaged or truncated journal header");
  }
  std::vector<uint8_t> header(kHeaderFixedBytes + n + kChecksumBytes);
  VALET_ASSIGN_OR_RETURN(got, ReadAt(fd, 0, header.data(), header.size()));
  if (got < header.size()) return Corrupt(path + " has a truncated journal header");
  const size_t body = kHeaderFixedBytes + n;
  Decoder sum(std::span<const uint8_t>(header).subspan(body));
  if (sum.U64() != Checksum64(std::span<const uint8_t>(header).first(body))) {
    return Corrupt(path + " has a damaged journal header (checksum mismatch)");
  }
  Decoder id(std::span<const uint8_t>(header).subspan(kHeaderFixedBytes, n));
  const std::string valet_version = id.Str();
  const std::string model = id.Str();
  task_key = id.Str();
  // Count(8): a setting takes at least its two string lengths.
  const uint32_t n_settings = id.Count(8);
  if (n_settings > kMaxIdentitySettings) return Corrupt(path + " has a malformed journal header");
  std::vector<JournalSetting> settings(n_settings);
  for (JournalSetting& setting : settings) {
    setting.name = id.Str();
    setting.value = id.Str();
  }
  if (!id.at_end()) return Corrupt(path + " has a malformed journal header");
  if (valet_version != expected.valet_version) {
    return Unsupported(path + " was written by valet " + valet_version + ", this is valet " +
                       expected.valet_version +
                       ": a task resumes only in the version that began it");
  }
  if (model != expected.model_fingerprint) {
    return Unsupported(path + " was written for model \"" + model + "\", the model now is \"" +
                       expected.model_fingerprint + "\"");
  }
  if (const std::string diff = SettingsDifference(settings, expected.settings); !diff.empty()) {
    return Unsupported(path + " was written under other settings: " + diff +
                       " (a task resumes only under the settings that decided its tokens)");
  }
  if (!CheckTaskKey(task_key).ok()) return Corrupt(path + " has a malformed task key");
  return static_cast<uint64_t>(body + kChecksumBytes);
}

// Applies one intact record to `c`; false (with `why`) when it does not fit
// where it stands.
bool ApplyRecord(uint8_t type, std::span<const uint8_t> payload, bool first, JournalContents& c,
                 std::string& why) {
  if (first != (type == kSubmit)) {
    why = first ? "the first record is not Submit" : "a second Submit record";
    return false;
  }
  if (c.finished()) {
    why = "a record after Done";
    return false;
  }
  Decoder d(payload);
  switch (type) {
    case kSubmit:
      if (!DecodeSubmit(payload, c.request)) {
        why = "a malformed Submit record";
        return false;
      }
      c.rng = Rng(c.request.sampling.seed).state();
      return true;
    case kTokens: {
      const uint64_t first_index = d.U64();
      std::vector<int32_t> tokens = d.I32s();
      const RngState rng = d.Rng();
      const bool ids_ok =
          std::all_of(tokens.begin(), tokens.end(), [](int32_t t) { return t >= 0; });
      if (!d.at_end() || tokens.empty() || !ids_ok || AllZero(rng)) {
        why = "a malformed Tokens record";
        return false;
      }
      if (first_index != c.tokens.size()) {
        why = "a Tokens record starting at token " + std::to_string(first_index) + " after " +
              std::to_string(c.tokens.size());
        return false;
      }
      c.tokens.insert(c.tokens.end(), tokens.begin(), tokens.end());
      c.rng = rng;
      return true;
    }
    case kDone: {
      JournalEnd end;
      const int32_t state = d.I32();
      const int32_t stop_reason = d.I32();
      const uint64_t generated = d.U64();
      end.error = d.Str();
      if (!d.at_end() || state < static_cast<int32_t>(TaskState::kDone) ||
          state > static_cast<int32_t>(TaskState::kFailed) || stop_reason < 0 ||
          stop_reason > static_cast<int32_t>(StopReason::kStopString) ||
          generated != c.tokens.size()) {
        why = "a malformed Done record";
        return false;
      }
      end.state = static_cast<TaskState>(state);
      end.stop_reason = static_cast<StopReason>(stop_reason);
      c.end = std::move(end);
      return true;
    }
    default:
      why = "a record of unknown type " + std::to_string(type);
      return false;
  }
}

}  // namespace

Status CheckTaskKey(std::string_view key) {
  const bool chars_ok = std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
  if (key.empty() || key.size() > kMaxTaskKeyBytes || key.front() == '.' || !chars_ok) {
    return InvalidArgument("task key \"" + std::string(key) + "\" is not 1.." +
                           std::to_string(kMaxTaskKeyBytes) +
                           " of [A-Za-z0-9_.-] not starting with '.'");
  }
  return Status::Ok();
}

std::string JournalFileName(std::string_view task_key) { return std::string(task_key) + ".journal"; }

std::string JournalPath(const std::string& dir, std::string_view task_key) {
  return (std::filesystem::path(dir) / JournalFileName(task_key)).string();
}

namespace {

// Reads the journal open at `raw_fd` (taken over), `path` naming it in messages.
Result<JournalContents> ReadJournalAt(int raw_fd, const std::string& path, const JournalIdentity& expected) {
  Fd fd(raw_fd);
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound("no journal " + path);
    const std::string why = std::strerror(err);
    return IoError("cannot open " + path + ": " + why);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError("cannot stat " + path + ": " + Errno());
  if (!S_ISREG(st.st_mode)) return Corrupt(path + " is not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  JournalContents c;
  c.path = path;
  VALET_ASSIGN_OR_RETURN(uint64_t offset,
                         ReadHeader(fd.get(), file_size, path, expected, c.task_key));
  std::vector<uint8_t> record;
  for (bool first = true;; first = false) {
    std::string why;
    const uint64_t left = file_size - offset;
    if (left == 0) {
      if (first) return Corrupt(path + " has no Submit record");
      break;
    }
    uint8_t prefix[kRecordPrefixBytes];
    if (left < sizeof(prefix)) {
      c.tail = JournalTail::kTorn;
      why = "the file ends inside a record's length";
    } else {
      VALET_ASSIGN_OR_RETURN(size_t got, ReadAt(fd.get(), offset, prefix, sizeof(prefix)));
      if (got < sizeof(prefix)) return IoError(path + " shrank while it was read");
      const uint32_t length = Decoder(prefix).U32();
      if (length > kMaxJournalRecordBytes) {
        c.tail = JournalTail::kCorrupt;
        why = "a record declares " + std::to_string(length) + " bytes, over the limit of " +
              std::to_string(kMaxJournalRecordBytes);
      } else if (sizeof(prefix) + length + kChecksumBytes > left) {
        // Bounded by the file's size, so nothing is allocated for a length the file cannot back.
        c.tail = JournalTail::kTorn;
        why = "the file ends inside a record of " + std::to_string(length) + " bytes";
      } else {
        record.resize(sizeof(prefix) + length + kChecksumBytes);
        VALET_ASSIGN_OR_RETURN(got, ReadAt(fd.get(), offset, record.data(), record.size()));
        if (got < record.size()) return IoError(path + " shrank while it was read");
        const std::span<const uint8_t> body =
            std::span<const uint8_t>(record).first(sizeof(prefix) + length);
        if (Decoder(std::span<const uint8_t>(record).subspan(body.size())).U64() !=
            Checksum64(body)) {
          c.tail = JournalTail::kCorrupt;
          why = "a record's checksum does not match";
        } else if (!ApplyRecord(record[4], body.subspan(sizeof(prefix)), first, c, why)) {
          c.tail = JournalTail::kCorrupt;
        } else {
          offset += record.size();
          continue;
        }
      }
    }
    if (first) {
      return Corrupt(path + " has no intact Submit record (" + why + ")");
    }
    c.tail_problem = why + " at byte " + std::to_string(offset);
    break;
  }
  c.good_bytes = offset;
  c.dropped_bytes = file_size - offset;
  return c;
}

}  // namespace

Result<JournalContents> ReadJournal(const PrivateDir& dir, std::string_view task_key,
                                    const JournalIdentity& expected) {
  VALET_RETURN_IF_ERROR(CheckTaskKey(task_key));
  const std::string name = JournalFileName(task_key);
  return ReadJournalAt(dir.OpenRead(name), dir.PathOf(name), expected);
}

Result<JournalContents> ReadJournal(const std::string& path, const JournalIdentity& expected) {
  return ReadJournalAt(OpenNoFollow(path), path, expected);
}

Result<JournalScan> ListJournals(const PrivateDir& dir, const JournalIdentity& expected) {
  JournalScan scan;
  VALET_ASSIGN_OR_RETURN(const std::vector<std::string> names, dir.List(kMaxJournalDirEntries));
  for (const std::string& name : names) {
    const std::string path = dir.PathOf(name);
    constexpr std::string_view kSuffix = ".journal";
    if (IsCheckpointFileName(name)) continue;
    if (!name.ends_with(kSuffix)) {
      scan.skipped.push_back({path, InvalidArgument(path + " is not named <task key>.journal")});
      continue;
    }
    Result<JournalContents> c = ReadJournalAt(dir.OpenRead(name), path, expected);
    if (!c.ok()) {
      scan.skipped.push_back({path, c.status()});
    } else if (c->task_key + std::string(kSuffix) != name) {
      scan.skipped.push_back({path, Corrupt(path + " holds the journal of task " + c->task_key +
                                            " under another name")});
    } else {
      scan.journals.push_back(std::move(c).value());
    }
  }
  return scan;
}

Status RemoveJournal(const PrivateDir& dir, std::string_view task_key) {
  VALET_RETURN_IF_ERROR(CheckTaskKey(task_key));
  const std::string name = JournalFileName(task_key);
  if (Status removed = dir.Remove(name); !removed.ok()) {
    if (removed.code() == StatusCode::kNotFound) return NotFound("no journal " + dir.PathOf(name));
    return removed;
  }
  return dir.Sync();
}

SamplerState ResumedSamplerState(const JournalContents& contents, std::span<const int32_t> fed) {
  SamplerState s;
  const size_t window = static_cast<size_t>(std::max(contents.request.sampling.repeat_last_n, 0));
  const size_t total = fed.size() + contents.tokens.size();
  for (size_t i = total - std::min(window, total); i < total; ++i) {
    s.recent_tokens.push_back(i < fed.size() ? fed[i] : contents.tokens[i - fed.size()]);
  }
  s.generated = contents.tokens;
  s.rng = contents.rng;
  return s;
}

// ---- The writer. ----

TaskJournal::TaskJournal(std::shared_ptr<const PrivateDir> dir, std::string key, int fd,
                         const TaskJournalOptions& options, uint64_t size, int64_t tokens, bool finished)
    : dir_(std::move(dir)),
      key_(std::move(key)),
      path_(dir_->PathOf(JournalFileName(key_))),
      fd_(fd),
      options_(options),
      size_(size),
      tokens_(tokens),
      finished_(finished) {}

TaskJournal::TaskJournal(TaskJournal&& other) noexcept
    : dir_(std::move(other.dir_)),
      key_(std::move(other.key_)),
      path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      options_(other.options_),
      size_(other.size_),
      tokens_(other.tokens_),
      finished_(other.finished_),
      unsynced_(other.unsynced_),
      broken_(other.broken_) {}

TaskJournal& TaskJournal::operator=(TaskJournal&& other) noexcept {
  if (this != &other) {
    Close();
    dir_ = std::move(other.dir_);
    key_ = std::move(other.key_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    options_ = other.options_;
    size_ = other.size_;
    tokens_ = other.tokens_;
    finished_ = other.finished_;
    unsynced_ = other.unsynced_;
    broken_ = other.broken_;
  }
  return *this;
}

TaskJournal::~TaskJournal() { Close(); }

void TaskJournal::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<TaskJournal> TaskJournal::Create(std::shared_ptr<const PrivateDir> dir, std::string_view task_key,
                                        const JournalIdentity& identity, const TaskRequest& request,
                                        const TaskJournalOptions& options) {
  VALET_RETURN_IF_ERROR(CheckTaskKey(task_key));
  VALET_RETURN_IF_ERROR(CheckJournalIdentity(identity));
  if (!dir) return InvalidArgument("a journal needs a directory");
  const std::vector<uint8_t> submit = EncodeSubmit(request);
  if (submit.size() > kMaxJournalRecordBytes) {
    return InvalidArgument("the request takes " + std::to_string(submit.size()) +
                           " bytes, over the journal's record limit of " +
                           std::to_string(kMaxJournalRecordBytes));
  }
  Encoder id;
  id.Str(identity.valet_version);
  id.Str(identity.model_fingerprint);
  id.Str(task_key);
  id.U32(static_cast<uint32_t>(identity.settings.size()));
  for (const JournalSetting& setting : identity.settings) {
    id.Str(setting.name);
    id.Str(setting.value);
  }
  Encoder header;
  header.Bytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kMagic), sizeof(kMagic)));
  header.U32(kJournalFormatVersion);
  header.U32(static_cast<uint32_t>(id.size()));
  header.Bytes(id.bytes());
  header.U64(Checksum64(header.bytes()));
  std::vector<uint8_t> bytes = std::move(header.bytes());
  EncodeRecord(kSubmit, submit, bytes);

  const std::string name = JournalFileName(task_key);
  if (Result<struct stat> existing = dir->Stat(name); existing.ok()) {
    return InvalidArgument("a journal for task " + std::string(task_key) + " already exists");
  } else if (existing.status().code() != StatusCode::kNotFound) {
    return existing.status();
  }
  VALET_RETURN_IF_ERROR(dir->WriteAtomically(name, bytes, FileSync::kFsync));
  const int fd = dir->OpenAppend(name);
  if (fd < 0) return IoError("cannot open " + dir->PathOf(name) + " for appending: " + Errno());
  return TaskJournal(std::move(dir), std::string(task_key), fd, options, bytes.size(), 0, false);
}

Result<TaskJournal> TaskJournal::Reopen(std::shared_ptr<const PrivateDir> dir, const JournalContents& contents,
                                        const TaskJournalOptions& options) {
  if (!dir) return InvalidArgument("a journal needs a directory");
  VALET_RETURN_IF_ERROR(CheckTaskKey(contents.task_key));
  Fd fd(dir->OpenAppend(JournalFileName(contents.task_key)));
  if (fd.get() < 0) return IoError("cannot open " + contents.path + " for appending: " + Errno());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError("cannot stat " + contents.path + ": " + Errno());
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size != contents.good_bytes + contents.dropped_bytes) {
    return Corrupt(contents.path + " changed since it was read (" + std::to_string(size) +
                   " bytes, then " + std::to_string(contents.good_bytes + contents.dropped_bytes) +
                   ")");
  }
  if (contents.dropped_bytes > 0) {
    if (::ftruncate(fd.get(), static_cast<off_t>(contents.good_bytes)) != 0 ||
        ::fdatasync(fd.get()) != 0) {
      return IoError("cannot cut the damaged tail off " + contents.path + ": " + Errno());
    }
  }
  return TaskJournal(std::move(dir), contents.task_key, fd.release(), options, contents.good_bytes,
                     static_cast<int64_t>(contents.tokens.size()), contents.finished());
}

Status TaskJournal::Append(uint8_t type, std::span<const uint8_t> payload) {
  if (fd_ < 0) return InvalidArgument("task journal " + path_ + " was removed");
  if (broken_) return IoError(path_ + " is unusable after a write that could not be undone");
  std::vector<uint8_t> record;
  record.reserve(kRecordPrefixBytes + payload.size() + kChecksumBytes);
  EncodeRecord(type, payload, record);
  if (options_.before_append) options_.before_append(fd_, record);
  Status written = WriteAll(fd_, record, options_.write);
  if (!written.ok()) {
    // A partial record would hide every later one from readers: cut it off.
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) broken_ = true;
    return IoError("cannot append to " + path_ + ": " + written.message());
  }
  size_ += record.size();
  unsynced_ = true;
  return Status::Ok();
}

Status TaskJournal::AppendTokens(std::span<const int32_t> tokens, const RngState& rng_after) {
  if (finished_) return InvalidArgument("task journal " + path_ + " is already finished");
  if (tokens.empty()) return Status::Ok();
  if (AllZero(rng_after)) return InvalidArgument("an all-zero RNG state is no sampler's");
  for (int32_t t : tokens) {
    if (t < 0) return InvalidArgument("token id " + std::to_string(t) + " is negative");
  }
  if (tokens.size() > (kMaxJournalRecordBytes - 48) / 4) {
    return InvalidArgument(std::to_string(tokens.size()) + " tokens are too many for one record");
  }
  Encoder e;
  e.U64(static_cast<uint64_t>(tokens_));
  e.I32s(tokens);
  e.Rng(rng_after);
  VALET_RETURN_IF_ERROR(Append(kTokens, e.bytes()));
  // Counted even if the sync below fails: the record is in the file, and the
  // next one must start after it.
  tokens_ += static_cast<int64_t>(tokens.size());
  return options_.sync == JournalSync::kEveryRecord ? Sync() : Status::Ok();
}

Status TaskJournal::MarkDone(const JournalEnd& end) {
  if (finished_) return InvalidArgument("task journal " + path_ + " is already finished");
  if (!IsTerminal(end.state)) {
    return InvalidArgument(std::string("a task does not end in state ") + TaskStateName(end.state));
  }
  Encoder e;
  e.I32(static_cast<int32_t>(end.state));
  e.I32(static_cast<int32_t>(end.stop_reason));
  e.U64(static_cast<uint64_t>(tokens_));
  e.Str(end.error.substr(0, kMaxErrorBytes));
  VALET_RETURN_IF_ERROR(Append(kDone, e.bytes()));
  finished_ = true;
  return Sync();
}

Status TaskJournal::Remove() {
  Close();
  unsynced_ = false;  // nothing left to sync: the file is gone
  return RemoveJournal(*dir_, key_);
}

Status TaskJournal::Sync() {
  if (!unsynced_) return Status::Ok();
  if (::fdatasync(fd_) != 0) return IoError("cannot sync " + path_ + ": " + Errno());
  unsynced_ = false;
  return Status::Ok();
}

uint64_t JournalBytesToFinish(int64_t tokens) {
  // A Tokens record of one token: index u64, count u32, the id, the RNG
  // state; a Done record: state, stop reason, count, and the error string.
  constexpr uint64_t kTokenRecord = kRecordPrefixBytes + 8 + 4 + 4 + sizeof(RngState) + kChecksumBytes;
  constexpr uint64_t kDoneRecord = kRecordPrefixBytes + 4 + 4 + 8 + 4 + kMaxErrorBytes + kChecksumBytes;
  return static_cast<uint64_t>(std::max<int64_t>(tokens, 0)) * kTokenRecord + kDoneRecord;
}

}  // namespace valet
