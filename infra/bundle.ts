import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as esbuild from "esbuild";
import * as pulumi from "@pulumi/pulumi";

/** Repository root: entries are given relative to it, e.g. `functions/ingest/window.ts`. */
export const REPO_ROOT = path.resolve(__dirname, "..");

/** The Lambda runtime the bundles target. */
export const NODE_RUNTIME = "nodejs22.x";

export interface FunctionBundle {
  /** Entry file, relative to the repository root. */
  entry: string;
  code: string;
  /** Base64 SHA-256 of the code, the form Lambda's `sourceCodeHash` uses. */
  sha256: string;
  bytes: number;
}

const bundles = new Map<string, FunctionBundle>();

/**
 * Bundles one handler with esbuild: tree-shaken, minified, CommonJS, with the AWS SDK inside
 * the bundle, so the function runs the SDK versions pinned by our lockfile rather than
 * whatever the Lambda runtime ships that week. Cached per process: a program may attach the
 * same code twice.
 */
export function bundleFunction(entry: string): FunctionBundle {
  const cached = bundles.get(entry);
  if (cached) return cached;
  const code = bundleCode(entry);
  const bundle: FunctionBundle = {
    entry,
    code,
    sha256: crypto.createHash("sha256").update(code).digest("base64"),
    bytes: Buffer.byteLength(code),
  };
  bundles.set(entry, bundle);
  return bundle;
}

/**
 * esbuild's options for one entry (an absolute path). Whitespace and syntax are minified, not
 * identifiers: esbuild names minified identifiers by how often each letter occurs in the source,
 * type annotations included, so an edit to types alone renamed them and changed the bundle's hash,
 * which redeploys the function and (through the gateway image's digest in its user data) replaces
 * the dev GPU instance. Kept names make a bundle a function of the code that runs.
 */
export function bundleOptions(entryPath: string) {
  return {
    entryPoints: [entryPath],
    bundle: true,
    platform: "node",
    target: "node22",
    format: "cjs",
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: false,
    write: false,
    legalComments: "none",
    // Prefer ESM builds of dependencies: esbuild can only tree-shake ES modules.
    mainFields: ["module", "main"],
    logLevel: "silent",
  } satisfies esbuild.BuildOptions;
}

/** The esbuild bundle of one entry: from the on-disk cache when one is in use and still valid, else built. */
export function bundleCode(entry: string): string {
  const options = bundleOptions(path.join(REPO_ROOT, entry));
  return cacheDir ? cachedBuild(entry, options, cacheDir) : build(entry, options).code;
}

function build(entry: string, options: esbuild.BuildOptions): { code: string; metafile?: esbuild.Metafile } {
  const result = esbuild.buildSync(options);
  const file = result.outputFiles?.[0];
  if (!file) throw new Error(`esbuild produced no output for ${entry}`);
  return { code: file.text, metafile: result.metafile };
}

let cacheDir: string | undefined;

/** Where the offline plan keeps its bundles (git-ignored). */
export const PLAN_BUNDLE_CACHE_DIR = path.join(REPO_ROOT, ".cache", "plan-bundles");

/**
 * Keeps each entry's bundle in `dir` across processes (the offline plan opts in: a plan builds
 * seven bundles, each re-parsing the AWS SDK, and that was half its time). An entry is reused
 * only if esbuild's version, the options, the working directory, package.json,
 * package-lock.json and tsconfig.json are unchanged, every input file esbuild read has the same
 * content, and no file was added to or removed from a directory of our own sources (a new
 * `x.ts` could change what `./x` resolves to); otherwise it is rebuilt and stored again. The
 * code is byte-identical to a fresh build, as esbuild is deterministic.
 */
export function useBundleCache(dir: string | undefined): void {
  cacheDir = dir;
}

interface CacheEntry {
  key: string;
  /** Input file (as esbuild names it, relative to the working directory) → SHA-256 of its content. */
  inputs: Record<string, string>;
  /** Directory holding one of our own inputs → hash of its sorted listing. */
  dirs: Record<string, string>;
  code: string;
}

const sha = (data: string | Buffer) => crypto.createHash("sha256").update(data).digest("hex");
const fileHash = (file: string) => (fs.existsSync(file) ? sha(fs.readFileSync(file)) : "-");
const listingHash = (dir: string) => (fs.existsSync(dir) ? sha(fs.readdirSync(dir).sort().join("\0")) : "-");

function cachedBuild(entry: string, options: esbuild.BuildOptions, dir: string): string {
  const cwd = process.cwd();
  const key = sha(
    JSON.stringify({
      esbuild: esbuild.version,
      cwd,
      options,
      project: ["package.json", "package-lock.json", "tsconfig.json"].map((f) => fileHash(path.join(REPO_ROOT, f))),
    }),
  );
  const file = path.join(dir, `${sha(entry).slice(0, 16)}.json`);
  const hit = readCacheEntry(file);
  if (
    hit?.key === key &&
    Object.entries(hit.inputs).every(([input, hash]) => fileHash(path.resolve(cwd, input)) === hash) &&
    Object.entries(hit.dirs).every(([d, hash]) => listingHash(path.resolve(cwd, d)) === hash)
  ) {
    return hit.code;
  }
  const { code, metafile } = build(entry, { ...options, metafile: true });
  const inputs: Record<string, string> = {};
  const dirs: Record<string, string> = {};
  for (const input of Object.keys(metafile?.inputs ?? {})) {
    const abs = path.resolve(cwd, input);
    // A non-file input (a namespaced module) cannot be checked: do not cache this entry.
    if (!fs.existsSync(abs)) return code;
    inputs[input] = fileHash(abs);
    if (!abs.split(path.sep).includes("node_modules")) dirs[path.dirname(input)] = listingHash(path.dirname(abs));
  }
  try {
    fs.mkdirSync(dir, { recursive: true });
    // Atomic: several plans (dev and prod) may write the same entry at once.
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ key, inputs, dirs, code } satisfies CacheEntry));
    fs.renameSync(tmp, file);
  } catch {
    // A cache that cannot be written only costs the next run its time.
  }
  return code;
}

function readCacheEntry(file: string): CacheEntry | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as CacheEntry;
  } catch {
    return undefined;
  }
}

/** The Lambda code archive: one `index.js`. Its hash is the content's, so unchanged code never redeploys. */
export function bundleArchive(bundle: FunctionBundle): pulumi.asset.AssetArchive {
  return new pulumi.asset.AssetArchive({ "index.js": new pulumi.asset.StringAsset(bundle.code) });
}

/** Bytes of every bundle built in this process, by entry. */
export function bundleSizes(): Record<string, number> {
  return Object.fromEntries([...bundles.values()].map((b) => [b.entry, b.bytes]));
}
