#include "durable/journal_identity.h"

#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <string_view>

#include "kv/checksum.h"

// CMake passes the project version, the string valet_version() returns (that
// function lives in libvalet.so's own source, out of this library's reach).
// The fallback only serves standalone syntax checks: every real build refuses
// a journal it wrote.
#ifndef VALET_VERSION_STRING
#define VALET_VERSION_STRING "unversioned"
#endif

namespace valet {
namespace {

void AppendLengthPrefixed(std::string& out, std::string_view s) {
  const auto n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(n >> (8 * i)));
  out.append(s);
}

std::string Hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// Everything the chat renderer reads from the engine's chat format.
std::string ChatFormatChecksum(const ChatFormat& format) {
  std::string bytes;
  AppendLengthPrefixed(bytes, format.template_source);
  AppendLengthPrefixed(bytes, format.bos_token);
  AppendLengthPrefixed(bytes, format.eos_token);
  AppendLengthPrefixed(bytes, std::to_string(format.special_texts.size()));
  for (const std::string& text : format.special_texts) AppendLengthPrefixed(bytes, text);
  return Hex64(Checksum64(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
}

std::string TokensText(const std::vector<int32_t>& tokens) {
  if (tokens.empty()) return "none";
  std::string text;
  for (int32_t t : tokens) {
    if (!text.empty()) text += ',';
    text += std::to_string(t);
  }
  return text;
}

}  // namespace

const char* ValetVersionString() { return VALET_VERSION_STRING; }

JournalIdentity SchedulerJournalIdentity(const EngineInterface& engine,
                                         std::string model_fingerprint,
                                         bool parse_special_in_messages) {
  JournalIdentity id;
  id.model_fingerprint = std::move(model_fingerprint);
  id.settings.push_back(
      {"parse_special_in_messages", parse_special_in_messages ? "true" : "false"});
  id.settings.push_back({"context_length", std::to_string(engine.context_length())});
  id.settings.push_back({"chat_template", ChatFormatChecksum(engine.chat_format())});
  // An empty text gets exactly what every prompt starts with (the preparer
  // asks for BOS on every rendered prompt; the vocabulary decides).
  id.settings.push_back({"bos", TokensText(engine.Tokenize("", /*add_bos=*/true))});
  for (auto& [name, value] : engine.token_settings()) {
    id.settings.push_back({std::move(name), std::move(value)});
  }
  return id;
}

Status CheckJournalIdentity(const JournalIdentity& identity) {
  if (identity.model_fingerprint.empty()) {
    return InvalidArgument("a journal needs the model's fingerprint");
  }
  const auto too_long = [](const std::string& s) { return s.size() > kMaxIdentityStringBytes; };
  bool long_string = too_long(identity.model_fingerprint) || too_long(identity.valet_version);
  if (identity.settings.size() > kMaxIdentitySettings) {
    return InvalidArgument("a journal identity of " + std::to_string(identity.settings.size()) +
                           " settings, over " + std::to_string(kMaxIdentitySettings));
  }
  std::set<std::string_view> names;
  for (const JournalSetting& s : identity.settings) {
    long_string = long_string || too_long(s.name) || too_long(s.value);
    if (s.name.empty() || !names.insert(s.name).second) {
      return InvalidArgument("a journal identity names setting \"" + s.name + "\" twice, or none");
    }
  }
  if (long_string) {
    return InvalidArgument("a journal identity string is over " +
                           std::to_string(kMaxIdentityStringBytes) + " bytes");
  }
  return Status::Ok();
}

std::string SettingsDifference(const std::vector<JournalSetting>& written,
                               const std::vector<JournalSetting>& now) {
  std::map<std::string, std::string> then_by_name, now_by_name;
  for (const JournalSetting& s : written) then_by_name.emplace(s.name, s.value);
  for (const JournalSetting& s : now) now_by_name.emplace(s.name, s.value);
  std::string diff;
  const auto add = [&](const std::string& name, const std::string& then,
                       const std::string& current) {
    if (!diff.empty()) diff += "; ";
    diff += name;
    diff += " differs: journal " + then + ", now " + current;
  };
  // In the order this valet lists them, then what only the journal has.
  for (const JournalSetting& s : now) {
    auto it = then_by_name.find(s.name);
    if (it == then_by_name.end()) {
      add(s.name, "does not record it", s.value);
    } else if (it->second != s.value) {
      add(s.name, it->second, s.value);
    }
  }
  for (const JournalSetting& s : written) {
    if (!now_by_name.contains(s.name)) add(s.name, s.value, "this valet has no such setting");
  }
  return diff;
}

std::string IdentityBytes(const JournalIdentity& identity) {
  std::string bytes;
  AppendLengthPrefixed(bytes, identity.valet_version);
  AppendLengthPrefixed(bytes, identity.model_fingerprint);
  AppendLengthPrefixed(bytes, std::to_string(identity.settings.size()));
  for (const JournalSetting& s : identity.settings) {
    AppendLengthPrefixed(bytes, s.name);
    AppendLengthPrefixed(bytes, s.value);
  }
  return bytes;
}

}  // namespace valet
