import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { bundleFunction, REPO_ROOT, type FunctionBundle } from "../bundle";

/**
 * What the build context holds besides the bundle: a `.dockerignore` that lets the build see the
 * bundle only, so a stray file in the directory (a concurrent plan's `*.tmp`, anything left behind)
 * can neither enter the image nor escape the tag.
 */
export function dockerIgnoreFor(fileName: string): string {
  return `# Written by the Pulumi program: the build sees ${fileName} only.\n*\n!${fileName}\n`;
}

/** The build context as the Docker build sees it: file name → content. */
export type ImageContext = Record<string, string>;

/**
 * Writes the Docker build context of a bundled Node process: one `worker.js`, the esbuild bundle
 * of `entry` with every dependency inside, so the image needs no npm install, and the
 * `.dockerignore` that keeps everything else out. A file is only rewritten when its content
 * changed (atomically, since several plans may run at once). Returns the bundle and the context,
 * for the image's tag.
 */
export function writeImageContext(entry: string, contextDir: string, fileName = "worker.js"): FunctionBundle & { context: ImageContext } {
  const bundle = bundleFunction(entry);
  const dir = path.resolve(REPO_ROOT, contextDir);
  const context: ImageContext = { [fileName]: bundle.code, ".dockerignore": dockerIgnoreFor(fileName) };
  for (const [name, content] of Object.entries(context)) {
    const target = path.join(dir, name);
    const current = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : undefined;
    if (current === content) continue;
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${target}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, content);
    fs.renameSync(tmp, target);
  }
  return { ...bundle, context };
}

/** Everything a build reads: the context's files, the Dockerfile, the platform and the build arguments (the base image's digest among them). */
export interface ImageBuild {
  context: ImageContext;
  dockerfile: string;
  platform: string;
  buildArgs: Record<string, string>;
}

/**
 * The image's tag, a hash of everything the build reads (ImageBuild). An immutable ECR
 * repository refuses to move a tag, so the tag must change whenever the image could: the code,
 * the Dockerfile, the platform, a build argument, and the base image, which is a build argument
 * pinned by digest (a `FROM node:22-alpine` would let the base change under an unchanged tag).
 * awsx's default tag hashes the context's path instead. Names and values are length-prefixed and
 * sorted, so no two different builds hash alike and the order of keys does not matter. Pure.
 */
export function imageContentTag(build: ImageBuild): string {
  const hash = crypto.createHash("sha256");
  const field = (s: string) => hash.update(`${Buffer.byteLength(s)}:`).update(s);
  const entries = (label: string, record: Record<string, string>) => {
    field(label);
    field(String(Object.keys(record).length));
    for (const key of Object.keys(record).sort()) {
      field(key);
      field(record[key]!);
    }
  };
  entries("context", build.context);
  field("dockerfile");
  field(build.dockerfile);
  field("platform");
  field(build.platform);
  entries("buildArgs", build.buildArgs);
  return `sha-${hash.digest("hex").slice(0, 32)}`;
}
