#include "server/http/request_parser.h"

#include <algorithm>
#include <cctype>

namespace valet::http {

namespace {

// RFC 9110 token characters (methods, header names).
bool IsTokenChar(unsigned char c) {
  if (std::isalnum(c)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTokenChar(static_cast<unsigned char>(c)); });
}

// Field values: visible ASCII, space, tab and obs-text; no other control byte.
bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || c >= 0x20 ? c != 0x7F : false;
  });
}

uint64_t HexDigit(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint64_t>(c - '0');
  return static_cast<uint64_t>(std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// One Content-Length item: 1*DIGIT; false when malformed or over `max`.
bool ParseLength(std::string_view s, uint64_t max, uint64_t* out, bool* too_large) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (v > (max - static_cast<uint64_t>(c - '0')) / 10) {
      *too_large = true;
      return false;
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// Does the comma-separated header value `list` hold `token` (case-insensitive)?
bool HasToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (Lower(Trim(list.substr(0, comma))) == token) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

void RequestParser::Reset() {
  state_ = State::kHead;
  request_ = HttpRequest{};
  error_ = HttpError{};
  trailer_bytes_ = 0;
  scanned_ = 0;
  remaining_ = 0;
  expects_continue_ = false;
  started_ = false;
}

RequestParser::Progress RequestParser::Fail(int status, std::string message, std::string code) {
  state_ = State::kError;
  error_ = HttpError{status, std::move(message), std::move(code)};
  return Progress::kError;
}

RequestParser::Progress RequestParser::FailBodyTooLarge() {
  return Fail(413, "the request body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes", "body_too_large");
}

RequestParser::Progress RequestParser::FailHeadTooLarge() {
  return Fail(431, "the request line and headers exceed " + std::to_string(limits_.max_head_bytes) + " bytes",
              "headers_too_large");
}

RequestParser::Progress RequestParser::Feed(std::string& input) {
  switch (state_) {
    case State::kHead: return ParseHead(input);
    case State::kBody: return ParseBody(input);
    case State::kChunkSize:
    case State::kChunkData:
    case State::kChunkDataEnd:
    case State::kTrailers: return ParseChunked(input);
    case State::kDone: return Progress::kComplete;
    case State::kError: return Progress::kError;
  }
  return Progress::kError;
}

RequestParser::Progress RequestParser::ParseHead(std::string& input) {
  // Empty lines before a request line are skipped (RFC 9112 2.2).
  if (!started_) {
    const size_t first = input.find_first_not_of("\r\n");
    input.erase(0, first == std::string::npos ? input.size() : first);
    if (input.empty()) return Progress::kNeedMore;
    started_ = true;
  }
  // The head ends at an empty line: "\n\n" or "\n\r\n".
  size_t end = std::string::npos;
  for (size_t i = scanned_; i < input.size() && end == std::string::npos; ++i) {
    if (input[i] != '\n') continue;
    if (i + 1 < input.size() && input[i + 1] == '\n') end = i + 2;
    if (i + 2 < input.size() && input[i + 1] == '\r' && input[i + 2] == '\n') end = i + 3;
  }
  if (end == std::string::npos) {
    if (input.size() > limits_.max_head_bytes) return FailHeadTooLarge();
    scanned_ = input.size() >= 2 ? input.size() - 2 : 0;
    return Progress::kNeedMore;
  }
  if (end > limits_.max_head_bytes) return FailHeadTooLarge();
  std::string_view head(input.data(), end);
  bool first = true;
  bool ok = true;
  while (ok && !head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    ok = first ? ParseRequestLine(line) : ParseHeaderLine(line);
    first = false;
  }
  input.erase(0, end);
  scanned_ = 0;
  if (!ok) return Progress::kError;
  return ChooseFraming();
}

bool RequestParser::ParseRequestLine(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    Fail(400, "malformed request line", "bad_request");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  const bool visible = std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7F; });
  if (!IsToken(method) || target.empty() || !visible) {
    Fail(400, "malformed request line", "bad_request");
    return false;
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !std::isdigit(static_cast<unsigned char>(version[5])) ||
      version[6] != '.' || !std::isdigit(static_cast<unsigned char>(version[7]))) {
    Fail(400, "malformed HTTP version", "bad_request");
    return false;
  }
  if (version[5] != '1') {
    Fail(505, "only HTTP/1.0 and HTTP/1.1 are served", "http_version_not_supported");
    return false;
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.path = std::string(target.substr(0, target.find('?')));
  request_.minor_version = version[7] - '0';
  return true;
}

bool RequestParser::ParseHeaderLine(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    Fail(400, "folded header lines are not accepted", "bad_request");
    return false;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
    Fail(400, "malformed header line", "bad_request");
    return false;
  }
  const std::string_view value = Trim(line.substr(colon + 1));
  if (!IsFieldValue(value)) {
    Fail(400, "a header value holds a control character", "bad_request");
    return false;
  }
  if (request_.headers.size() >= limits_.max_headers) {
    Fail(431, "more than " + std::to_string(limits_.max_headers) + " headers", "headers_too_large");
    return false;
  }
  request_.headers.emplace_back(Lower(line.substr(0, colon)), std::string(value));
  return true;
}

RequestParser::Progress RequestParser::ChooseFraming() {
  std::string transfer_encoding;
  bool has_length = false;
  uint64_t length = 0;
  for (const auto& [name, value] : request_.headers) {
    if (name == "transfer-encoding") {
      transfer_encoding += (transfer_encoding.empty() ? "" : ",") + value;
    } else if (name == "content-length") {
      // A repeated length (or a list) must agree with itself.
      std::string_view list = value;
      while (true) {
        const size_t comma = list.find(',');
        bool too_large = false;
        uint64_t v = 0;
        if (!ParseLength(Trim(list.substr(0, comma)), UINT64_MAX, &v, &too_large)) {
          return too_large ? FailBodyTooLarge() : Fail(400, "malformed Content-Length", "bad_request");
        }
        if (has_length && v != length) return Fail(400, "conflicting Content-Length values", "bad_request");
        has_length = true;
        length = v;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    }
  }
  const std::string connection = Lower(request_.Header("connection"));
  request_.keep_alive = request_.minor_version == 1 && !HasToken(connection, "close");
  if (std::string_view expect = request_.Header("expect"); !expect.empty()) {
    if (Lower(Trim(expect)) != "100-continue") return Fail(417, "unsupported Expect header", "expectation_failed");
    expects_continue_ = request_.minor_version == 1;
  }
  if (!transfer_encoding.empty()) {
    if (has_length) return Fail(400, "both Content-Length and Transfer-Encoding", "bad_request");
    if (request_.minor_version == 0) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request", "bad_request");
    if (Lower(Trim(transfer_encoding)) != "chunked") {
      return Fail(501, "only the chunked transfer coding is accepted", "unsupported_transfer_encoding");
    }
    state_ = State::kChunkSize;
    return Progress::kHead;
  }
  if (length > limits_.max_body_bytes) return FailBodyTooLarge();
  remaining_ = length;
  request_.body.reserve(static_cast<size_t>(length));
  state_ = length > 0 ? State::kBody : State::kDone;
  return length > 0 ? Progress::kHead : Progress::kComplete;
}

bool RequestParser::TakeBody(std::string& input) {
  const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, input.size()));
  request_.body.append(input, 0, take);
  input.erase(0, take);
  remaining_ -= take;
  return remaining_ == 0;
}

RequestParser::Progress RequestParser::ParseBody(std::string& input) {
  if (!TakeBody(input)) return Progress::kNeedMore;
  state_ = State::kDone;
  return Progress::kComplete;
}

bool RequestParser::TakeLine(std::string& input, size_t limit, std::string* line, bool* too_long) {
  const size_t nl = input.find('\n');
  if (nl == std::string::npos) {
    *too_long = input.size() > limit + 1;
    return false;
  }
  if (nl > limit + 1) {
    *too_long = true;
    return false;
  }
  line->assign(input, 0, nl);
  if (!line->empty() && line->back() == '\r') line->pop_back();
  input.erase(0, nl + 1);
  return true;
}

RequestParser::Progress RequestParser::ParseChunked(std::string& input) {
  constexpr size_t kMaxChunkLine = 1024;  // size and extensions
  while (true) {
    std::string line;
    bool too_long = false;
    switch (state_) {
      case State::kChunkSize: {
        if (!TakeLine(input, kMaxChunkLine, &line, &too_long)) {
          return too_long ? Fail(400, "chunk size line too long", "bad_request") : Progress::kNeedMore;
        }
        const size_t digits = line.find_first_not_of("0123456789abcdefABCDEF");
        const std::string_view rest = digits == std::string::npos ? std::string_view() : std::string_view(line).substr(digits);
        if (digits == 0 || (!rest.empty() && rest.front() != ';' && rest.front() != ' ' && rest.front() != '\t')) {
          return Fail(400, "malformed chunk size", "bad_request");
        }
        const size_t n_digits = digits == std::string::npos ? line.size() : digits;
        const uint64_t room = limits_.max_body_bytes - request_.body.size();
        uint64_t size = 0;
        for (size_t i = 0; i < n_digits; ++i) {
          size = size * 16 + HexDigit(line[i]);
          if (size > room) return FailBodyTooLarge();
        }
        remaining_ = size;
        state_ = size == 0 ? State::kTrailers : State::kChunkData;
        break;
      }
      case State::kChunkData:
        if (!TakeBody(input)) return Progress::kNeedMore;
        state_ = State::kChunkDataEnd;
        break;
      case State::kChunkDataEnd:
        if (!TakeLine(input, 0, &line, &too_long)) {
          return too_long ? Fail(400, "chunk data not followed by CRLF", "bad_request") : Progress::kNeedMore;
        }
        if (!line.empty()) return Fail(400, "chunk data not followed by CRLF", "bad_request");
        state_ = State::kChunkSize;
        break;
      case State::kTrailers:
        // Trailer fields are read, bounded like the head, and dropped.
        if (!TakeLine(input, limits_.max_head_bytes, &line, &too_long)) {
          return too_long ? Fail(431, "trailer fields too large", "headers_too_large") : Progress::kNeedMore;
        }
        trailer_bytes_ += line.size() + 2;
        if (trailer_bytes_ > limits_.max_head_bytes) return Fail(431, "trailer fields too large", "headers_too_large");
        if (line.empty()) {
          state_ = State::kDone;
          return Progress::kComplete;
        }
        break;
      default: return Progress::kError;
    }
  }
}

}  // namespace valet::http
