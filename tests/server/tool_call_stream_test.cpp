// A streamed answer that may call tools holds back the text that may still
// become a call.
#include "server/tool_call_stream.h"

#include <gtest/gtest.h>

#include <string>

#include "chat/tool_calls.h"

namespace valet {
namespace {

// What a stream shows of each piece, joined; the rest is held back.
std::string Shown(ToolCallStream& s, std::initializer_list<std::string_view> pieces) {
  std::string out;
  for (std::string_view p : pieces) out += s.Push(p);
  return out;
}

TEST(ToolCallStream, AStreamHoldsBackWhatMayBecomeACall) {
  ToolCallStream hermes(ToolCallSyntaxForTemplate("<tool_call>"));
  EXPECT_EQ(Shown(hermes, {"Let me ", "check. <to", "ol_c"}), "Let me check. ");
  EXPECT_EQ(Shown(hermes, {"all>\n{\"name\"", ": \"ping\"}"}), "") << "inside a call nothing is shown";
  EXPECT_EQ(hermes.shown(), 14u);

  ToolCallStream text(ToolCallSyntaxForTemplate("<tool_call>"));
  EXPECT_EQ(Shown(text, {"a <", "b"}), "a <b") << "a '<' that does not go on to the marker is text";

  ToolCallStream llama(ToolCallSyntaxForTemplate("tools \"parameters\""));
  EXPECT_EQ(Shown(llama, {" \n", "{\"name\": "}), "") << "a bare-object family: an answer opening with '{'";
  ToolCallStream prose(ToolCallSyntaxForTemplate("tools \"parameters\""));
  EXPECT_EQ(Shown(prose, {" ", "It is {cold}."}), " It is {cold}.");

  ToolCallStream mistral(ToolCallSyntaxForTemplate("[TOOL_CALLS]"));
  EXPECT_EQ(Shown(mistral, {"ok [TOOL", "_CALLS][{"}), "ok ");
}

}  // namespace
}  // namespace valet
