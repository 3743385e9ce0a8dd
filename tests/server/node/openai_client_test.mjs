// valet serve against the official `openai` npm client (pinned by
// package-lock.json): non-streamed and streamed chat and completions, usage,
// errors and the tier field. Usage: node openai_client_test.mjs FAKE_SERVE_BIN
// Exit 0: pass, 1: fail, 77: skipped (the client is not installed; in CI,
// CI=true, that is a failure: CI installs it, so a run cannot pass without it).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch {
  const why = 'the openai package is not installed (npm ci in tests/server/node, done by scripts/test.sh)';
  if (process.env.CI === 'true') {
    console.log(`FAIL: ${why}, in CI`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

const server = spawn(process.argv[2], [], { stdio: ['pipe', 'pipe', 'inherit'] });
const firstLine = await new Promise((resolve, reject) => {
  createInterface({ input: server.stdout }).once('line', resolve);
  server.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});
const port = Number(/:(\d+)$/.exec(firstLine)[1]);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 });

const tests = {
  async chatNonStreamed() {
    const r = await client.chat.completions.create({
      model: 'fake',
      messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello' }],
      max_tokens: 12,
      seed: 3,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 12);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 12);
    return r.choices[0].message.content;
  },
  async chatStreamedMatchesNonStreamed(whole) {
    const stream = await client.chat.completions.create({
      model: 'fake',
      messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello' }],
      max_tokens: 12,
      seed: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.delta?.content ?? '';
        finish = c.finish_reason ?? finish;
      }
    }
    assert.equal(text, whole);
    assert.equal(finish, 'length');
    assert.equal(usage.completion_tokens, 12);
  },
  async completionsBothWays() {
    const r = await client.completions.create({ model: 'fake', prompt: 'Once upon a time', max_tokens: 8 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.usage.completion_tokens, 8);
    const stream = await client.completions.create({ model: 'fake', prompt: 'Once upon a time', max_tokens: 8, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, r.choices[0].text);
  },
  async tierFieldIsUsed() {
    await client.chat.completions.create({
      model: 'fake',
      messages: [{ role: 'user', content: 'index this' }],
      max_tokens: 2,
      tier: 'offline_indexing',
    });
    const tasks = await client.get('/tasks');
    assert.equal(tasks.data.at(-1).tier, 'offline_indexing');
    assert.equal(tasks.data.at(-1).state, 'DONE');
  },
  async structuredOutputFollowsTheSchema() {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 12 },
        age: { type: 'integer', minimum: 0, maximum: 130 },
        tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 },
      },
      required: ['name', 'age', 'tags'],
      additionalProperties: false,
    };
    const request = {
      model: 'fake',
      messages: [{ role: 'user', content: 'A person, please.' }],
      max_tokens: 200,
      seed: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } },
    };
    const r = await client.chat.completions.create(request);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const text = r.choices[0].message.content;
    const person = JSON.parse(text);
    assert.deepEqual(Object.keys(person), ['name', 'age', 'tags']);
    assert.ok(typeof person.name === 'string' && [...person.name].length <= 12, text);
    assert.ok(Number.isInteger(person.age) && person.age >= 0 && person.age <= 130, text);
    assert.ok(person.tags.length <= 3 && person.tags.every((t) => ['a', 'b', 'c'].includes(t)), text);
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      streamed += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.equal(streamed, text);
    const object = await client.chat.completions.create({ ...request, response_format: { type: 'json_object' } });
    assert.equal(typeof JSON.parse(object.choices[0].message.content), 'object');
    await assert.rejects(
      client.chat.completions.create({
        ...request,
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'integer', multipleOf: 2 } } },
      }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'unsupported_value' && /multipleOf/.test(e.message),
    );
  },
  async errorsAreApiErrors() {
    await assert.rejects(
      client.chat.completions.create({ model: 'fake', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'temperature',
    );
    await assert.rejects(
      client.completions.create({ model: 'fake', prompt: 'x'.repeat(5000), max_tokens: 4 }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded',
    );
  },
};

let failed = 0;
let previous;
for (const [name, run] of Object.entries(tests)) {
  try {
    previous = await run(previous);
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}
server.stdin.end();
await new Promise((resolve) => server.once('exit', resolve));
process.exit(failed === 0 ? 0 : 1);
