// Renders the repository's own chat templates (tests/chat/templates/*.jinja)
// with the reference Jinja implementation, @huggingface/jinja, for the
// conversations of ../shared/chat-templates/expected.json, and writes
// tests/chat/templates/expected.json in the same format.
//
// usage (from the repository root):
//   npm install --prefix /tmp/hf-jinja @huggingface/jinja@0.5
//   JINJA_PREFIX=/tmp/hf-jinja node scripts/render-chat-templates.mjs
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const { Template } = createRequire(`${process.env.JINJA_PREFIX ?? process.cwd()}/`)("@huggingface/jinja");

const dir = "tests/chat/templates";
const shared = JSON.parse(readFileSync("../shared/chat-templates/expected.json", "utf8"));
const conversations = new Map();
for (const c of shared.cases) if (!conversations.has(c.conversation)) conversations.set(c.conversation, c.messages);

const cases = [];
for (const file of readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort()) {
  const template = new Template(readFileSync(`${dir}/${file}`, "utf8"));
  for (const [conversation, messages] of conversations) {
    for (const add_generation_prompt of [true, false]) {
      const variables = { date_string: shared.date };
      const c = { template: file, conversation, add_generation_prompt, messages, bos_token: "<BOS>", eos_token: "<EOS>" };
      try {
        c.expected = template.render({ messages, add_generation_prompt, bos_token: c.bos_token, eos_token: c.eos_token, ...variables });
      } catch (e) {
        c.expected_error = String(e.message ?? e);
      }
      c.variables = variables;
      cases.push(c);
    }
  }
}
const out = { oracle: "@huggingface/jinja 0.5.x", date: shared.date, cases, note: shared.note };
writeFileSync(`${dir}/expected.json`, JSON.stringify(out, null, 1) + "\n");
console.log(`${cases.length} cases written to ${dir}/expected.json`);
