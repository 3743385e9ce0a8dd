// The JSON Schema Test Suite (npm json-schema-test-suite, draft 4) through
// valet's schema compiler: each case's schema is compiled, each instance fed
// as its JSON.stringify text through the matcher. No instance the suite calls
// invalid may be accepted (the guarantee structured output rests on). Valid
// instances the grammar does not produce are counted by cause: valet
// generates a canonical subset (docs/structured-output.md) and says so.
// Usage: node schema_suite_test.mjs CHECK_BIN
// Exit 0: pass, 1: fail, 77: skipped (the suite is not installed; in CI,
// CI=true, a failure).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { skip } from './skip.mjs';

let suiteDir;
try {
  suiteDir = join(dirname(createRequire(import.meta.url).resolve('json-schema-test-suite/package.json')), 'tests', 'draft4');
} catch {
  skip('json-schema-test-suite is not installed (npm ci in tests/constrain/node, done by scripts/test.sh)');
}

// The suite's files for the keywords valet compiles.
const FILES = ['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'anyOf', 'oneOf', 'allOf',
  'ref', 'definitions', 'minItems', 'maxItems', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum',
  'optional/format'];

const cases = [];
for (const f of FILES) {
  for (const group of JSON.parse(readFileSync(join(suiteDir, `${f}.json`), 'utf8'))) {
    cases.push({ file: f, group });
  }
}
const input = cases.map(({ group }) => JSON.stringify({ schema: group.schema, texts: group.tests.map((t) => JSON.stringify(t.data)) })).join('\n') + '\n';
const run = spawnSync(process.argv[2], [], { input, maxBuffer: 1 << 26 });
if (run.status !== 0) {
  console.log(`FAIL: ${process.argv[2]} exited ${run.status}: ${run.stderr}`);
  process.exit(1);
}
const lines = run.stdout.toString().trim().split('\n').map((l) => JSON.parse(l));

let unsound = 0, refused = 0, checked = 0, gaps = 0;
for (const [i, { file, group }] of cases.entries()) {
  const r = lines[i];
  if (r.error) {
    ++refused;
    console.log(`refused  ${file}: ${group.description}: ${r.error}`);
    continue;
  }
  group.tests.forEach((t, j) => {
    ++checked;
    if (!t.valid && r.accepted[j]) {
      ++unsound;
      console.log(`UNSOUND  ${file}: ${group.description} / ${t.description}: accepted ${JSON.stringify(t.data)}`);
    } else if (t.valid && !r.accepted[j]) {
      ++gaps;
      console.log(`subset   ${file}: ${group.description} / ${t.description}: ${JSON.stringify(t.data)}`);
    }
  });
}
console.log(`${cases.length} schemas: ${refused} refused by name; ${checked} instances, ` +
            `${unsound} invalid ones accepted, ${gaps} valid ones outside the generated subset`);
process.exit(unsound === 0 ? 0 : 1);
