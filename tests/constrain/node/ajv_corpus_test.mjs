// Constrained generation checked by an independent validator: a seeded corpus
// of JSON Schemas (every keyword valet compiles, strings and arrays bounded),
// each generated under by real-vocabulary models at temperature 1.0 with pure
// sampling (their weights are random, so validity is the constraint's doing
// alone), each output validated by ajv (draft 2020-12, with formats). An
// output cut by max_tokens counts as invalid.
// Usage: node ajv_corpus_test.mjs CORPUS_BIN SHARED_DIR [SCHEMAS_PER_MODEL]
// Exit 0: pass, 1: fail, 77: skipped (ajv is not installed, or ../shared is
// absent; in CI, CI=true, either is a failure).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { skip } from './skip.mjs';

let Ajv2020, addFormats;
try {
  ({ default: Ajv2020 } = await import('ajv/dist/2020.js'));
  ({ default: addFormats } = await import('ajv-formats'));
} catch {
  skip('ajv is not installed (npm ci in tests/constrain/node, done by scripts/test.sh)');
}

const [corpusBin, sharedDir, perModelArg] = process.argv.slice(2);
const perModel = Number(perModelArg ?? 100);
const models = ['qwen2-q4_0.gguf', 'llama3-bpe-q4_k_m.gguf'].map((m) => join(sharedDir, 'models', m));
for (const m of models) if (!existsSync(m)) skip(`shared model absent: ${m}`);

// xorshift64*: the corpus is the same on every run.
let state = 0x9e3779b97f4a7c15n;
function rand() {
  state ^= state >> 12n;
  state ^= (state << 25n) & 0xffffffffffffffffn;
  state ^= state >> 27n;
  return Number(((state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
}
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[int(0, xs.length - 1)];

const KEYS = ['id', 'name', 'tags', 'a b', 'quo"te', 'ünï', 'back\\slash', 'x', 'count', 'when'];
// Bounded patterns only: an unbounded one ([a-z]+) lets a random model run on.
const PATTERNS = ['^[A-Z]{2}-\\d{3}$', '^(yes|no|maybe)$', '^[a-z]{1,8}(\\.[a-z]{1,8})?$', '^\\w{1,8}$',
                  '^[^"\\\\]{0,6}$'];

function leaf() {
  switch (int(0, 12)) {
    case 0: return { type: 'null' };
    case 1: return { type: 'boolean' };
    case 2: { const lo = int(-1000, 1000); return { type: 'integer', minimum: lo, maximum: lo + int(0, 5000) }; }
    case 3: return { type: 'integer', exclusiveMinimum: int(-50, 50) - 0.5, exclusiveMaximum: 200 };
    case 4: { const lo = int(-20, 20); return { type: 'number', minimum: lo, maximum: lo + int(0, 30) }; }
    case 5: return { type: 'number' };
    case 6: { const lo = int(0, 4); return { type: 'string', minLength: lo, maxLength: lo + int(0, 12) }; }
    case 7: return { type: 'string', format: pick(['date', 'date-time', 'time', 'uuid', 'email']) };
    case 8: return { type: 'string', pattern: pick(PATTERNS) };
    case 9: return { enum: ['red', 'green', 42, null, { k: [1, 2] }].slice(0, int(1, 5)) };
    case 10: return { const: pick(['fixed', 7, true, 'with "quotes"']) };
    case 11: return { anyOf: [{ type: 'integer', minimum: 0, maximum: 9 }, { type: 'string', maxLength: 4 }] };
    default: return { oneOf: [{ type: 'boolean' }, { type: 'string', format: 'date' }, { type: 'null' }] };
  }
}

function schema(depth) {
  const r = depth >= 2 ? 0 : int(0, 3);
  if (r === 1) {
    const props = {};
    const names = [...KEYS].sort(() => rand() - 0.5).slice(0, int(1, 4));
    for (const n of names) props[n] = schema(depth + 1);
    const s = { type: 'object', properties: props, required: names.filter(() => rand() < 0.5) };
    if (rand() < 0.8) s.additionalProperties = false;
    return s;
  }
  if (r === 2) {
    const min = int(0, 2);
    const s = { type: 'array', items: schema(depth + 1), minItems: min, maxItems: min + int(0, 3) };
    if (rand() < 0.3) {
      s.prefixItems = [leaf(), leaf()];
      s.items = false;
      s.minItems = Math.min(min, 2);
      s.maxItems = 2;
    }
    return s;
  }
  return leaf();
}

function corpus(n) {
  const out = [];
  for (let i = 0; i < n; ++i) {
    const s = schema(0);
    if (i % 10 === 3) {
      out.push({ $defs: { item: s }, type: 'object', properties: { item: { $ref: '#/$defs/item' } },
                 required: ['item'], additionalProperties: false });
    } else {
      out.push(s);
    }
  }
  return out;
}

const ajv = new Ajv2020({ strict: false, allErrors: false });
addFormats(ajv);
let failures = 0;
let checked = 0;
for (const [m, model] of models.entries()) {
  const dir = mkdtempSync(join(tmpdir(), 'valet-ajv-'));
  const schemas = corpus(perModel);
  schemas.forEach((s, i) => writeFileSync(join(dir, `${String(i).padStart(4, '0')}.json`), JSON.stringify(s)));
  const out = execFileSync(corpusBin, [model, dir, String(1000 * (m + 1)), '768'], { maxBuffer: 1 << 26 });
  rmSync(dir, { recursive: true });
  const lines = out.toString().trim().split('\n').map((l) => JSON.parse(l));
  if (lines.length !== schemas.length) {
    console.log(`FAIL ${model}: ${lines.length} outputs for ${schemas.length} schemas`);
    process.exit(1);
  }
  for (const line of lines) {
    const s = schemas[Number(line.file.slice(0, 4))];
    ++checked;
    let why = null;
    if (line.error) why = `error: ${line.error}`;
    else if (line.stop_reason !== 'eos') why = `stopped by ${line.stop_reason} after ${line.tokens} tokens`;
    else {
      let value;
      try { value = JSON.parse(line.text); } catch (e) { why = `not JSON: ${e.message}`; }
      if (!why && !ajv.validate(s, value)) why = ajv.errorsText(ajv.errors);
    }
    if (why) {
      ++failures;
      console.log(`INVALID ${model} ${line.file}: ${why}\n  schema: ${JSON.stringify(s)}\n  text: ${line.text}`);
    }
  }
}
console.log(`${checked} outputs over ${models.length} models, ${failures} invalid`);
process.exit(failures === 0 ? 0 : 1);
