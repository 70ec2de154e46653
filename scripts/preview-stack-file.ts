/**
 * `tsx scripts/preview-stack-file.ts <stack>` readies Pulumi.<stack>.yaml, in the pull-request
 * preview's own checkout, for the throwaway backend (.github/workflows/preview.yml): it removes the
 * keys of the real stack's secrets manager (`encryptionsalt`, `encryptedkey`, `secretsprovider`)
 * and leaves the config as committed.
 *
 * Why: the preview creates the stack anew under a passphrase generated for the run, and Pulumi's
 * passphrase manager reuses a salt it finds in the stack file, checking the passphrase against it
 * (pkg/secrets/passphrase/manager.go in pulumi/pulumi): once the real stack's `encryptionsalt` is
 * committed (docs/ci.md suggests it), every preview fails with "incorrect passphrase". Without
 * those keys Pulumi makes a fresh salt for the throwaway stack, as on a first `stack init`. The
 * checkout is the job's and is never pushed, so the committed file is untouched.
 *
 * A `secure:` config value stops it (exit 2): the run's passphrase could not decrypt it anyway, and
 * the preview is meant to hold no secret (docs/ci.md).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isMap, isScalar, parseDocument, visit } from "yaml";

const ROOT = path.resolve(__dirname, "..");
const STACK_NAME = /^[a-z][a-z0-9-]*$/;
/** The stack file's keys that belong to the real stack's secrets manager. */
export const SECRETS_MANAGER_KEYS = ["encryptionsalt", "encryptedkey", "secretsprovider"] as const;

export class PreviewStackFileError extends Error {
  override name = "PreviewStackFileError";
}

/** Pure: the stack file's text without its secrets manager's keys, and which it removed; refuses a `secure:` value. */
export function throwawayStackFile(text: string, where: string): { text: string; removed: string[] } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new PreviewStackFileError(`${where}: not YAML (${doc.errors[0]?.message ?? "?"})`);
  const secure: string[] = [];
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.value === "secure") secure.push(String(pair.key.value));
    },
  });
  if (secure.length > 0) {
    throw new PreviewStackFileError(
      `${where}: holds a \`secure:\` config value, which the preview's throwaway passphrase cannot decrypt; keep secrets out of the committed config (docs/ci.md)`,
    );
  }
  const removed = isMap(doc.contents) ? SECRETS_MANAGER_KEYS.filter((k) => doc.has(k)) : [];
  if (removed.length === 0) return { text, removed };
  for (const k of removed) doc.delete(k);
  return { text: doc.toString(), removed: [...removed] };
}

/** Rewrites Pulumi.<stack>.yaml under `root` for the throwaway backend; returns the keys removed. */
export function readyStackFile(stack: string, root: string = ROOT): string[] {
  if (!STACK_NAME.test(stack)) throw new PreviewStackFileError(`not a stack name: ${JSON.stringify(stack)}`);
  const file = path.join(root, `Pulumi.${stack}.yaml`);
  if (!fs.existsSync(file)) throw new PreviewStackFileError(`Pulumi.${stack}.yaml: no such stack file`);
  const out = throwawayStackFile(fs.readFileSync(file, "utf8"), `Pulumi.${stack}.yaml`);
  if (out.removed.length > 0) fs.writeFileSync(file, out.text);
  return out.removed;
}

if (require.main === module) {
  try {
    const [stack] = process.argv.slice(2);
    const removed = readyStackFile(stack ?? "");
    process.stdout.write(
      removed.length > 0
        ? `preview-stack-file: removed ${removed.join(", ")} from Pulumi.${stack}.yaml (the throwaway stack makes its own)\n`
        : `preview-stack-file: Pulumi.${stack}.yaml names no secrets manager; nothing to remove\n`,
    );
  } catch (err) {
    if (!(err instanceof PreviewStackFileError)) throw err;
    process.stderr.write(`preview-stack-file: ${err.message}\n`);
    process.exitCode = 2;
  }
}
