// Tree-walking evaluator. Scoping follows Jinja2: a for loop's body gets a
// fresh scope each iteration (which is why templates use namespace()),
// `if` bodies do not, macros see the template's top-level names.
#include "chat/jinja_eval.h"

#include <cmath>
#include <ctime>

#include "chat/jinja_builtins.h"

namespace ember::chat {
namespace {

enum class Flow { Normal, Break, Continue };

bool is_global_function(const std::string& name) {
  return name == "raise_exception" || name == "range" || name == "namespace" || name == "dict" ||
         name == "strftime_now";
}

class Renderer {
 public:
  Renderer(const RenderEnv& env, std::string* out) : env_(env), lim_(env.limits), out_(out) {}

  Status run(const Program& prog, const Value& context) {
    scopes_.emplace_back();
    if (context.is_mapping())
      for (const auto& kv : *context.dict) scopes_[0].push_back(kv);
    Flow flow;
    return exec_body(prog.body, &flow);
  }

 private:
  using Scope = std::vector<std::pair<std::string, Value>>;

  // --- names -----------------------------------------------------------------
  Value* lookup(const std::string& name) {
    for (size_t k = scopes_.size(); k-- > base_;)
      for (auto& kv : scopes_[k])
        if (kv.first == name) return &kv.second;
    if (base_ > 0)
      for (auto& kv : scopes_[0])
        if (kv.first == name) return &kv.second;
    return nullptr;
  }
  void assign(const std::string& name, Value v) {
    for (auto& kv : scopes_.back())
      if (kv.first == name) { kv.second = std::move(v); return; }
    scopes_.back().emplace_back(name, std::move(v));
  }

  Status emit(const std::string& s) {
    if (out_->size() + s.size() > lim_.max_output_bytes)
      return Status::error(EMBER_ERR_NO_MEMORY, "template output exceeds the limit of %zu bytes",
                           lim_.max_output_bytes);
    *out_ += s;
    return Status::ok();
  }

  // --- statements ------------------------------------------------------------
  Status exec_body(const Body& body, Flow* flow) {
    *flow = Flow::Normal;
    for (const Node* n : body) {
      EMBER_TRY(exec(*n, flow));
      if (*flow != Flow::Normal) return Status::ok();
    }
    return Status::ok();
  }

  // Renders `body` into a string of its own (block set, filter blocks, macros).
  Status capture(const Body& body, std::string* text, Flow* flow) {
    std::string* saved = out_;
    out_ = text;
    Status s = exec_body(body, flow);
    out_ = saved;
    return s;
  }

  Status exec(const Node& n, Flow* flow) {
    switch (n.kind) {
      case Node::Kind::Text: return emit(n.text);
      case Node::Kind::Output: {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
        return emit(to_str(v));
      }
      case Node::Kind::If: {
        for (const auto& br : n.branches) {
          EMBER_ASSIGN_OR_RETURN(Value c, eval(*br.first));
          if (truthy(c)) return exec_body(br.second, flow);
        }
        return exec_body(n.else_body, flow);
      }
      case Node::Kind::For: return exec_for(n, flow);
      case Node::Kind::Set: {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
        if (!n.target_attr.empty()) {
          Value* ns = lookup(n.targets[0]);
          if (!ns || ns->kind != Value::Kind::Namespace)
            return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                 "template %d:%d: 'set %s.%s': only a namespace() takes attribute assignment", n.line,
                                 n.col, n.targets[0].c_str(), n.target_attr.c_str());
          ns->set(n.target_attr, std::move(v));
          return Status::ok();
        }
        return bind(n.targets, v, n);
      }
      case Node::Kind::SetBlock: {
        std::string text;
        Flow f;
        EMBER_TRY(capture(n.body, &text, &f));
        assign(n.targets[0], Value::string(std::move(text)));
        return Status::ok();
      }
      case Node::Kind::Macro: {
        Value m;
        m.kind = Value::Kind::Macro;
        m.macro = n.macro;
        assign(n.macro->name, std::move(m));
        return Status::ok();
      }
      case Node::Kind::Break: case Node::Kind::Continue:
        if (loop_depth_ == 0)
          return Status::error(EMBER_ERR_FORMAT, "template %d:%d: '%s' outside a loop", n.line, n.col,
                               n.kind == Node::Kind::Break ? "break" : "continue");
        *flow = n.kind == Node::Kind::Break ? Flow::Break : Flow::Continue;
        return Status::ok();
      case Node::Kind::FilterBlock: {
        std::string text;
        Flow f;
        EMBER_TRY(capture(n.body, &text, &f));
        Expr* hole = n.expr;  // the innermost filter's subject: filled per use (a render is single-threaded)
        while (hole->op == Expr::Op::Filter) hole = hole->args[0];
        hole->literal = Value::string(std::move(text));
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
        return emit(to_str(v));
      }
      case Node::Kind::Transparent: return exec_body(n.body, flow);
    }
    return Status::ok();
  }

  Status bind(const std::vector<std::string>& targets, const Value& v, const Node& n) {
    if (targets.size() == 1) {
      assign(targets[0], v);
      return Status::ok();
    }
    if (!v.is_list() || v.list->size() != targets.size())
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "template %d:%d: cannot unpack a %s into %zu names", n.line,
                           n.col, kind_name(v.kind), targets.size());
    for (size_t k = 0; k < targets.size(); ++k) assign(targets[k], (*v.list)[k]);
    return Status::ok();
  }

  Status exec_for(const Node& n, Flow* flow) {
    EMBER_ASSIGN_OR_RETURN(Value seq, eval(*n.expr));
    List items;
    switch (seq.kind) {
      case Value::Kind::Undefined: break;
      case Value::Kind::List: items = *seq.list; break;
      case Value::Kind::Dict:
        for (const auto& kv : *seq.dict) items.push_back(Value::string(kv.first));
        break;
      case Value::Kind::String:
        for (auto& c : utf8_chars(seq.s)) items.push_back(Value::string(std::move(c)));
        break;
      default:
        return Status::error(EMBER_ERR_INVALID_ARGUMENT, "template %d:%d: a %s is not iterable", n.line, n.col,
                             kind_name(seq.kind));
    }
    if (n.cond) {  // `for x in xs if cond`: loop.* counts the kept items
      List kept;
      for (const auto& it : items) {
        EMBER_TRY(tick(n));
        scopes_.emplace_back();
        Status s = bind(n.targets, it, n);
        Result<Value> c = s.is_ok() ? eval(*n.cond) : Result<Value>(s);
        scopes_.pop_back();
        if (!c.is_ok()) return c.status();
        if (truthy(c.value())) kept.push_back(it);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(n.else_body, flow);
    ++loop_depth_;
    const int64_t len = int64_t(items.size());
    for (int64_t k = 0; k < len; ++k) {
      EMBER_TRY(tick(n));
      scopes_.emplace_back();
      Value loop = Value::make_dict({
          {"index", Value::integer(k + 1)},
          {"index0", Value::integer(k)},
          {"revindex", Value::integer(len - k)},
          {"revindex0", Value::integer(len - k - 1)},
          {"first", Value::boolean(k == 0)},
          {"last", Value::boolean(k == len - 1)},
          {"length", Value::integer(len)},
          {"depth", Value::integer(1)},
          {"depth0", Value::integer(0)},
          {"previtem", k > 0 ? items[size_t(k - 1)] : Value::undefined("previtem")},
          {"nextitem", k + 1 < len ? items[size_t(k + 1)] : Value::undefined("nextitem")},
      });
      assign("loop", std::move(loop));
      Status s = bind(n.targets, items[size_t(k)], n);
      Flow f = Flow::Normal;
      if (s.is_ok()) s = exec_body(n.body, &f);
      scopes_.pop_back();
      if (!s.is_ok()) {
        --loop_depth_;
        return s;
      }
      if (f == Flow::Break) break;
    }
    --loop_depth_;
    *flow = Flow::Normal;
    return Status::ok();
  }

  Status tick(const Node& n) {
    if (++iterations_ > lim_.max_iterations)
      return Status::error(EMBER_ERR_NO_MEMORY, "template %d:%d: more than %llu loop iterations", n.line, n.col,
                           static_cast<unsigned long long>(lim_.max_iterations));
    return Status::ok();
  }

  // --- expressions -----------------------------------------------------------
  Status args_of(const Expr& e, size_t first, Args* a) {
    for (size_t k = first; k < e.args.size(); ++k) {
      EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.args[k]));
      a->pos.push_back(std::move(v));
    }
    for (const auto& kv : e.kwargs) {
      EMBER_ASSIGN_OR_RETURN(Value v, eval(*kv.second));
      a->kw.emplace_back(kv.first, std::move(v));
    }
    return Status::ok();
  }

  Status check_string(const std::string& s, const Expr& e) {
    if (s.size() > lim_.max_output_bytes)
      return at_error(e, EMBER_ERR_NO_MEMORY, "a string grows past the output limit of %zu bytes",
                      lim_.max_output_bytes);
    return Status::ok();
  }
  Status check_list(size_t n, const Expr& e) {
    if (n > lim_.max_list_items)
      return at_error(e, EMBER_ERR_NO_MEMORY, "a list grows past %zu items", lim_.max_list_items);
    return Status::ok();
  }

  Result<Value> eval(const Expr& e) {
    switch (e.op) {
      case Expr::Op::Literal: return e.literal;
      case Expr::Op::Name: {
        if (Value* v = lookup(e.name)) return *v;
        if (is_global_function(e.name)) {  // `strftime_now is defined`; calls go to call_global
          Value f;
          f.kind = Value::Kind::Macro;
          f.s = e.name;
          return f;
        }
        return Value::undefined(e.name);
      }
      case Expr::Op::GetAttr: {
        EMBER_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
        if (obj.is_undefined())
          return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "'%s' is undefined (reading .%s)", obj.s.c_str(),
                          e.name.c_str());
        if (obj.is_mapping()) {
          const Value* f = obj.find(e.name);
          return f ? *f : Value::undefined(e.name);
        }
        return Value::undefined(e.name);
      }
      case Expr::Op::GetItem: {
        EMBER_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
        EMBER_ASSIGN_OR_RETURN(Value key, eval(*e.args[1]));
        return subscript(obj, key, e);
      }
      case Expr::Op::Slice: return eval_slice(e);
      case Expr::Op::Call: return eval_call(e);
      case Expr::Op::Filter: {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
        Args a;
        EMBER_TRY(args_of(e, 1, &a));
        return apply_filter(e.name, v, a, e, lim_);
      }
      case Expr::Op::Test: {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
        Args a;
        EMBER_TRY(args_of(e, 1, &a));
        EMBER_ASSIGN_OR_RETURN(bool r, apply_test(e.name, v, a, e));
        return Value::boolean(r != e.negated);
      }
      case Expr::Op::Unary: {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (v.kind == Value::Kind::Int) {
          if (e.name == "+") return v;
          if (v.i == INT64_MIN) return at_error(e, EMBER_ERR_UNSUPPORTED, "integer overflow");
          return Value::integer(-v.i);
        }
        if (v.kind == Value::Kind::Float) return Value::real(e.name == "-" ? -v.f : v.f);
        return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "unary '%s' of a %s", e.name.c_str(), kind_name(v.kind));
      }
      case Expr::Op::And: {
        EMBER_ASSIGN_OR_RETURN(Value l, eval(*e.args[0]));
        if (!truthy(l)) return l;
        return eval(*e.args[1]);
      }
      case Expr::Op::Or: {
        EMBER_ASSIGN_OR_RETURN(Value l, eval(*e.args[0]));
        if (truthy(l)) return l;
        return eval(*e.args[1]);
      }
      case Expr::Op::Cond: {
        EMBER_ASSIGN_OR_RETURN(Value c, eval(*e.args[1]));
        if (truthy(c)) return eval(*e.args[0]);
        if (e.args[2]) return eval(*e.args[2]);
        return Value::undefined();
      }
      case Expr::Op::List: {
        List items;
        for (const Expr* x : e.args) {
          EMBER_ASSIGN_OR_RETURN(Value v, eval(*x));
          items.push_back(std::move(v));
        }
        return Value::make_list(std::move(items));
      }
      case Expr::Op::Dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          EMBER_ASSIGN_OR_RETURN(Value key, eval(*e.args[k]));
          EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.args[k + 1]));
          if (!key.is_string())
            return at_error(e, EMBER_ERR_UNSUPPORTED, "dict keys other than strings (%s) are not supported",
                            kind_name(key.kind));
          d.set(key.s, std::move(v));
        }
        return d;
      }
      case Expr::Op::Binary: return eval_binary(e);
    }
    return at_error(e, EMBER_ERR_INTERNAL, "unknown expression");
  }

  Result<Value> subscript(const Value& obj, const Value& key, const Expr& e) {
    if (obj.is_undefined())
      return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "'%s' is undefined (reading [%s])", obj.s.c_str(),
                      to_repr(key).c_str());
    if (obj.is_mapping()) {
      if (!key.is_string()) return Value::undefined();
      const Value* f = obj.find(key.s);
      return f ? *f : Value::undefined(key.s);
    }
    if (obj.is_list() || obj.is_string()) {
      if (key.kind != Value::Kind::Int) return Value::undefined();
      if (obj.is_list()) {
        int64_t n = int64_t(obj.list->size()), i = key.i < 0 ? key.i + n : key.i;
        if (i < 0 || i >= n) return Value::undefined();
        return (*obj.list)[size_t(i)];
      }
      std::vector<std::string> cps = utf8_chars(obj.s);
      int64_t n = int64_t(cps.size()), i = key.i < 0 ? key.i + n : key.i;
      if (i < 0 || i >= n) return Value::undefined();
      return Value::string(cps[size_t(i)]);
    }
    return Value::undefined();
  }

  Result<Value> eval_slice(const Expr& e) {
    EMBER_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
    int64_t parts[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      if (!e.args[size_t(k) + 1]) continue;
      EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.args[size_t(k) + 1]));
      if (v.is_none()) continue;
      if (v.kind != Value::Kind::Int) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "slice indices must be integers");
      parts[k] = v.i;
      given[k] = true;
    }
    int64_t step = parts[2];
    if (step == 0) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    std::vector<std::string> cps;
    int64_t n;
    if (obj.is_list()) {
      n = int64_t(obj.list->size());
    } else if (obj.is_string()) {
      cps = utf8_chars(obj.s);
      n = int64_t(cps.size());
    } else {
      return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "cannot slice a %s", kind_name(obj.kind));
    }
    // Python's slice.indices.
    auto clampi = [&](int64_t v, bool has, int64_t def) {
      if (!has) return def;
      if (v < 0) v += n;
      if (step > 0) return v < 0 ? 0 : v > n ? n : v;
      return v < -1 ? -1 : v > n - 1 ? n - 1 : v;
    };
    int64_t start = clampi(parts[0], given[0], step > 0 ? 0 : n - 1);
    int64_t stop = clampi(parts[1], given[1], step > 0 ? n : -1);
    List items;
    std::string s;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (obj.is_list()) items.push_back((*obj.list)[size_t(i)]);
      else s += cps[size_t(i)];
    }
    if (obj.is_list()) return Value::make_list(std::move(items));
    return Value::string(std::move(s));
  }

  Result<Value> eval_call(const Expr& e) {
    const Expr& callee = *e.args[0];
    Args a;
    if (callee.op == Expr::Op::GetAttr) {
      EMBER_ASSIGN_OR_RETURN(Value obj, eval(*callee.args[0]));
      if (obj.is_undefined())
        return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "'%s' is undefined (calling .%s)", obj.s.c_str(),
                        callee.name.c_str());
      const Value* member = obj.is_mapping() ? obj.find(callee.name) : nullptr;
      if (member && member->kind == Value::Kind::Macro) {
        EMBER_TRY(args_of(e, 1, &a));
        return call_macro(*member->macro, a, e);
      }
      EMBER_TRY(args_of(e, 1, &a));
      bool handled = false;
      Result<Value> r = call_method(obj, callee.name, a, e, lim_, &handled);
      if (handled) return r;
      return at_error(e, EMBER_ERR_UNSUPPORTED, "method '%s' of a %s is not supported", callee.name.c_str(),
                      kind_name(obj.kind));
    }
    if (callee.op == Expr::Op::Name) {
      Value* v = lookup(callee.name);
      if (v && v->kind == Value::Kind::Macro) {
        const MacroDef* m = v->macro;
        EMBER_TRY(args_of(e, 1, &a));
        return call_macro(*m, a, e);
      }
      if (!v) {
        EMBER_TRY(args_of(e, 1, &a));
        return call_global(callee.name, a, e);
      }
    }
    EMBER_ASSIGN_OR_RETURN(Value f, eval(callee));
    if (f.kind == Value::Kind::Macro) {
      EMBER_TRY(args_of(e, 1, &a));
      if (f.macro) return call_macro(*f.macro, a, e);
      return call_global(f.s, a, e);
    }
    return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "a %s is not callable", kind_name(f.kind));
  }

  Result<Value> call_macro(const MacroDef& m, const Args& a, const Expr& e) {
    if (call_depth_ >= lim_.max_call_depth)
      return at_error(e, EMBER_ERR_NO_MEMORY, "macro calls nest deeper than %d", lim_.max_call_depth);
    if (a.pos.size() > m.params.size())
      return at_error(e, EMBER_ERR_UNSUPPORTED, "macro '%s' called with %zu arguments for %zu parameters (varargs)",
                      m.name.c_str(), a.pos.size(), m.params.size());
    for (const auto& kv : a.kw) {
      bool known = false;
      for (const auto& p : m.params) known = known || p.first == kv.first;
      if (!known)
        return at_error(e, EMBER_ERR_UNSUPPORTED, "macro '%s' called with unknown keyword '%s' (kwargs)",
                        m.name.c_str(), kv.first.c_str());
    }
    size_t saved_base = base_;
    int saved_loop = loop_depth_;
    scopes_.emplace_back();
    base_ = scopes_.size() - 1;
    loop_depth_ = 0;
    ++call_depth_;
    Status s;
    for (size_t k = 0; k < m.params.size() && s.is_ok(); ++k) {
      const Value* given = a.get(k, m.params[k].first.c_str());
      if (given) {
        assign(m.params[k].first, *given);
      } else if (m.params[k].second) {
        Result<Value> d = eval(*m.params[k].second);
        if (d.is_ok()) assign(m.params[k].first, d.value());
        else s = d.status();
      } else {
        assign(m.params[k].first, Value::undefined(m.params[k].first));
      }
    }
    std::string text;
    Flow f;
    if (s.is_ok()) s = capture(m.body, &text, &f);
    --call_depth_;
    scopes_.resize(base_);
    base_ = saved_base;
    loop_depth_ = saved_loop;
    if (!s.is_ok()) return s;
    return Value::string(std::move(text));
  }

  Result<Value> call_global(const std::string& name, const Args& a, const Expr& e) {
    if (name == "raise_exception") {
      std::string msg = a.pos.empty() ? "" : to_str(a.pos[0]);
      return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "raise_exception: %s", msg.c_str());
    }
    if (name == "range") {
      int64_t r[3] = {0, 0, 1};
      for (const auto& v : a.pos)
        if (v.kind != Value::Kind::Int) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "range expects integers");
      if (a.pos.size() == 1) r[1] = a.pos[0].i;
      else if (a.pos.size() == 2 || a.pos.size() == 3) {
        r[0] = a.pos[0].i;
        r[1] = a.pos[1].i;
        if (a.pos.size() == 3) r[2] = a.pos[2].i;
      } else {
        return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "range takes 1 to 3 arguments");
      }
      if (r[2] == 0) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "range step cannot be zero");
      double count = std::ceil((double(r[1]) - double(r[0])) / double(r[2]));
      if (count > double(lim_.max_list_items))
        return at_error(e, EMBER_ERR_NO_MEMORY, "range of more than %zu items", lim_.max_list_items);
      List items;
      for (int64_t i = r[0]; r[2] > 0 ? i < r[1] : i > r[1]; i += r[2]) items.push_back(Value::integer(i));
      return Value::make_list(std::move(items));
    }
    if (name == "namespace" || name == "dict") {
      Value ns = Value::make_dict();
      if (name == "namespace") ns.kind = Value::Kind::Namespace;
      for (const auto& v : a.pos) {
        if (!v.is_mapping()) return at_error(e, EMBER_ERR_UNSUPPORTED, "%s() of a %s is not supported", name.c_str(), kind_name(v.kind));
        for (const auto& kv : *v.dict) ns.set(kv.first, kv.second);
      }
      for (const auto& kv : a.kw) ns.set(kv.first, kv.second);
      return ns;
    }
    if (name == "strftime_now") {
      if (a.pos.empty() || !a.pos[0].is_string())
        return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "strftime_now expects a format string");
      std::time_t t = env_.now_unix >= 0 ? std::time_t(env_.now_unix) : std::time(nullptr);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[256];
      size_t n = std::strftime(buf, sizeof buf, a.pos[0].s.c_str(), &tm);
      if (n == 0 && !a.pos[0].s.empty())
        return at_error(e, EMBER_ERR_UNSUPPORTED, "strftime_now: format '%s' gives nothing or too much",
                        a.pos[0].s.c_str());
      return Value::string(std::string(buf, n));
    }
    return at_error(e, EMBER_ERR_UNSUPPORTED, "function '%s' is not supported (or is undefined)", name.c_str());
  }

  Result<Value> eval_binary(const Expr& e) {
    using K = Value::Kind;
    EMBER_ASSIGN_OR_RETURN(Value l, eval(*e.args[0]));
    EMBER_ASSIGN_OR_RETURN(Value r, eval(*e.args[1]));
    const std::string& op = e.name;
    if (op == "==") return Value::boolean(equals(l, r));
    if (op == "!=") return Value::boolean(!equals(l, r));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      Result<int> c = compare(l, r);
      if (!c.is_ok()) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "'%s': %s", op.c_str(), c.status().message().c_str());
      int x = c.value();
      return Value::boolean(op == "<" ? x < 0 : op == ">" ? x > 0 : op == "<=" ? x <= 0 : x >= 0);
    }
    if (op == "in" || op == "not in") {
      Args a;
      a.pos.push_back(r);
      bool found = false;
      if (!r.is_undefined()) {
        EMBER_ASSIGN_OR_RETURN(found, apply_test("in", l, a, e));
      }
      return Value::boolean(found == (op == "in"));
    }
    if (op == "~") {
      std::string s = to_str(l) + to_str(r);
      EMBER_TRY(check_string(s, e));
      return Value::string(std::move(s));
    }
    if (l.is_undefined() || r.is_undefined())
      return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "'%s' is undefined (operand of '%s')",
                      (l.is_undefined() ? l : r).s.c_str(), op.c_str());
    bool lnum = l.is_number() || l.kind == K::Bool, rnum = r.is_number() || r.kind == K::Bool;
    if (op == "+") {
      if (l.is_string() && r.is_string()) {
        // Markup + str escapes the str (markupsafe), and stays a Markup.
        std::string s = (l.safe || !r.safe ? l.s : html_escape(l.s)) + (r.safe || !l.safe ? r.s : html_escape(r.s));
        EMBER_TRY(check_string(s, e));
        Value v = Value::string(std::move(s));
        v.safe = l.safe || r.safe;
        return v;
      }
      if (l.is_list() && r.is_list()) {
        EMBER_TRY(check_list(l.list->size() + r.list->size(), e));
        List items = *l.list;
        items.insert(items.end(), r.list->begin(), r.list->end());
        return Value::make_list(std::move(items));
      }
    }
    if (op == "*" && (((l.is_string() || l.is_list()) && r.kind == K::Int) || ((r.is_string() || r.is_list()) && l.kind == K::Int))) {
      const Value& seq = l.kind == K::Int ? r : l;
      int64_t times = l.kind == K::Int ? l.i : r.i;
      if (times < 0) times = 0;
      if (seq.is_string()) {
        if (!seq.s.empty() && uint64_t(times) > lim_.max_output_bytes / seq.s.size())
          return at_error(e, EMBER_ERR_NO_MEMORY, "a string grows past the output limit of %zu bytes", lim_.max_output_bytes);
        std::string s;
        for (int64_t k = 0; k < times; ++k) s += seq.s;
        return Value::string(std::move(s));
      }
      if (!seq.list->empty() && uint64_t(times) > lim_.max_list_items / seq.list->size())
        return at_error(e, EMBER_ERR_NO_MEMORY, "a list grows past %zu items", lim_.max_list_items);
      List items;
      for (int64_t k = 0; k < times; ++k) items.insert(items.end(), seq.list->begin(), seq.list->end());
      return Value::make_list(std::move(items));
    }
    if (op == "%" && l.is_string())
      return at_error(e, EMBER_ERR_UNSUPPORTED, "printf-style string formatting ('%%') is not supported");
    if (!lnum || !rnum)
      return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "unsupported operand types for '%s': %s and %s", op.c_str(),
                      kind_name(l.kind), kind_name(r.kind));
    bool ints = l.kind != K::Float && r.kind != K::Float;
    int64_t li = l.kind == K::Bool ? l.b : l.i, ri = r.kind == K::Bool ? r.b : r.i;
    double lf = l.kind == K::Float ? l.f : double(li), rf = r.kind == K::Float ? r.f : double(ri);
    if (op == "/") {
      if (rf == 0) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "division by zero");
      return Value::real(lf / rf);
    }
    if (op == "//" || op == "%") {
      if (ints ? ri == 0 : rf == 0) return at_error(e, EMBER_ERR_INVALID_ARGUMENT, "division by zero");
      if (ints) {
        if (li == INT64_MIN && ri == -1) return at_error(e, EMBER_ERR_UNSUPPORTED, "integer overflow");
        int64_t q = li / ri, m = li % ri;
        if (m != 0 && ((m < 0) != (ri < 0))) { --q; m += ri; }  // Python floors
        return Value::integer(op == "//" ? q : m);
      }
      double m = std::fmod(lf, rf);
      if (m != 0 && ((m < 0) != (rf < 0))) m += rf;
      return Value::real(op == "//" ? std::floor(lf / rf) : m);
    }
    if (op == "**") {
      if (ints && ri >= 0) {
        int64_t acc = 1;
        for (int64_t k = 0; k < ri; ++k)
          if (__builtin_mul_overflow(acc, li, &acc)) return at_error(e, EMBER_ERR_UNSUPPORTED, "integer overflow");
        return Value::integer(acc);
      }
      return Value::real(std::pow(lf, rf));
    }
    if (ints) {
      int64_t out = 0;
      bool over = op == "+" ? __builtin_add_overflow(li, ri, &out)
                : op == "-" ? __builtin_sub_overflow(li, ri, &out)
                            : __builtin_mul_overflow(li, ri, &out);
      if (over) return at_error(e, EMBER_ERR_UNSUPPORTED, "integer overflow in '%s'", op.c_str());
      return Value::integer(out);
    }
    return Value::real(op == "+" ? lf + rf : op == "-" ? lf - rf : lf * rf);
  }

  const RenderEnv& env_;
  const Limits& lim_;
  std::string* out_;
  std::vector<Scope> scopes_;
  size_t base_ = 0;  // the innermost macro's first scope; scopes below it (but 0) are hidden
  int loop_depth_ = 0;
  int call_depth_ = 0;
  uint64_t iterations_ = 0;
};

}  // namespace

Status render_program(const Program& prog, const Value& context, const RenderEnv& env, std::string* out) {
  out->clear();
  Renderer r(env, out);
  return r.run(prog, context);
}

}  // namespace ember::chat
