// The official openai npm client (4.x, pinned in test/data/package.json),
// unmodified, against attn-serve: models, completions and chat completions,
// streamed and not, stop sequences, usage, and the errors it raises for 400
// and 401 answers.
//
//   node openai-client.mjs NPM_DIR BASE_URL API_KEY MODEL_ID PROMPT EXPECTED
//
// EXPECTED is attn-run's greedy continuation of PROMPT (16 tokens), which
// the completions must equal. openai-client.py starts the server and runs
// this; the exit code is the verdict.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const [npmDir, baseURL, apiKey, model, prompt, expected] = process.argv.slice(2);
const require = createRequire(path.join(npmDir, 'package.json'));
const openaiModule = require('openai');
const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;

// No retries: a 5xx must fail the test, not be retried into a pass.
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 60000 });

async function collect(stream, chat) {
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += chat ? (choice.delta.content ?? '') : choice.text;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

async function main() {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);

  // Completions, not streamed, then streamed: both equal attn-run.
  const completion = await client.completions.create({
    model, prompt, max_tokens: 16, temperature: 0,
  });
  assert.equal(completion.object, 'text_completion');
  assert.equal(completion.choices.length, 1);
  assert.equal(completion.choices[0].text, expected);
  assert.equal(completion.choices[0].finish_reason, 'length');
  assert.equal(completion.usage.completion_tokens, 16);
  assert.equal(completion.usage.total_tokens,
    completion.usage.prompt_tokens + completion.usage.completion_tokens);

  const streamed = await collect(await client.completions.create({
    model, prompt, max_tokens: 16, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  }), false);
  assert.equal(streamed.text, expected);
  assert.equal(streamed.finish, 'length');
  assert.ok(streamed.chunks > 2, `${streamed.chunks} chunks: not streamed`);
  assert.equal(streamed.usage.completion_tokens, 16);

  // A stop sequence inside the text cuts it at its first occurrence.
  const half = Math.floor(expected.length / 2);
  const stop = expected.slice(half, half + 3);
  const stopped = await client.completions.create({
    model, prompt, max_tokens: 16, temperature: 0, stop: [stop, 'never in the text'],
  });
  assert.equal(stopped.choices[0].text, expected.slice(0, expected.indexOf(stop)));
  assert.equal(stopped.choices[0].finish_reason, 'stop');

  // Chat completions through the --chat-template template.
  const messages = [
    { role: 'system', content: 'You are a character in a novel.' },
    { role: 'user', content: 'Who is Mr. Knightley?' },
  ];
  const chat = await client.chat.completions.create({
    model, messages, max_tokens: 12, temperature: 0,
  });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.equal(typeof chat.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(chat.choices[0].finish_reason));
  const chatStream = await collect(await client.chat.completions.create({
    model, messages, max_tokens: 12, temperature: 0, stream: true,
  }), true);
  assert.equal(chatStream.text, chat.choices[0].message.content);
  assert.equal(chatStream.finish, chat.choices[0].finish_reason);

  // Sampling with a seed repeats itself.
  const sampled = async () => (await client.completions.create({
    model, prompt, max_tokens: 8, temperature: 0.9, top_p: 0.9, seed: 1234,
  })).choices[0].text;
  assert.equal(await sampled(), await sampled());

  // Errors arrive as the client's own exception classes.
  await assert.rejects(
    client.completions.create({ model, prompt, max_tokens: 1000000 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
      e.code === 'context_length_exceeded' && e.param === 'max_tokens');
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: 'wizard', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && /unknown role: wizard/.test(e.message));
  await assert.rejects(
    client.completions.create({ model, prompt, n: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'n');
  const wrongKey = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(wrongKey.models.list(),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);

  const { VERSION } = require('openai/version');
  const reply = JSON.stringify(chat.choices[0].message.content);
  console.log(`ok: openai ${VERSION}: completions and chat (${reply}), streamed and not`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
