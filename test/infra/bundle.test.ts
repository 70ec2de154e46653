import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { bundleCode, REPO_ROOT, useBundleCache } from "../../infra/bundle";

describe("bundleCode's on-disk cache (the offline plan's)", function () {
  this.timeout(30_000);
  let dir: string;
  let cacheDir: string;
  let entry: string;
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  };
  /** Replaces every cached bundle's code, so a cache hit is visible. */
  const mark = () => {
    for (const f of fs.readdirSync(cacheDir)) {
      const file = path.join(cacheDir, f);
      fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, "utf8")), code: "/* from the cache */" }));
    }
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "bundle-cache-"));
    cacheDir = path.join(dir, "cache");
    write("src/dep/index.ts", `export const word = "one";\n`);
    write("src/entry.ts", `import { word } from "./dep";\nexport const handler = () => word;\n`);
    entry = path.relative(REPO_ROOT, path.join(dir, "src/entry.ts"));
    useBundleCache(cacheDir);
  });
  afterEach(() => {
    useBundleCache(undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("builds the same code with and without the cache, and reuses it while nothing changed", () => {
    const cached = bundleCode(entry);
    useBundleCache(undefined);
    expect(bundleCode(entry)).to.equal(cached);
    useBundleCache(cacheDir);
    mark();
    expect(bundleCode(entry)).to.equal("/* from the cache */");
  });

  it("rebuilds when an input file's content changed", () => {
    expect(bundleCode(entry)).to.contain('"one"');
    mark();
    write("src/dep/index.ts", `export const word = "two";\n`);
    expect(bundleCode(entry)).to.contain('"two"');
  });

  it("rebuilds when a new file may change what an import resolves to", () => {
    bundleCode(entry);
    mark();
    write("src/dep.ts", `export const word = "shadow";\n`);
    expect(bundleCode(entry)).to.contain('"shadow"');
  });

  it("rebuilds when the cache file is unreadable", () => {
    bundleCode(entry);
    for (const f of fs.readdirSync(cacheDir)) fs.writeFileSync(path.join(cacheDir, f), "{");
    expect(bundleCode(entry)).to.contain('"one"');
  });
});

describe("bundleCode: a bundle is a function of the code that runs, not of its types", function () {
  this.timeout(30_000);
  const cases = [
    {
      title: "a type annotation changed",
      before: "export const handler = (n: number): number => n + 1;",
      after: "export const handler = (n: number | string): number => (n as number) + 1;",
    },
    {
      title: "an interface grew a field (letters esbuild once counted to name minified identifiers)",
      before: "interface Settings { a: number }\nexport function handler(s: Settings, count: number) { return s.a * count; }",
      after:
        "interface Settings { a: number; zzzzzzzzzzzzzzzzzzzzqqqqqqqqqqqqqqqqqqq?: string }\nexport function handler(s: Settings, count: number) { return s.a * count; }",
    },
  ];
  for (const c of cases) {
    it(`${c.title}: the same bundle`, () => {
      // Prepare: the same runtime code twice, under the same file name; only the types differ.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bundle-types-"));
      const shared = "\nexport const other = (x: number) => { const total = x * 2; return total; };\n";
      for (const [side, text] of [
        ["before", c.before],
        ["after", c.after],
      ] as const) {
        fs.mkdirSync(path.join(dir, side));
        fs.writeFileSync(path.join(dir, side, "entry.ts"), text + shared);
      }
      try {
        // Act
        const [before, after] = ["before", "after"].map((side) => bundleCode(path.relative(REPO_ROOT, path.join(dir, side, "entry.ts"))));
        // Assess
        expect(after).to.equal(before);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
