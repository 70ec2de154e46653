/**
 * `npm run plan -- --export <file>`: the stack export (plan/export.ts) of a planned program, with the
 * program's own stack outputs and the installed provider SDKs' versions. Loaded only with --export.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { type ExportSecrets, packageOf, stackExport } from "./export";
import { plainValue } from "./record";
import type { RecordedResource } from "../policy/testing/types";

/** The version of `@pulumi/<pkg>` this program loads: the default provider the engine would start. */
export function installedProviderVersion(pkg: string, from: string = __dirname): string {
  const file = require.resolve(`@pulumi/${pkg}/package.json`, { paths: [from] });
  return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version;
}

/** AES-256-GCM as the engine's symmetric crypter seals a value: `v1:<nonce>:<ciphertext and tag>`, base64. */
function seal(key: Buffer, plaintext: string): string {
  const nonce = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv("aes-256-gcm", key, nonce);
  const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `v1:${nonce.toString("base64")}:${sealed.toString("base64")}`;
}

/**
 * A passphrase secrets manager, as `pulumi stack init` makes one on a file backend
 * (pkg/secrets/passphrase `NewPassphraseSecretsManager`): an 8-byte salt, a key from PBKDF2-SHA256
 * with 1,000,000 iterations, and the state `v1:<salt>:<"pulumi" sealed>` that lets the CLI check the
 * passphrase.
 */
export function passphraseSecrets(passphrase: string): ExportSecrets {
  const salt = crypto.randomBytes(8);
  const key = crypto.pbkdf2Sync(passphrase, salt, 1_000_000, 32, "sha256");
  return {
    provider: { type: "passphrase", state: { salt: `v1:${salt.toString("base64")}:${seal(key, "pulumi")}` } },
    encrypt: (plaintext) => seal(key, plaintext),
  };
}

/** A resolved Output's value, and whether it is secret. */
async function settle(value: unknown): Promise<{ value: unknown; secret: boolean }> {
  const out: pulumi.Output<unknown> = pulumi.output(value as pulumi.Input<unknown>);
  // `isSecret` is the SDK's own promise on every Output, marked @internal in its typings.
  const isSecret = (out as unknown as { isSecret: Promise<boolean> }).isSecret;
  const [resolved, secret] = await Promise.all([new Promise<unknown>((resolve) => out.apply((v) => resolve(v))), isSecret]);
  return { value: await plainValue(resolved), secret };
}

export async function writeStackExport(
  file: string,
  opts: { project: string; stack: string; resources: RecordedResource[]; config: Record<string, string>; returned: unknown },
): Promise<void> {
  const stackOutputs: Record<string, unknown> = {};
  const secretStackOutputs: string[] = [];
  if (typeof opts.returned === "object" && opts.returned !== null) {
    for (const [key, value] of Object.entries(opts.returned)) {
      const settled = await settle(value);
      if (settled.value === undefined) continue;
      stackOutputs[key] = settled.value;
      if (settled.secret) secretStackOutputs.push(key);
    }
  }
  const packages = [...new Set(opts.resources.map((r) => packageOf(r.type)))].filter((p) => p !== "pulumi" && p !== opts.project);
  const providerVersions = Object.fromEntries(packages.map((p) => [p, installedProviderVersion(p)]));
  const hasSecrets = secretStackOutputs.length > 0 || opts.resources.some((r) => (r.secretInputs?.length ?? 0) + (r.secretOutputs?.length ?? 0) > 0);
  // A passphrase backend's own form when the passphrase is at hand; else plaintext, which `policy analyze --file` reads.
  const passphrase = process.env.PULUMI_CONFIG_PASSPHRASE;
  const secrets = hasSecrets && passphrase !== undefined ? passphraseSecrets(passphrase) : undefined;
  if (hasSecrets && !secrets) {
    process.stderr.write("plan: --export wrote secrets as plaintext; set PULUMI_CONFIG_PASSPHRASE to seal them for `pulumi stack import`\n");
  }
  const doc = stackExport({ ...opts, providerVersions, stackOutputs, secretStackOutputs, secrets });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
}
