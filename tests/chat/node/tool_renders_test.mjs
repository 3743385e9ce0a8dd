// Conversations with tools through every chat template that renders them,
// rendered by valet (`valet template`) and by the reference renderer
// (@huggingface/jinja), byte for byte: tool definitions, assistant turns
// that call tools (one and several calls), tool results, and generation
// prompts after each.
// Usage: node tool_renders_test.mjs VALET_BIN SHARED_DIR REPO_TEMPLATES_DIR
// Exit 0: pass, 1: fail, 77: skipped (a dependency is missing; in CI,
// CI=true, a failure).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { skip } from '../../constrain/node/skip.mjs';

let Template;
try {
  ({ Template } = await import('@huggingface/jinja'));
} catch {
  skip('@huggingface/jinja is not installed (npm ci in tests/chat/node, done by scripts/test.sh)');
}

const [valet, shared, repoTemplates] = process.argv.slice(2);
// The templates whose models call tools, with where they live.
const TEMPLATES = [
  [shared, 'chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja'],
  [shared, 'chat-templates/Qwen-Qwen3-0.6B.jinja'],
  [shared, 'chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja'],
  [shared, 'chat-templates/HuggingFaceTB-SmolLM3-3B.jinja'],
  [shared, 'chat-templates/ibm-granite-granite-3.3-2B-Instruct.jinja'],
  [shared, 'chat-templates/mistralai-Mistral-Nemo-Instruct-2407.jinja'],
  [repoTemplates, 'google-gemma-3-it.jinja'],
];

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name, e.g. "Zürich"' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city'],
    },
  },
};
const SEARCH = {
  type: 'function',
  function: {
    name: 'search_notes',
    description: 'Full-text search over the user\'s notes.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 20 } },
      required: ['query', 'limit'],
      additionalProperties: false,
    },
  },
};
const call = (id, name, args) => ({ id, type: 'function', function: { name, arguments: args } });

// Mistral's template checks that tool call ids are 9 alphanumerics.
const CONVERSATIONS = {
  'tools, system and user': [
    { role: 'system', content: 'You are a terse assistant.' },
    { role: 'user', content: 'Weather in Zürich?' },
  ],
  'tools and user': [{ role: 'user', content: 'Find my notes on "tides", five of them.' }],
  'a call and its result': [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: '', tool_calls: [call('call00001', 'get_weather', { city: 'Oslo', unit: 'celsius' })] },
    { role: 'tool', tool_call_id: 'call00001', content: '{"temp": -3, "sky": "snow"}' },
  ],
  'two calls, two results, an answer and a new question': [
    { role: 'system', content: 'Answer in one line.' },
    { role: 'user', content: 'Oslo and Lima?' },
    {
      role: 'assistant',
      content: '',
      tool_calls: [call('call00002', 'get_weather', { city: 'Oslo' }), call('call00003', 'get_weather', { city: 'Lima' })],
    },
    { role: 'tool', tool_call_id: 'call00002', content: '{"temp": -3}' },
    { role: 'tool', tool_call_id: 'call00003', content: '{"temp": 19}' },
    { role: 'assistant', content: 'Oslo -3 °C, Lima 19 °C.' },
    { role: 'user', content: 'And my notes on Lima?' },
  ],
};

const dir = mkdtempSync(join(tmpdir(), 'valet-tool-renders-'));
let failed = 0, compared = 0;
try {
  for (const [root, name] of TEMPLATES) {
    const path = join(root, name);
    if (!existsSync(path)) skip(`${path} is missing`);
    const source = readFileSync(path, 'utf8');
    const template = new Template(source);
    for (const [what, messages] of Object.entries(CONVERSATIONS)) {
      const variables = { tools: [WEATHER, SEARCH], date_string: '26 Jul 2024' };
      let want;
      try {
        want = template.render({ messages, add_generation_prompt: true, bos_token: '<BOS>', eos_token: '<EOS>', ...variables });
      } catch (e) {
        want = { error: String(e.message ?? e) };
      }
      const file = join(dir, 'messages.json');
      writeFileSync(file, JSON.stringify({ messages, ...variables }));
      const run = spawnSync(valet, ['template', '--file', path, '--messages', file, '--add-generation-prompt',
        '--bos', '<BOS>', '--eos', '<EOS>'], { encoding: 'utf8' });
      ++compared;
      if (typeof want === 'object') {
        // The reference refuses (the template's raise_exception): valet must refuse too.
        if (run.status === 0) {
          console.log(`FAIL ${name} / ${what}: the reference refuses (${want.error}), valet renders`);
          ++failed;
        }
        continue;
      }
      if (run.status !== 0) {
        console.log(`FAIL ${name} / ${what}: valet template exited ${run.status}: ${run.stderr.trim()}`);
        ++failed;
        continue;
      }
      const got = run.stdout;
      if (got !== want) {
        let i = 0;
        while (i < got.length && got[i] === want[i]) ++i;
        console.log(`FAIL ${name} / ${what}: renders differ at ${i}:\n  valet:     ${JSON.stringify(got.slice(Math.max(0, i - 40), i + 80))}\n  reference: ${JSON.stringify(want.slice(Math.max(0, i - 40), i + 80))}`);
        ++failed;
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${compared - failed} of ${compared} renders with tools equal the reference's`);
process.exit(failed === 0 ? 0 : 1);
