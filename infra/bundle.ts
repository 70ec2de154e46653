import * as crypto from "node:crypto";
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
  const result = esbuild.buildSync({
    entryPoints: [path.join(REPO_ROOT, entry)],
    bundle: true,
    platform: "node",
    target: "node22",
    format: "cjs",
    minify: true,
    write: false,
    legalComments: "none",
    // Prefer ESM builds of dependencies: esbuild can only tree-shake ES modules.
    mainFields: ["module", "main"],
    logLevel: "silent",
  });
  const file = result.outputFiles[0];
  if (!file) throw new Error(`esbuild produced no output for ${entry}`);
  const code = file.text;
  const bundle: FunctionBundle = {
    entry,
    code,
    sha256: crypto.createHash("sha256").update(code).digest("base64"),
    bytes: Buffer.byteLength(code),
  };
  bundles.set(entry, bundle);
  return bundle;
}

/** The Lambda code archive: one `index.js`. Its hash is the content's, so unchanged code never redeploys. */
export function bundleArchive(bundle: FunctionBundle): pulumi.asset.AssetArchive {
  return new pulumi.asset.AssetArchive({ "index.js": new pulumi.asset.StringAsset(bundle.code) });
}

/** Bytes of every bundle built in this process, by entry. */
export function bundleSizes(): Record<string, number> {
  return Object.fromEntries([...bundles.values()].map((b) => [b.entry, b.bytes]));
}
