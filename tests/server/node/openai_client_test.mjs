// valet serve against the official `openai` npm client (pinned by
// package-lock.json): non-streamed and streamed chat and completions, usage,
// errors, the tier field, structured output and tool calls. Usage: node openai_client_test.mjs FAKE_SERVE_BIN
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
  async toolCallsFollowTheParameters() {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city.',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['c', 'f'] } },
            required: ['city', 'unit'],
            additionalProperties: false,
          },
        },
      },
      { type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: {} } } },
    ];
    const request = {
      model: 'fake',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      max_tokens: 120,
      seed: 9,
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    };
    const r = await client.chat.completions.create(request);
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    const [call] = r.choices[0].message.tool_calls;
    assert.equal(call.type, 'function');
    assert.match(call.id, /^[A-Za-z0-9]{9}$/);
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual(Object.keys(args), ['city', 'unit'], call.function.arguments);
    assert.ok([...args.city].length <= 10 && ['c', 'f'].includes(args.unit), call.function.arguments);
    // Streamed: the same call, whole in one delta, and no text.
    const streamed = [];
    let finish = null;
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      const delta = chunk.choices[0]?.delta ?? {};
      assert.ok(!delta.content, `no text in a required call's stream: ${delta.content}`);
      if (delta.tool_calls) streamed.push(...delta.tool_calls);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, 'tool_calls');
    assert.equal(streamed.length, 1);
    assert.equal(streamed[0].index, 0);
    assert.equal(streamed[0].function.name, 'get_weather');
    assert.equal(streamed[0].function.arguments, call.function.arguments);
    // "auto" (the default with tools): text that does not read as a call, or
    // a call whose arguments follow the schema.
    for (let seed = 1; seed <= 6; ++seed) {
      const { tool_choice, ...auto } = request;
      const a = (await client.chat.completions.create({ ...auto, seed, temperature: 1 })).choices[0];
      if (a.message.tool_calls) {
        assert.equal(a.finish_reason, 'tool_calls');
        JSON.parse(a.message.tool_calls[0].function.arguments);
      } else {
        assert.equal(typeof a.message.content, 'string');
        assert.notEqual(a.message.content.trimStart()[0], '{', a.message.content);
      }
    }
    // Any tool, required: a call of one of them.
    const any = await client.chat.completions.create({ ...request, tool_choice: 'required' });
    assert.ok(['get_weather', 'ping'].includes(any.choices[0].message.tool_calls[0].function.name));
    // The call and its result sent back: the conversation goes on in text.
    const next = await client.chat.completions.create({
      ...request,
      tool_choice: 'none',
      messages: [
        ...request.messages,
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: '{"temp": -3}' },
      ],
    });
    assert.equal(typeof next.choices[0].message.content, 'string');
    assert.equal(next.choices[0].message.tool_calls, undefined);
    await assert.rejects(
      client.chat.completions.create({ ...request, tool_choice: { type: 'function', function: { name: 'nope' } } }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice',
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
