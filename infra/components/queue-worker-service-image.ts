import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { bundleFunction, REPO_ROOT, type FunctionBundle } from "../bundle";

/**
 * Writes the Docker build context of a bundled Node process: one `worker.js`, the esbuild bundle
 * of `entry` with every dependency inside, so the image needs no npm install. The file is only
 * rewritten when its content changed (atomically, since several plans may run at once), so the
 * context's hash, and therefore the image, changes only with the code.
 */
export function writeImageContext(entry: string, contextDir: string, fileName = "worker.js"): FunctionBundle {
  const bundle = bundleFunction(entry);
  const dir = path.resolve(REPO_ROOT, contextDir);
  const target = path.join(dir, fileName);
  const current = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : undefined;
  if (current !== bundle.code) {
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${target}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, bundle.code);
    fs.renameSync(tmp, target);
  }
  return bundle;
}

/**
 * The image's tag, from what goes into the build: the bundle, the Dockerfile and the platform. An
 * immutable ECR repository refuses to overwrite a tag, so the tag must change exactly when the
 * image does; awsx's default tag hashes the context's path instead, and a code change would then
 * fail the second deploy. Pure.
 */
export function imageContentTag(build: { code: string; dockerfile: string; platform: string }): string {
  const hash = crypto.createHash("sha256").update(build.code).update("\0").update(build.dockerfile).update("\0").update(build.platform).digest("hex");
  return `sha-${hash.slice(0, 32)}`;
}
