/**
 * Every runtime dependency is used: some source file imports or requires it, or an npm script
 * runs its binary. A dependency nothing uses still costs an install, an audit surface and a
 * licence to keep (issue 40: `@aws-lambda-powertools/idempotency` was one).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

const ROOT = path.resolve(__dirname, "../..");
const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string>; scripts: Record<string, string> };

/** Source files of the repository, tests included (a test's import is a use: test-only packages belong in devDependencies, which this test does not judge). */
function sources(): string[] {
  const out = execFileSync("git", ["ls-files", "*.ts", "*.js", "*.cjs", "*.mjs"], { cwd: ROOT, encoding: "utf8" });
  return out.split("\n").filter((f) => f !== "" && !f.startsWith("node_modules/"));
}

/** Pure: the packages a source text names in an import, export-from, import() or require()/require.resolve(). */
export function packagesNamed(text: string): Set<string> {
  const found = new Set<string>();
  const patterns = [
    /\bfrom\s+["']([^"'./][^"']*)["']/g,
    /\bimport\s*\(\s*["']([^"'./][^"']*)["']/g,
    /\brequire(?:\.resolve)?\s*\(\s*["']([^"'./][^"']*)["']/g,
    /^\s*import\s+["']([^"'./][^"']*)["']/gm,
  ];
  for (const re of patterns) {
    for (const m of text.matchAll(re)) {
      const spec = m[1] ?? "";
      if (spec.startsWith("node:")) continue;
      const parts = spec.split("/");
      found.add(spec.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? spec));
    }
  }
  return found;
}

describe("runtime dependencies: each is imported by some source file or run by an npm script", () => {
  it("finds a package named by a static import, a dynamic import and a require.resolve, and not a relative path", () => {
    const text = `import { a } from "@scope/pkg/sub";\nconst b = await import("plain");\nrequire.resolve("dist-only/x.js");\nimport "./local";\nimport fs from "node:fs";`;
    expect([...packagesNamed(text)].sort()).to.deep.equal(["@scope/pkg", "dist-only", "plain"]);
  });

  it("has no dependency that nothing uses", () => {
    // Prepare
    const named = new Set<string>();
    for (const file of sources()) for (const p of packagesNamed(readFileSync(path.join(ROOT, file), "utf8"))) named.add(p);
    const scripts = Object.values(pkg.scripts).join("\n");
    // Act: a script runs a package's binary by the package's name (tsx, esbuild…).
    const unused = Object.keys(pkg.dependencies).filter((d) => !named.has(d) && !new RegExp(`(^|[\\s;&|(])${d.replace(/[/@.-]/g, "\\$&")}\\b`).test(scripts));
    // Assess
    expect(unused, "dependencies nothing imports and no script runs").to.deep.equal([]);
  });
});
