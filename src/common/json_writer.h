// A minimal streaming JSON writer for CLI and benchmark output.
// Commas and escaping are handled here so callers cannot emit invalid JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace valet {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& Double(double v);  // non-finite values are written as null
  JsonWriter& Bool(bool v);
  JsonWriter& Null();

  const std::string& str() const { return out_; }

  // Quotes and escapes s (invalid UTF-8 bytes become U+FFFD).
  static std::string Quote(std::string_view s);

 private:
  void Separate();

  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace valet
