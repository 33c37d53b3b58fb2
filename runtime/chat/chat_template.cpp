#include "chat/chat_template.h"

#include <utility>

namespace ember::chat {
namespace {

// Built-in templates for files without one, written for ember in the
// families' published formats. A system message goes where the family puts
// it (its own turn, or folded into the first user turn).
struct Builtin {
  const char* name;
  const char* text;
};

// ChatML, with tools as Qwen2.5 and Hermes models were trained on them: the
// signatures in the system turn, calls as <tool_call> JSON </tool_call> in
// the assistant turn, results as <tool_response> in a user turn (a run of
// tool messages shares one). Without tools the plain ChatML turns.
const char kChatml[] =
    "{% set ns = namespace(start=0) %}"
    "{% if tools %}{{ '<|im_start|>system\\n' }}"
    "{% if messages and messages[0]['role'] == 'system' %}{{ messages[0]['content'] + '\\n\\n' }}"
    "{% set ns.start = 1 %}{% endif %}"
    "{{ '# Tools\\n\\nYou may call the functions whose signatures are listed in <tools></tools>, one JSON object "
    "per line:\\n<tools>' }}"
    "{% for tool in tools %}{{ '\\n' + tool | tojson }}{% endfor %}"
    "{{ '\\n</tools>\\n\\nTo call one, write its name and arguments as a JSON object inside <tool_call></tool_call>:\\n"
    "<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{% endif %}"
    "{% for message in messages[ns.start:] %}"
    "{% set content = message['content'] if message['content'] is string else '' %}"
    "{% if message['role'] == 'assistant' and message['tool_calls'] %}"
    "{{ '<|im_start|>assistant' }}{% if content %}{{ '\\n' + content }}{% endif %}"
    "{% for call in message['tool_calls'] %}{% set f = call['function'] %}"
    "{{ '\\n<tool_call>\\n{\"name\": ' + f['name'] | tojson + ', \"arguments\": ' }}"
    "{% if f['arguments'] is string %}{{ f['arguments'] }}{% else %}{{ f['arguments'] | tojson }}{% endif %}"
    "{{ '}\\n</tool_call>' }}{% endfor %}{{ '<|im_end|>\\n' }}"
    "{% elif message['role'] == 'tool' %}"
    "{% if loop.first or loop.previtem['role'] != 'tool' %}{{ '<|im_start|>user' }}{% endif %}"
    "{{ '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}"
    "{% if loop.last or loop.nextitem['role'] != 'tool' %}{{ '<|im_end|>\\n' }}{% endif %}"
    "{% else %}{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Llama 3.x, with tools as Meta's JSON tool calling writes them: the
// signatures in the system turn, a call as a bare {"name", "parameters"}
// object in the assistant turn, results in an ipython turn.
const char kLlama3[] =
    "{{ bos_token }}{% set ns = namespace(start=0) %}"
    "{% if tools %}{{ '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{% if messages and messages[0]['role'] == 'system' %}{{ messages[0]['content'] | trim + '\\n\\n' }}"
    "{% set ns.start = 1 %}{% endif %}"
    "{{ 'You may call the functions below. To call one, answer with only a JSON object of the form "
    "{\"name\": function name, \"parameters\": object of argument names and values}.\\n\\n' }}"
    "{% for tool in tools %}{{ tool | tojson(indent=4) + '\\n\\n' }}{% endfor %}{{ '<|eot_id|>' }}"
    "{% endif %}"
    "{% for message in messages[ns.start:] %}"
    "{% set content = message['content'] if message['content'] is string else '' %}"
    "{% if message['role'] == 'assistant' and message['tool_calls'] %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% for call in message['tool_calls'] %}{% set f = call['function'] %}"
    "{{ '{\"name\": ' + f['name'] | tojson + ', \"parameters\": ' }}"
    "{% if f['arguments'] is string %}{{ f['arguments'] }}{% else %}{{ f['arguments'] | tojson }}{% endif %}"
    "{{ '}' }}{% if not loop.last %}{{ '\\n' }}{% endif %}{% endfor %}{{ '<|eot_id|>' }}"
    "{% elif message['role'] == 'tool' %}"
    "{{ '<|start_header_id|>ipython<|end_header_id|>\\n\\n' + content + '<|eot_id|>' }}"
    "{% else %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + content | trim + "
    "'<|eot_id|>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

// Phi-4-mini as its own template writes it (no newline after a role tag),
// with tools where Microsoft documents them: the functions as JSON between
// <|tool|> and <|/tool|> in the system turn (one is made when there is no
// system message), a call as <|tool_call|>[{"name", "arguments"}]
// <|/tool_call|> in the assistant turn, a result in a `tool` turn (the role
// tag its template gives it).
const char kPhi4Mini[] =
    "{% set ns = namespace(start=0) %}"
    "{% if tools %}{{ '<|system|>' }}"
    "{% if messages and messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% set ns.start = 1 %}"
    "{% else %}{{ 'You are a helpful assistant with some tools.' }}{% endif %}"
    "{{ '<|tool|>[' }}{% for tool in tools %}{{ tool['function'] | tojson }}{% if not loop.last %}{{ ', ' }}"
    "{% endif %}{% endfor %}{{ ']<|/tool|><|end|>' }}{% endif %}"
    "{% for message in messages[ns.start:] %}"
    "{% set content = message['content'] if message['content'] is string else '' %}"
    "{{ '<|' + message['role'] + '|>' + content }}"
    "{% if message['role'] == 'assistant' and message['tool_calls'] %}{{ '<|tool_call|>[' }}"
    "{% for call in message['tool_calls'] %}{% set f = call['function'] %}"
    "{{ '{\"name\": ' + f['name'] | tojson + ', \"arguments\": ' }}"
    "{% if f['arguments'] is string %}{{ f['arguments'] }}{% else %}{{ f['arguments'] | tojson }}{% endif %}"
    "{{ '}' }}{% if not loop.last %}{{ ', ' }}{% endif %}{% endfor %}{{ ']<|/tool_call|>' }}{% endif %}"
    "{{ '<|end|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}";

const Builtin kBuiltins[] = {
    {"chatml", kChatml},
    {"qwen", kChatml},
    {"qwen2", kChatml},
    {"qwen3", kChatml},
    {"llama2",
     "{% if messages and messages[0]['role'] == 'system' %}{% set rest = messages[1:] %}"
     "{% set sys = messages[0]['content'] %}{% else %}{% set rest = messages %}{% set sys = none %}{% endif %}"
     "{% for message in rest %}"
     "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
     "{{ raise_exception('llama2: roles must alternate user/assistant after an optional system message') }}"
     "{% endif %}"
     "{% if message['role'] == 'user' %}"
     "{% set text = message['content'] %}"
     "{% if loop.first and sys is not none %}{% set text = '<<SYS>>\\n' + sys + '\\n<</SYS>>\\n\\n' + text %}"
     "{% endif %}"
     "{{ bos_token + '[INST] ' + text | trim + ' [/INST]' }}"
     "{% else %}{{ ' ' + message['content'] | trim + ' ' + eos_token }}{% endif %}"
     "{% endfor %}"},
    {"llama3", kLlama3},
    {"phi3",
     "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"phi4-mini", kPhi4Mini},
    {"gemma",
     "{{ bos_token }}{% set ns = namespace(sys='') %}"
     "{% for message in messages %}"
     "{% if message['role'] == 'system' %}{% set ns.sys = ns.sys + message['content'] | trim + '\\n\\n' %}"
     "{% else %}"
     "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
     "{{ '<start_of_turn>' + role + '\\n' + ns.sys + message['content'] | trim + '<end_of_turn>\\n' }}"
     "{% set ns.sys = '' %}"
     "{% endif %}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"},
    {"mistral",
     "{{ bos_token }}{% set ns = namespace(sys='') %}"
     "{% for message in messages %}"
     "{% if message['role'] == 'system' %}{% set ns.sys = message['content'] + '\\n\\n' %}"
     "{% elif message['role'] == 'user' %}{{ ' [INST] ' + ns.sys + message['content'] + ' [/INST]' }}"
     "{% set ns.sys = '' %}"
     "{% else %}{{ ' ' + message['content'] + eos_token }}{% endif %}"
     "{% endfor %}"},
    {"mistral-v7",
     "{{ bos_token }}{% for message in messages %}"
     "{% if message['role'] == 'system' %}{{ '[SYSTEM_PROMPT] ' + message['content'] + '[/SYSTEM_PROMPT]' }}"
     "{% elif message['role'] == 'user' %}{{ '[INST] ' + message['content'] + '[/INST]' }}"
     "{% else %}{{ ' ' + message['content'] + eos_token }}{% endif %}"
     "{% endfor %}"},
    {"zephyr",
     "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"deepseek",
     "{{ bos_token }}{% for message in messages %}"
     "{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\\n\\n' }}"
     "{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token }}"
     "{% else %}{{ message['content'] + '\\n\\n' }}{% endif %}"
     "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"},
    {"vicuna",
     "{% for message in messages %}"
     "{% if message['role'] == 'system' %}{{ message['content'] + '\\n\\n' }}"
     "{% elif message['role'] == 'user' %}{{ 'USER: ' + message['content'] + '\\n' }}"
     "{% else %}{{ 'ASSISTANT: ' + message['content'] + '</s>\\n' }}{% endif %}"
     "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"},
};

}  // namespace

const char* builtin_chat_template(const std::string& name) {
  for (const auto& b : kBuiltins)
    if (name == b.name) return b.text;
  return nullptr;
}

const std::vector<std::string>& builtin_chat_template_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& b : kBuiltins) out.push_back(b.name);
    return out;
  }();
  return names;
}

Status render_chat(const std::string& tmpl, const Value& messages, const ChatOptions& opt, const Value& extra,
                   std::string* out) {
  Program prog;
  EMBER_TRY(parse_template(tmpl, opt.env.limits, &prog));
  Value ctx = Value::make_dict();
  if (extra.is_mapping())
    for (const auto& kv : *extra.dict) ctx.set(kv.first, kv.second);
  ctx.set("messages", messages);
  ctx.set("add_generation_prompt", Value::boolean(opt.add_generation_prompt));
  ctx.set("bos_token", Value::string(opt.bos_token));
  ctx.set("eos_token", Value::string(opt.eos_token));
  return render_program(prog, ctx, opt.env, out);
}

Status render_chat(const std::string& tmpl, const std::vector<ChatMessage>& messages, const ChatOptions& opt,
                   std::string* out) {
  List list;
  list.reserve(messages.size());
  for (const auto& m : messages)
    list.push_back(Value::make_dict({{"role", Value::string(m.role)}, {"content", Value::string(m.content)}}));
  return render_chat(tmpl, Value::make_list(std::move(list)), opt, Value::undefined(), out);
}

}  // namespace ember::chat
