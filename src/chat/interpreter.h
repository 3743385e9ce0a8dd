// Renders a parsed template (chat/ast.h) against a scope of variables.
// Jinja's scoping is kept: `for` bodies and macros get their own scope,
// `if` does not, namespace() objects are shared. Every render is bounded
// (output bytes, steps, macro call depth) so a hostile template ends with
// an error instead of exhausting memory, time or stack.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"
#include "valet/status.h"

namespace valet::chat {

struct RenderLimits {
  size_t max_output_bytes = size_t{8} << 20;  // also bounds any one string or list built on the way
  uint64_t max_steps = 10'000'000;            // statements run plus loop iterations
  int max_call_depth = 48;                    // nested macro calls
};

class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent = nullptr) : parent_(std::move(parent)) {}
  // The innermost binding of `name`, else nullptr.
  const Value* Find(std::string_view name) const;
  void Set(std::string_view name, Value v);

 private:
  std::shared_ptr<Scope> parent_;
  std::map<std::string, Value, std::less<>> vars_;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders with `variables` as globals; the built-in functions (range,
  // namespace, raise_exception) sit in a scope above them, so variables may
  // shadow them. raise_exception(msg) fails the render with exactly `msg`.
  // One Interpreter renders once.
  Result<std::string> Render(const Body& program, const Value::Object& variables);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using ScopePtr = std::shared_ptr<Scope>;

  Status ExecBody(const Body& body, const ScopePtr& scope, std::string* out, Flow* flow);
  Status Exec(const Stmt& stmt, const ScopePtr& scope, std::string* out, Flow* flow);
  Status ExecFor(const Stmt& stmt, const ScopePtr& scope, std::string* out);
  Status ExecSet(const Stmt& stmt, const ScopePtr& scope);
  Status BindTargets(const std::vector<std::string>& targets, const Value& item, Scope* scope);
  void DefineMacro(const Stmt& stmt, const ScopePtr& scope);
  Result<Value> CallMacro(const Stmt& macro, const std::weak_ptr<Scope>& closure, const CallArgs& args);

  Result<Value> Eval(const Expr& e, const ScopePtr& scope);
  Result<Value> EvalBinary(const Expr& e, const ScopePtr& scope);
  Result<Value> EvalCall(const Expr& e, const ScopePtr& scope);
  Result<Value> EvalSlice(const Expr& e, const ScopePtr& scope);
  Result<Value> EvalCollection(const Expr& e, const ScopePtr& scope);
  Result<CallArgs> EvalArgs(const Expr& e, size_t first, const ScopePtr& scope);

  Status Append(std::string* out, std::string_view text);
  Status Step();
  Status CheckSize(size_t bytes) const;
  void AddBuiltins(Scope* scope);

  RenderLimits limits_;
  size_t output_bytes_ = 0;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  bool raised_ = false;  // the current error came from raise_exception
  // Objects given an attribute by `set obj.attr = ...`: the only way a value
  // can come to contain itself. Emptied at the end so such cycles are freed.
  std::vector<Value> assigned_objects_;
  std::unordered_set<const Value::Object*> assigned_identities_;
};

}  // namespace valet::chat
