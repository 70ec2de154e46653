/**
 * `npm run docs`: rewrites every generated region of README.md and docs/ from the code
 * (scripts/docs-generate.ts says where each list comes from). `--check` writes nothing and exits 1
 * when a region is stale.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT, regenerate } from "./docs-generate";

async function main(check: boolean): Promise<number> {
  const stale = (await regenerate()).filter((f) => f.current !== f.wanted);
  for (const f of stale) {
    if (check) process.stderr.write(`${f.file}: generated regions are stale\n`);
    else fs.writeFileSync(path.join(REPO_ROOT, f.file), f.wanted);
  }
  process.stdout.write(check ? (stale.length ? "run npm run docs\n" : "docs are up to date\n") : `${stale.length} file(s) rewritten\n`);
  return check && stale.length > 0 ? 1 : 0;
}

main(process.argv.includes("--check")).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`docs: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
