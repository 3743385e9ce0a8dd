// Exit 77 (skipped) with a reason; in CI (CI=true) a missing dependency is a
// failure instead: CI installs everything, so a run cannot pass without it.
export function skip(why) {
  if (process.env.CI === 'true') {
    console.log(`FAIL: ${why}, in CI`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
