// Lexer and recursive-descent parser for the chat-template subset.
// Whitespace follows Jinja2 with trim_blocks and lstrip_blocks on, as
// Hugging Face renders chat templates.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "chat/jinja_ast.h"

namespace ember::chat {
namespace {

struct Token {
  enum Kind { Name, Str, Int, Float, Op, End } kind = End;
  std::string text;  // Name/Op spelling; Str's decoded bytes
  int64_t i = 0;
  double f = 0;
  int line = 0, col = 0;
};

struct Item {
  enum Kind { Text, Output, Tag } kind = Text;
  std::string text;
  std::vector<Token> toks;  // ends with an End token
  int line = 0, col = 0;
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class Lexer {
 public:
  explicit Lexer(const std::string& s) : src_(s) {
    line_starts_.push_back(0);
    for (size_t k = 0; k < s.size(); ++k)
      if (s[k] == '\n') line_starts_.push_back(k + 1);
  }

  Status run(std::vector<Item>* items) {
    size_t pos = 0;
    bool strip_next = false;  // the previous tag ended with '-'
    while (pos <= src_.size()) {
      size_t start = find_open(pos);
      std::string text = src_.substr(pos, (start == std::string::npos ? src_.size() : start) - pos);
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && is_ws(text[k])) ++k;
        text.erase(0, k);
      }
      if (start == std::string::npos) {
        push_text(items, std::move(text), pos);
        break;
      }
      char type = src_[start + 1];
      char mod = start + 2 < src_.size() ? src_[start + 2] : 0;
      if (mod == '-') {
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      } else if (type != '{' && mod != '+') {
        // lstrip_blocks: spaces and tabs between a line's start and a block or comment tag.
        size_t nl = text.rfind('\n');
        size_t from = nl == std::string::npos ? 0 : nl + 1;
        bool line_start = nl != std::string::npos || pos == 0 || src_[pos - 1] == '\n';
        if (line_start && text.find_first_not_of(" \t", from) == std::string::npos) text.erase(from);
      }
      push_text(items, std::move(text), pos);
      size_t body = start + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      size_t end = 0;
      bool strip_after = false;
      if (type == '#') {
        size_t close = src_.find("#}", body);
        if (close == std::string::npos) return error(start, EMBER_ERR_FORMAT, "comment '{#' is never closed");
        strip_after = close > body && src_[close - 1] == '-';
        end = close + 2;
      } else {
        Item item;
        item.kind = type == '{' ? Item::Output : Item::Tag;
        position(start, &item.line, &item.col);
        EMBER_TRY(tokenize(body, type == '{' ? '}' : '%', &item.toks, &end, &strip_after));
        items->push_back(std::move(item));
      }
      if (!strip_after && type != '{' && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
      strip_next = strip_after;
      pos = end;
      if (pos == src_.size()) break;
    }
    return Status::ok();
  }

  void position(size_t off, int* line, int* col) const {
    size_t l = size_t(std::upper_bound(line_starts_.begin(), line_starts_.end(), off) - line_starts_.begin());
    *line = int(l);
    *col = int(off - line_starts_[l - 1]) + 1;
  }

 private:
  Status error(size_t off, ember_status code, const char* what) const {
    int l, c;
    position(off, &l, &c);
    return Status::error(code, "template %d:%d: %s", l, c, what);
  }

  size_t find_open(size_t pos) const {
    for (size_t k = src_.find('{', pos); k != std::string::npos; k = src_.find('{', k + 1)) {
      if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    }
    return std::string::npos;
  }

  void push_text(std::vector<Item>* items, std::string text, size_t off) {
    if (text.empty()) return;
    Item item;
    item.kind = Item::Text;
    item.text = std::move(text);
    items->push_back(std::move(item));
    (void)off;
  }

  // Tokens from `p` up to the closing "}}" or "%}" (close is '}' or '%').
  Status tokenize(size_t p, char close, std::vector<Token>* toks, size_t* end, bool* strip_after) {
    int depth = 0;  // open brackets: "}}" inside a dict literal is not the end
    size_t tag_start = p;
    while (true) {
      while (p < src_.size() && is_ws(src_[p])) ++p;
      if (p >= src_.size())
        return error(tag_start, EMBER_ERR_FORMAT, close == '}' ? "'{{' is never closed" : "'{%' is never closed");
      char c = src_[p];
      if (depth == 0) {
        if (c == '-' && p + 2 < src_.size() + 0 && src_[p + 1] == close && src_[p + 2] == '}') {
          *strip_after = true;
          *end = p + 3;
          break;
        }
        if (c == close && p + 1 < src_.size() && src_[p + 1] == '}') {
          *end = p + 2;
          break;
        }
      }
      Token t;
      position(p, &t.line, &t.col);
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t q = p;
        while (q < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) ++q;
        t.kind = Token::Name;
        t.text = src_.substr(p, q - p);
        p = q;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t q = p;
        bool is_float = false;
        while (q < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) ++q;
        if (q + 1 < src_.size() && src_[q] == '.' && std::isdigit(static_cast<unsigned char>(src_[q + 1]))) {
          is_float = true;
          ++q;
          while (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) ++q;
        }
        if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
          size_t r = q + 1;
          if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
          if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r]))) {
            is_float = true;
            q = r;
            while (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) ++q;
          }
        }
        std::string num;
        for (size_t k = p; k < q; ++k)
          if (src_[k] != '_') num += src_[k];
        if (is_float) {
          t.kind = Token::Float;
          t.f = std::strtod(num.c_str(), nullptr);
        } else {
          t.kind = Token::Int;
          auto r = std::from_chars(num.data(), num.data() + num.size(), t.i);
          if (r.ec != std::errc()) return error(p, EMBER_ERR_UNSUPPORTED, "integer literal wider than 64 bits");
        }
        p = q;
      } else if (c == '\'' || c == '"') {
        size_t q = p + 1;
        std::string s;
        while (true) {
          if (q >= src_.size()) return error(p, EMBER_ERR_FORMAT, "string literal is never closed");
          char d = src_[q];
          if (d == c) { ++q; break; }
          if (d == '\\' && q + 1 < src_.size()) {
            char e = src_[q + 1];
            q += 2;
            switch (e) {
              case 'n': s += '\n'; break;
              case 't': s += '\t'; break;
              case 'r': s += '\r'; break;
              case '\\': s += '\\'; break;
              case '\'': s += '\''; break;
              case '"': s += '"'; break;
              case '\n': break;
              case 'u': case 'x': case 'U': case '0': case 'a': case 'b': case 'f': case 'v':
                return error(q - 2, EMBER_ERR_UNSUPPORTED, "string escape '\\u', '\\x', '\\0', '\\a', '\\b', '\\f' or '\\v'");
              default: s += '\\'; s += e; break;  // Python keeps unknown escapes as written
            }
            continue;
          }
          s += d;
          ++q;
        }
        t.kind = Token::Str;
        t.text = std::move(s);
        p = q;
      } else {
        static const char* const kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                           ">", "(", ")", "[", "]", "{", "}", ",", ":", ".", "|", "=", "!"};
        const char* op = nullptr;
        for (const char* o : kOps)
          if (src_.compare(p, std::strlen(o), o) == 0) { op = o; break; }
        if (!op || std::strcmp(op, "!") == 0) {
          char msg[64];
          std::snprintf(msg, sizeof msg, "unexpected character '%c'", c);
          return error(p, EMBER_ERR_FORMAT, msg);
        }
        t.kind = Token::Op;
        t.text = op;
        if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
        if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
        p += t.text.size();
      }
      toks->push_back(std::move(t));
    }
    Token e;
    position(p, &e.line, &e.col);
    toks->push_back(e);
    return Status::ok();
  }

  const std::string& src_;
  std::vector<size_t> line_starts_;
};

class Parser {
 public:
  Parser(std::vector<Item>& items, const Limits& limits, Program* prog)
      : items_(items), limits_(limits), prog_(prog) {}

  Status run() {
    std::string end;
    EMBER_TRY(parse_body({}, &prog_->body, &end));
    return Status::ok();
  }

 private:
  // --- statements ----------------------------------------------------------
  Node* node(Node::Kind k, int line, int col) {
    prog_->nodes.push_back(std::make_unique<Node>());
    Node* n = prog_->nodes.back().get();
    n->kind = k;
    n->line = line;
    n->col = col;
    return n;
  }

  Status count_node() {
    if (++count_ > limits_.max_nodes)
      return Status::error(EMBER_ERR_NO_MEMORY, "template has more than %zu nodes", limits_.max_nodes);
    return Status::ok();
  }

  // Parses items into `body` until a tag whose name is in `stops` (returned
  // in *end, its tokens positioned after the name), or the end of input
  // when `stops` is empty.
  Status parse_body(const std::vector<const char*>& stops, Body* body, std::string* end) {
    if (++depth_ > limits_.max_parse_depth)
      return Status::error(EMBER_ERR_NO_MEMORY, "template blocks nest deeper than %d", limits_.max_parse_depth);
    while (idx_ < items_.size()) {
      Item& it = items_[idx_++];
      EMBER_TRY(count_node());
      if (it.kind == Item::Text) {
        Node* n = node(Node::Kind::Text, it.line, it.col);
        n->text = std::move(it.text);
        body->push_back(n);
        continue;
      }
      toks_ = &it.toks;
      tp_ = 0;
      if (it.kind == Item::Output) {
        Node* n = node(Node::Kind::Output, it.line, it.col);
        EMBER_TRY(parse_expr(&n->expr));
        EMBER_TRY(expect_end("'}}'"));
        body->push_back(n);
        continue;
      }
      const Token& t = cur();
      if (t.kind != Token::Name) return syntax(t, "expected a statement name after '{%'");
      std::string name = t.text;
      for (const char* s : stops) {
        if (name == s) {
          ++tp_;
          *end = name;
          --depth_;
          return Status::ok();
        }
      }
      ++tp_;
      Node* n = nullptr;
      EMBER_TRY(parse_statement(name, t, &n));
      if (n) body->push_back(n);
    }
    if (!stops.empty()) {
      std::string want;
      for (const char* s : stops) want += std::string(want.empty() ? "" : " or ") + "'" + s + "'";
      return Status::error(EMBER_ERR_FORMAT, "template ends before %s", want.c_str());
    }
    --depth_;
    return Status::ok();
  }

  Status parse_statement(const std::string& name, const Token& at, Node** out) {
    int line = at.line, col = at.col;
    if (name == "if") {
      Node* n = node(Node::Kind::If, line, col);
      Expr* cond;
      EMBER_TRY(parse_expr(&cond));
      EMBER_TRY(expect_end("'%}'"));
      while (true) {
        Body b;
        std::string end;
        EMBER_TRY(parse_body({"elif", "else", "endif"}, &b, &end));
        n->branches.emplace_back(cond, std::move(b));
        if (end == "elif") {
          EMBER_TRY(parse_expr(&cond));
          EMBER_TRY(expect_end("'%}'"));
          continue;
        }
        if (end == "else") {
          EMBER_TRY(expect_end("'%}'"));
          EMBER_TRY(parse_body({"endif"}, &n->else_body, &end));
        }
        EMBER_TRY(expect_end("'%}'"));
        break;
      }
      *out = n;
      return Status::ok();
    }
    if (name == "for") {
      Node* n = node(Node::Kind::For, line, col);
      do {
        if (cur().kind != Token::Name) return syntax(cur(), "expected a loop variable name");
        n->targets.push_back(cur().text);
        ++tp_;
      } while (accept_op(","));
      if (!accept_name("in")) return syntax(cur(), "expected 'in' in a for loop");
      EMBER_TRY(parse_expr(&n->expr, /*allow_cond=*/false));
      if (accept_name("if")) EMBER_TRY(parse_or(&n->cond));
      if (accept_name("recursive")) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "template %d:%d: recursive for loops are not supported", line,
                             col);
      }
      EMBER_TRY(expect_end("'%}'"));
      std::string end;
      EMBER_TRY(parse_body({"else", "endfor"}, &n->body, &end));
      if (end == "else") {
        EMBER_TRY(expect_end("'%}'"));
        EMBER_TRY(parse_body({"endfor"}, &n->else_body, &end));
      }
      EMBER_TRY(expect_end("'%}'"));
      *out = n;
      return Status::ok();
    }
    if (name == "set") {
      Node* n = node(Node::Kind::Set, line, col);
      do {
        if (cur().kind != Token::Name) return syntax(cur(), "expected a variable name after 'set'");
        n->targets.push_back(cur().text);
        ++tp_;
        if (n->targets.size() == 1 && accept_op(".")) {
          if (cur().kind != Token::Name) return syntax(cur(), "expected an attribute name in 'set'");
          n->target_attr = cur().text;
          ++tp_;
          break;
        }
      } while (accept_op(","));
      if (accept_op("=")) {
        EMBER_TRY(parse_expr(&n->expr));
        if (cur().kind == Token::Op && cur().text == ",") {  // set a = 1, 2: a tuple
          Expr* tuple = expr(Expr::Op::List, *n->expr);
          tuple->args.push_back(n->expr);
          while (accept_op(",")) {
            Expr* e;
            EMBER_TRY(parse_expr(&e));
            tuple->args.push_back(e);
          }
          n->expr = tuple;
        }
        EMBER_TRY(expect_end("'%}'"));
      } else {
        if (n->targets.size() != 1 || !n->target_attr.empty())
          return syntax(cur(), "a block 'set' takes one variable name");
        n->kind = Node::Kind::SetBlock;
        if (cur().kind == Token::Op && cur().text == "|")
          return Status::error(EMBER_ERR_UNSUPPORTED, "template %d:%d: filtered block 'set' is not supported",
                               line, col);
        EMBER_TRY(expect_end("'%}'"));
        std::string end;
        EMBER_TRY(parse_body({"endset"}, &n->body, &end));
        EMBER_TRY(expect_end("'%}'"));
      }
      *out = n;
      return Status::ok();
    }
    if (name == "macro") {
      Node* n = node(Node::Kind::Macro, line, col);
      prog_->macros.push_back(std::make_unique<MacroDef>());
      MacroDef* m = prog_->macros.back().get();
      if (cur().kind != Token::Name) return syntax(cur(), "expected a macro name");
      m->name = cur().text;
      ++tp_;
      if (!accept_op("(")) return syntax(cur(), "expected '(' after the macro name");
      if (!accept_op(")")) {
        do {
          if (cur().kind != Token::Name) return syntax(cur(), "expected a macro parameter name");
          std::string p = cur().text;
          ++tp_;
          Expr* def = nullptr;
          if (accept_op("=")) EMBER_TRY(parse_expr(&def));
          m->params.emplace_back(p, def);
        } while (accept_op(","));
        if (!accept_op(")")) return syntax(cur(), "expected ')' after the macro parameters");
      }
      EMBER_TRY(expect_end("'%}'"));
      std::string end;
      EMBER_TRY(parse_body({"endmacro"}, &m->body, &end));
      if (cur().kind == Token::Name) ++tp_;  // endmacro name
      EMBER_TRY(expect_end("'%}'"));
      n->macro = m;
      *out = n;
      return Status::ok();
    }
    if (name == "break" || name == "continue") {
      Node* n = node(name == "break" ? Node::Kind::Break : Node::Kind::Continue, line, col);
      EMBER_TRY(expect_end("'%}'"));
      *out = n;
      return Status::ok();
    }
    if (name == "filter") {
      Node* n = node(Node::Kind::FilterBlock, line, col);
      // The filter is parsed as `<placeholder> | name(args)`; args[0] is
      // filled with the rendered body at evaluation.
      Expr* hole = expr(Expr::Op::Literal, at);
      if (cur().kind != Token::Name) return syntax(cur(), "expected a filter name after 'filter'");
      Expr* f = expr(Expr::Op::Filter, cur());
      f->name = cur().text;
      ++tp_;
      f->args.push_back(hole);
      if (accept_op("(")) EMBER_TRY(parse_args(f));
      EMBER_TRY(parse_filter_chain(f, &n->expr));
      EMBER_TRY(expect_end("'%}'"));
      std::string end;
      EMBER_TRY(parse_body({"endfilter"}, &n->body, &end));
      EMBER_TRY(expect_end("'%}'"));
      *out = n;
      return Status::ok();
    }
    if (name == "generation") {  // Hugging Face's assistant-mask marker: renders its body
      Node* n = node(Node::Kind::Transparent, line, col);
      EMBER_TRY(expect_end("'%}'"));
      std::string end;
      EMBER_TRY(parse_body({"endgeneration"}, &n->body, &end));
      EMBER_TRY(expect_end("'%}'"));
      *out = n;
      return Status::ok();
    }
    static const char* const kKnown[] = {"call", "include", "import", "from", "extends", "block", "raw", "with",
                                         "autoescape", "do", "trans"};
    for (const char* k : kKnown)
      if (name == k)
        return Status::error(EMBER_ERR_UNSUPPORTED, "template %d:%d: statement '%s' is not supported", line, col,
                             name.c_str());
    return Status::error(EMBER_ERR_FORMAT, "template %d:%d: unknown statement '%s'", line, col, name.c_str());
  }

  // --- expressions ---------------------------------------------------------
  const Token& cur() const { return (*toks_)[tp_]; }
  const Token& peek(size_t k) const { return (*toks_)[std::min(tp_ + k, toks_->size() - 1)]; }
  bool is_op(const char* op) const { return cur().kind == Token::Op && cur().text == op; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++tp_;
    return true;
  }
  bool is_name(const char* n) const { return cur().kind == Token::Name && cur().text == n; }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++tp_;
    return true;
  }
  Status syntax(const Token& t, const char* what) const {
    std::string near = t.kind == Token::End ? "end of tag" : "'" + t.text + "'";
    return Status::error(EMBER_ERR_FORMAT, "template %d:%d: %s (at %s)", t.line, t.col, what, near.c_str());
  }
  Status expect_end(const char* what) {
    if (cur().kind != Token::End) return syntax(cur(), (std::string("expected ") + what).c_str());
    return Status::ok();
  }
  Expr* expr(Expr::Op op, const Token& at) {
    prog_->exprs.push_back(std::make_unique<Expr>());
    Expr* e = prog_->exprs.back().get();
    e->op = op;
    e->line = at.line;
    e->col = at.col;
    return e;
  }
  Expr* expr(Expr::Op op, const Expr& at) {
    Token t;
    t.line = at.line;
    t.col = at.col;
    return expr(op, t);
  }
  Status enter() {
    EMBER_TRY(count_node());
    if (++depth_ > limits_.max_parse_depth)
      return Status::error(EMBER_ERR_NO_MEMORY, "template %d:%d: expression nests deeper than %d", cur().line,
                           cur().col, limits_.max_parse_depth);
    return Status::ok();
  }

  Status parse_expr(Expr** out, bool allow_cond = true) {
    EMBER_TRY(enter());
    Expr* e;
    EMBER_TRY(parse_or(&e));
    while (allow_cond && is_name("if")) {
      Token at = cur();
      ++tp_;
      Expr* c = expr(Expr::Op::Cond, at);
      c->args.push_back(e);
      Expr* test;
      EMBER_TRY(parse_or(&test));
      c->args.push_back(test);
      Expr* other = nullptr;
      if (accept_name("else")) EMBER_TRY(parse_or(&other));
      c->args.push_back(other);
      e = c;
    }
    --depth_;
    *out = e;
    return Status::ok();
  }

  Status parse_or(Expr** out) {
    Expr* e;
    EMBER_TRY(parse_and(&e));
    while (is_name("or")) {
      Expr* b = expr(Expr::Op::Or, cur());
      ++tp_;
      b->args.push_back(e);
      Expr* r;
      EMBER_TRY(parse_and(&r));
      b->args.push_back(r);
      e = b;
    }
    *out = e;
    return Status::ok();
  }

  Status parse_and(Expr** out) {
    Expr* e;
    EMBER_TRY(parse_not(&e));
    while (is_name("and")) {
      Expr* b = expr(Expr::Op::And, cur());
      ++tp_;
      b->args.push_back(e);
      Expr* r;
      EMBER_TRY(parse_not(&r));
      b->args.push_back(r);
      e = b;
    }
    *out = e;
    return Status::ok();
  }

  Status parse_not(Expr** out) {
    if (is_name("not")) {
      EMBER_TRY(enter());
      Expr* u = expr(Expr::Op::Unary, cur());
      u->name = "not";
      ++tp_;
      Expr* a;
      EMBER_TRY(parse_not(&a));
      u->args.push_back(a);
      --depth_;
      *out = u;
      return Status::ok();
    }
    return parse_compare(out);
  }

  Status parse_compare(Expr** out) {
    Expr* e;
    EMBER_TRY(parse_math1(&e));
    while (true) {
      std::string op;
      Token at = cur();
      if (cur().kind == Token::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
           cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        ++tp_;
      } else if (is_name("in")) {
        op = "in";
        ++tp_;
      } else if (is_name("not") && peek(1).kind == Token::Name && peek(1).text == "in") {
        op = "not in";
        tp_ += 2;
      } else {
        break;
      }
      Expr* b = expr(Expr::Op::Binary, at);
      b->name = op;
      b->args.push_back(e);
      Expr* r;
      EMBER_TRY(parse_math1(&r));
      b->args.push_back(r);
      e = b;
    }
    *out = e;
    return Status::ok();
  }

  Status parse_binary_level(Expr** out, const std::vector<const char*>& ops, Status (Parser::*next)(Expr**)) {
    Expr* e;
    EMBER_TRY((this->*next)(&e));
    while (true) {
      const char* found = nullptr;
      for (const char* o : ops)
        if (is_op(o)) found = o;
      if (!found) break;
      Expr* b = expr(Expr::Op::Binary, cur());
      b->name = found;
      ++tp_;
      b->args.push_back(e);
      Expr* r;
      EMBER_TRY((this->*next)(&r));
      b->args.push_back(r);
      e = b;
    }
    *out = e;
    return Status::ok();
  }
  Status parse_math1(Expr** out) { return parse_binary_level(out, {"+", "-"}, &Parser::parse_concat); }
  Status parse_concat(Expr** out) { return parse_binary_level(out, {"~"}, &Parser::parse_math2); }
  Status parse_math2(Expr** out) { return parse_binary_level(out, {"*", "/", "//", "%"}, &Parser::parse_pow); }
  Status parse_pow(Expr** out) { return parse_binary_level(out, {"**"}, &Parser::parse_unary); }

  Status parse_unary(Expr** out) { return parse_unary_impl(out, true); }
  // Jinja2: `-x | f` is `(-x) | f`: the operand of a sign takes no filters.
  Status parse_unary_impl(Expr** out, bool with_filter) {
    EMBER_TRY(enter());
    Expr* e;
    if (is_op("-") || is_op("+")) {
      e = expr(Expr::Op::Unary, cur());
      e->name = cur().text;
      ++tp_;
      Expr* a;
      EMBER_TRY(parse_unary_impl(&a, false));
      e->args.push_back(a);
    } else {
      EMBER_TRY(parse_primary(&e));
      EMBER_TRY(parse_postfix(e, &e));
    }
    if (with_filter) EMBER_TRY(parse_filter_chain(e, &e));
    --depth_;
    *out = e;
    return Status::ok();
  }

  Status parse_args(Expr* call) {
    // after '(' : positional and keyword arguments up to ')'
    if (accept_op(")")) return Status::ok();
    do {
      if (is_op(")")) break;  // trailing comma
      if (cur().kind == Token::Name && peek(1).kind == Token::Op && peek(1).text == "=") {
        std::string k = cur().text;
        tp_ += 2;
        Expr* v;
        EMBER_TRY(parse_expr(&v));
        call->kwargs.emplace_back(k, v);
      } else {
        if (is_op("*") || is_op("**")) return Status::error(EMBER_ERR_UNSUPPORTED, "template %d:%d: '*args' in calls is not supported", cur().line, cur().col);
        Expr* v;
        EMBER_TRY(parse_expr(&v));
        call->args.push_back(v);
      }
    } while (accept_op(","));
    if (!accept_op(")")) return syntax(cur(), "expected ')' after call arguments");
    return Status::ok();
  }

  Status parse_postfix(Expr* e, Expr** out) {
    while (true) {
      if (is_op(".")) {
        Token at = cur();
        ++tp_;
        if (cur().kind == Token::Int) {  // xs.0
          Expr* g = expr(Expr::Op::GetItem, at);
          Expr* k = expr(Expr::Op::Literal, cur());
          k->literal = Value::integer(cur().i);
          ++tp_;
          g->args = {e, k};
          e = g;
          continue;
        }
        if (cur().kind != Token::Name) return syntax(cur(), "expected an attribute name after '.'");
        Expr* g = expr(Expr::Op::GetAttr, at);
        g->name = cur().text;
        ++tp_;
        g->args.push_back(e);
        e = g;
      } else if (is_op("[")) {
        Token at = cur();
        ++tp_;
        EMBER_TRY(enter());
        Expr* parts[3] = {nullptr, nullptr, nullptr};
        int n = 0;
        bool slice = false;
        while (true) {
          if (!is_op(":") && !is_op("]")) EMBER_TRY(parse_expr(&parts[n]));
          if (accept_op(":")) {
            slice = true;
            if (++n > 2) return syntax(cur(), "too many ':' in a slice");
            continue;
          }
          break;
        }
        if (!accept_op("]")) return syntax(cur(), "expected ']'");
        --depth_;
        if (slice) {
          Expr* s = expr(Expr::Op::Slice, at);
          s->args = {e, parts[0], parts[1], parts[2]};
          e = s;
        } else {
          if (!parts[0]) return syntax(cur(), "empty subscript");
          Expr* g = expr(Expr::Op::GetItem, at);
          g->args = {e, parts[0]};
          e = g;
        }
      } else if (is_op("(")) {
        Expr* c = expr(Expr::Op::Call, cur());
        ++tp_;
        EMBER_TRY(enter());
        c->args.push_back(e);
        EMBER_TRY(parse_args(c));
        --depth_;
        e = c;
      } else {
        break;
      }
    }
    *out = e;
    return Status::ok();
  }

  Status parse_filter_chain(Expr* e, Expr** out) {
    while (true) {
      if (is_op("|")) {
        ++tp_;
        if (cur().kind != Token::Name) return syntax(cur(), "expected a filter name after '|'");
        Expr* f = expr(Expr::Op::Filter, cur());
        f->name = cur().text;
        ++tp_;
        // Dotted filter names do not exist in this subset.
        f->args.push_back(e);
        if (accept_op("(")) EMBER_TRY(parse_args(f));
        e = f;
      } else if (is_name("is")) {
        Token at = cur();
        ++tp_;
        Expr* t = expr(Expr::Op::Test, at);
        t->negated = accept_name("not");
        if (cur().kind != Token::Name) return syntax(cur(), "expected a test name after 'is'");
        t->name = cur().text;
        ++tp_;
        t->args.push_back(e);
        if (accept_op("(")) {
          EMBER_TRY(parse_args(t));
        } else if ((cur().kind == Token::Name && cur().text != "else" && cur().text != "and" &&
                    cur().text != "or" && cur().text != "if" && cur().text != "is" && cur().text != "in" &&
                    cur().text != "not") ||
                   cur().kind == Token::Str || cur().kind == Token::Int || cur().kind == Token::Float ||
                   is_op("[") || is_op("{")) {
          Expr* a;  // `is divisibleby 3`: one argument without parentheses
          EMBER_TRY(parse_primary(&a));
          EMBER_TRY(parse_postfix(a, &a));
          t->args.push_back(a);
        }
        e = t;
      } else {
        break;
      }
    }
    *out = e;
    return Status::ok();
  }

  Status parse_primary(Expr** out) {
    const Token& t = cur();
    switch (t.kind) {
      case Token::Str: {
        Expr* e = expr(Expr::Op::Literal, t);
        std::string s = t.text;
        ++tp_;
        while (cur().kind == Token::Str) {  // adjacent literals concatenate
          s += cur().text;
          ++tp_;
        }
        e->literal = Value::string(std::move(s));
        *out = e;
        return Status::ok();
      }
      case Token::Int: case Token::Float: {
        Expr* e = expr(Expr::Op::Literal, t);
        e->literal = t.kind == Token::Int ? Value::integer(t.i) : Value::real(t.f);
        ++tp_;
        *out = e;
        return Status::ok();
      }
      case Token::Name: {
        Expr* e = expr(Expr::Op::Literal, t);
        if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->literal = Value::none();
        else {
          e->op = Expr::Op::Name;
          e->name = t.text;
        }
        ++tp_;
        *out = e;
        return Status::ok();
      }
      case Token::Op: {
        if (t.text == "(") {
          Token at = t;
          ++tp_;
          EMBER_TRY(enter());
          if (accept_op(")")) {  // ()
            *out = expr(Expr::Op::List, at);
            --depth_;
            return Status::ok();
          }
          Expr* e;
          EMBER_TRY(parse_expr(&e));
          if (is_op(",")) {  // a tuple: a list in this subset
            Expr* l = expr(Expr::Op::List, at);
            l->args.push_back(e);
            while (accept_op(",")) {
              if (is_op(")")) break;
              Expr* x;
              EMBER_TRY(parse_expr(&x));
              l->args.push_back(x);
            }
            e = l;
          }
          if (!accept_op(")")) return syntax(cur(), "expected ')'");
          --depth_;
          *out = e;
          return Status::ok();
        }
        if (t.text == "[") {
          Expr* l = expr(Expr::Op::List, t);
          ++tp_;
          EMBER_TRY(enter());
          while (!is_op("]")) {
            Expr* x;
            EMBER_TRY(parse_expr(&x));
            l->args.push_back(x);
            if (!accept_op(",")) break;
          }
          if (!accept_op("]")) return syntax(cur(), "expected ']' after list items");
          --depth_;
          *out = l;
          return Status::ok();
        }
        if (t.text == "{") {
          Expr* d = expr(Expr::Op::Dict, t);
          ++tp_;
          EMBER_TRY(enter());
          while (!is_op("}")) {
            Expr *k, *v;
            EMBER_TRY(parse_expr(&k));
            if (!accept_op(":")) return syntax(cur(), "expected ':' in a dict literal");
            EMBER_TRY(parse_expr(&v));
            d->args.push_back(k);
            d->args.push_back(v);
            if (!accept_op(",")) break;
          }
          if (!accept_op("}")) return syntax(cur(), "expected '}' after dict items");
          --depth_;
          *out = d;
          return Status::ok();
        }
        return syntax(t, "expected an expression");
      }
      case Token::End: return syntax(t, "expected an expression");
    }
    return syntax(t, "expected an expression");
  }

  std::vector<Item>& items_;
  const Limits& limits_;
  Program* prog_;
  size_t idx_ = 0;
  std::vector<Token>* toks_ = nullptr;
  size_t tp_ = 0;
  size_t count_ = 0;
  int depth_ = 0;
};

}  // namespace

Status parse_template(const std::string& text, const Limits& limits, Program* out) {
  if (text.size() > limits.max_template_bytes)
    return Status::error(EMBER_ERR_NO_MEMORY, "template is %zu bytes, more than the limit %zu", text.size(),
                         limits.max_template_bytes);
  std::vector<Item> items;
  Lexer lexer(text);
  EMBER_TRY(lexer.run(&items));
  Parser parser(items, limits, out);
  return parser.run();
}

}  // namespace ember::chat
