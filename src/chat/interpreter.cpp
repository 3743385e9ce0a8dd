#include "chat/interpreter.h"

#include <optional>

#include "chat/filters.h"
#include "chat/operators.h"
#include "chat/value_ops.h"

namespace valet::chat {
namespace {

constexpr int64_t kMaxRangeLength = 1'000'000;

Status WithLine(int line, const Status& s) {
  return Status(s.code(), "template line " + std::to_string(line) + ": " + s.message());
}

Result<Value> Range(const CallArgs& args) {
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_int()) return InvalidArgument("range() takes integers");
    n.push_back(v.AsInt());
  }
  if (n.empty() || n.size() > 3) return InvalidArgument("range() takes 1 to 3 integers");
  const int64_t start = n.size() == 1 ? 0 : n[0];
  const int64_t stop = n.size() == 1 ? n[0] : n[1];
  const int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) return InvalidArgument("range() step must not be zero");
  Value::Array items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) >= kMaxRangeLength) {
      return OutOfRange("range() longer than " + std::to_string(kMaxRangeLength));
    }
    items.push_back(Value::Int(i));
  }
  return Value::NewArray(std::move(items));
}

Result<Value> Namespace(const CallArgs& args) {
  Value ns = Value::NewObject();
  for (const Value& v : args.positional) {
    if (!v.is_object()) return InvalidArgument("namespace() takes a mapping or keyword arguments");
    for (const auto& [k, member] : v.object()) ns.Set(k, member);
  }
  for (const auto& [k, v] : args.keyword) ns.Set(k, v);
  return ns;
}

Value LoopObject(size_t i, const std::vector<Value>& items) {
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  return Value::NewObject({
      {"index", Value::Int(k + 1)},
      {"index0", Value::Int(k)},
      {"revindex", Value::Int(n - k)},
      {"revindex0", Value::Int(n - k - 1)},
      {"first", Value::Bool(k == 0)},
      {"last", Value::Bool(k == n - 1)},
      {"length", Value::Int(n)},
      {"previtem", k > 0 ? items[i - 1] : Value()},
      {"nextitem", k + 1 < n ? items[i + 1] : Value()},
  });
}

}  // namespace

const Value* Scope::Find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

void Scope::Set(std::string_view name, Value v) {
  auto it = vars_.find(name);
  if (it != vars_.end()) {
    it->second = std::move(v);
  } else {
    vars_.emplace(std::string(name), std::move(v));
  }
}

Interpreter::~Interpreter() {
  for (const Value& object : assigned_objects_) object.object().clear();
}

void Interpreter::AddBuiltins(Scope* scope) {
  scope->Set("range", Value::Callable("range", Range));
  scope->Set("namespace", Value::Callable("namespace", Namespace));
  scope->Set("raise_exception", Value::Callable("raise_exception", [this](const CallArgs& args) -> Result<Value> {
    raised_ = true;
    return InvalidArgument(args.positional.empty() ? "raise_exception() called" : args.positional[0].ToString());
  }));
}

Result<std::string> Interpreter::Render(const Body& program, const Value::Object& variables) {
  auto builtins = std::make_shared<Scope>();
  AddBuiltins(builtins.get());
  auto globals = std::make_shared<Scope>(builtins);
  for (const auto& [name, value] : variables) globals->Set(name, value);
  std::string out;
  Flow flow = Flow::kNormal;
  VALET_RETURN_IF_ERROR(ExecBody(program, globals, &out, &flow));
  return out;
}

Status Interpreter::Append(std::string* out, std::string_view text) {
  output_bytes_ += text.size();
  VALET_RETURN_IF_ERROR(CheckSize(output_bytes_));
  out->append(text);
  return Status::Ok();
}

Status Interpreter::CheckSize(size_t bytes) const {
  if (bytes <= limits_.max_output_bytes) return Status::Ok();
  return OutOfRange("render output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

Status Interpreter::Step() {
  if (++steps_ <= limits_.max_steps) return Status::Ok();
  return OutOfRange("render exceeds " + std::to_string(limits_.max_steps) + " steps (a runaway loop?)");
}

Status Interpreter::ExecBody(const Body& body, const ScopePtr& scope, std::string* out, Flow* flow) {
  for (const Stmt& stmt : body) {
    VALET_RETURN_IF_ERROR(Exec(stmt, scope, out, flow));
    if (*flow != Flow::kNormal) return Status::Ok();
  }
  return Status::Ok();
}

Status Interpreter::Exec(const Stmt& stmt, const ScopePtr& scope, std::string* out, Flow* flow) {
  VALET_RETURN_IF_ERROR(Step());
  Status status = Status::Ok();
  switch (stmt.kind) {
    case Stmt::Kind::kText:
      return Append(out, stmt.text);
    case Stmt::Kind::kOutput: {
      Result<Value> v = Eval(*stmt.expr, scope);
      if (!v.ok()) {
        status = v.status();
        break;
      }
      return Append(out, v->ToOutput());
    }
    case Stmt::Kind::kIf: {
      for (size_t i = 0; i < stmt.bodies.size(); ++i) {
        if (i < stmt.conditions.size()) {
          Result<Value> cond = Eval(*stmt.conditions[i], scope);
          if (!cond.ok()) {
            status = cond.status();
            break;
          }
          if (!cond->Truthy()) continue;
        }
        return ExecBody(stmt.bodies[i], scope, out, flow);
      }
      break;
    }
    case Stmt::Kind::kFor:
      return ExecFor(stmt, scope, out);
    case Stmt::Kind::kSet:
      status = ExecSet(stmt, scope);
      break;
    case Stmt::Kind::kMacro:
      DefineMacro(stmt, scope);
      break;
    case Stmt::Kind::kBreak:
      *flow = Flow::kBreak;
      break;
    case Stmt::Kind::kContinue:
      *flow = Flow::kContinue;
      break;
  }
  if (status.ok() || raised_ || status.message().rfind("template line", 0) == 0) return status;
  return WithLine(stmt.line, status);
}

Status Interpreter::BindTargets(const std::vector<std::string>& targets, const Value& item, Scope* scope) {
  if (targets.size() == 1) {
    scope->Set(targets[0], item);
    return Status::Ok();
  }
  if (!item.is_array() || item.array().size() != targets.size()) {
    return InvalidArgument("cannot unpack a " + std::string(item.KindName()) + " into " +
                           std::to_string(targets.size()) + " names");
  }
  for (size_t i = 0; i < targets.size(); ++i) scope->Set(targets[i], item.array()[i]);
  return Status::Ok();
}

Status Interpreter::ExecFor(const Stmt& stmt, const ScopePtr& scope, std::string* out) {
  Result<Value> iterable = Eval(*stmt.expr, scope);
  if (!iterable.ok()) return raised_ ? iterable.status() : WithLine(stmt.line, iterable.status());
  Result<std::vector<Value>> all = Iterate(*iterable);
  if (!all.ok()) return WithLine(stmt.line, all.status());
  auto loop_scope = std::make_shared<Scope>(scope);
  std::vector<Value> items;
  for (const Value& item : *all) {
    if (stmt.filter != nullptr) {
      VALET_RETURN_IF_ERROR(Step());
      VALET_RETURN_IF_ERROR(BindTargets(stmt.targets, item, loop_scope.get()));
      VALET_ASSIGN_OR_RETURN(Value keep, Eval(*stmt.filter, loop_scope));
      if (!keep.Truthy()) continue;
    }
    items.push_back(item);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    VALET_RETURN_IF_ERROR(Step());
    loop_scope->Set("loop", LoopObject(i, items));
    Status bound = BindTargets(stmt.targets, items[i], loop_scope.get());
    if (!bound.ok()) return WithLine(stmt.line, bound);
    Flow flow = Flow::kNormal;
    VALET_RETURN_IF_ERROR(ExecBody(stmt.bodies[0], loop_scope, out, &flow));
    if (flow == Flow::kBreak) break;
  }
  if (items.empty() && stmt.bodies.size() > 1) {
    Flow flow = Flow::kNormal;
    return ExecBody(stmt.bodies[1], scope, out, &flow);
  }
  return Status::Ok();
}

Status Interpreter::ExecSet(const Stmt& stmt, const ScopePtr& scope) {
  Value value;
  if (stmt.expr != nullptr) {
    VALET_ASSIGN_OR_RETURN(value, Eval(*stmt.expr, scope));
  } else {
    std::string text;
    Flow flow = Flow::kNormal;
    VALET_RETURN_IF_ERROR(ExecBody(stmt.bodies[0], scope, &text, &flow));
    value = Value::String(std::move(text));
  }
  if (stmt.target_object == nullptr) return BindTargets(stmt.targets, value, scope.get());
  VALET_ASSIGN_OR_RETURN(Value object, Eval(*stmt.target_object, scope));
  if (!object.is_object()) {
    return InvalidArgument("cannot set attribute '" + stmt.text + "' on a " + object.KindName());
  }
  object.Set(stmt.text, std::move(value));
  if (assigned_identities_.insert(&object.object()).second) assigned_objects_.push_back(std::move(object));
  return Status::Ok();
}

void Interpreter::DefineMacro(const Stmt& stmt, const ScopePtr& scope) {
  // A weak reference: the macro lives in the scope it captures.
  std::weak_ptr<Scope> closure = scope;
  const Stmt* macro = &stmt;
  scope->Set(stmt.text, Value::Callable(stmt.text, [this, macro, closure](const CallArgs& args) {
               return CallMacro(*macro, closure, args);
             }));
}

Result<Value> Interpreter::CallMacro(const Stmt& macro, const std::weak_ptr<Scope>& closure, const CallArgs& args) {
  ScopePtr parent = closure.lock();
  if (parent == nullptr) return Internal("macro '" + macro.text + "' outlived its scope");
  if (call_depth_ >= limits_.max_call_depth) {
    return OutOfRange("macro calls nested deeper than " + std::to_string(limits_.max_call_depth) +
                      " (runaway recursion in '" + macro.text + "'?)");
  }
  if (args.positional.size() > macro.params.size()) {
    return InvalidArgument("macro '" + macro.text + "' takes " + std::to_string(macro.params.size()) + " arguments");
  }
  auto scope = std::make_shared<Scope>(parent);
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const MacroParam& p = macro.params[i];
    if (const Value* given = args.Get(i, p.name)) {
      scope->Set(p.name, *given);
    } else if (p.default_value != nullptr) {
      VALET_ASSIGN_OR_RETURN(Value v, Eval(*p.default_value, scope));
      scope->Set(p.name, std::move(v));
    } else {
      scope->Set(p.name, Value());
    }
  }
  ++call_depth_;
  std::string out;
  Flow flow = Flow::kNormal;
  Status status = ExecBody(macro.bodies[0], scope, &out, &flow);
  --call_depth_;
  VALET_RETURN_IF_ERROR(status);
  return Value::String(std::move(out));
}

Result<CallArgs> Interpreter::EvalArgs(const Expr& e, size_t first, const ScopePtr& scope) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) {
    VALET_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i], scope));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [name, expr] : e.kwargs) {
    VALET_ASSIGN_OR_RETURN(Value v, Eval(*expr, scope));
    args.keyword.emplace_back(name, std::move(v));
  }
  return args;
}

Result<Value> Interpreter::Eval(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.value;
    case Expr::Kind::kName: {
      const Value* v = scope->Find(e.name);
      return v != nullptr ? *v : Value();
    }
    case Expr::Kind::kList:
    case Expr::Kind::kDict:
      return EvalCollection(e, scope);
    case Expr::Kind::kAttr: {
      VALET_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0], scope));
      return GetAttribute(object, e.name);
    }
    case Expr::Kind::kIndex: {
      VALET_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0], scope));
      VALET_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1], scope));
      return GetItem(object, key);
    }
    case Expr::Kind::kSlice:
      return EvalSlice(e, scope);
    case Expr::Kind::kCall:
      return EvalCall(e, scope);
    case Expr::Kind::kFilter: {
      VALET_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0], scope));
      VALET_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
      VALET_ASSIGN_OR_RETURN(Value result, ApplyFilter(e.name, operand, args));
      if (result.is_string()) VALET_RETURN_IF_ERROR(CheckSize(result.AsString().size()));
      return result;
    }
    case Expr::Kind::kTest: {
      VALET_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0], scope));
      VALET_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
      VALET_ASSIGN_OR_RETURN(bool passed, ApplyTest(e.name, operand, args));
      return Value::Bool(passed != e.negated);
    }
    case Expr::Kind::kUnary: {
      VALET_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0], scope));
      return ApplyUnary(e.name, operand);
    }
    case Expr::Kind::kBinary:
      return EvalBinary(e, scope);
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      VALET_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0], scope));
      // Python's and/or give back an operand, not a bool.
      if (left.Truthy() == (e.kind == Expr::Kind::kOr)) return left;
      return Eval(*e.args[1], scope);
    }
    case Expr::Kind::kTernary: {
      VALET_ASSIGN_OR_RETURN(Value cond, Eval(*e.args[1], scope));
      if (cond.Truthy()) return Eval(*e.args[0], scope);
      if (e.args[2] == nullptr) return Value();
      return Eval(*e.args[2], scope);
    }
  }
  return Internal("unhandled expression kind");
}

Result<Value> Interpreter::EvalBinary(const Expr& e, const ScopePtr& scope) {
  VALET_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0], scope));
  VALET_ASSIGN_OR_RETURN(Value right, Eval(*e.args[1], scope));
  return ApplyBinary(e.name, left, right, limits_.max_output_bytes);
}

Result<Value> Interpreter::EvalCollection(const Expr& e, const ScopePtr& scope) {
  if (e.kind == Expr::Kind::kList) {
    Value::Array items;
    for (const ExprPtr& item : e.args) {
      VALET_ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
      items.push_back(std::move(v));
    }
    return Value::NewArray(std::move(items));
  }
  Value object = Value::NewObject();
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    VALET_ASSIGN_OR_RETURN(Value key, Eval(*e.args[i], scope));
    if (!key.is_string()) return InvalidArgument(std::string("dict keys must be strings, not ") + key.KindName());
    VALET_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1], scope));
    object.Set(key.AsString(), std::move(v));
  }
  return object;
}

Result<Value> Interpreter::EvalSlice(const Expr& e, const ScopePtr& scope) {
  VALET_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0], scope));
  std::optional<int64_t> bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (e.args[static_cast<size_t>(i) + 1] == nullptr) continue;
    VALET_ASSIGN_OR_RETURN(Value v, Eval(*e.args[static_cast<size_t>(i) + 1], scope));
    if (v.is_int()) {
      bounds[i] = v.AsInt();
    } else if (!v.is_none() && !v.is_undefined()) {
      return InvalidArgument(std::string("slice bounds must be integers, not ") + v.KindName());
    }
  }
  return SliceValue(object, bounds[0], bounds[1], bounds[2]);
}

Result<Value> Interpreter::EvalCall(const Expr& e, const ScopePtr& scope) {
  VALET_ASSIGN_OR_RETURN(Value callee, Eval(*e.args[0], scope));
  if (!callee.is_callable()) {
    const Expr& c = *e.args[0];
    const std::string what = c.kind == Expr::Kind::kName ? "'" + c.name + "'"
                             : c.kind == Expr::Kind::kAttr ? "'" + c.name + "'"
                                                           : "the expression";
    if (callee.is_undefined()) return InvalidArgument(what + " is undefined and cannot be called");
    return InvalidArgument(what + " is a " + callee.KindName() + ", not a function");
  }
  VALET_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
  return callee.Call(args);
}

}  // namespace valet::chat
