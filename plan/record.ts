import * as pulumi from "@pulumi/pulumi";
import { isUnknown } from "@pulumi/pulumi/output";
import { UNKNOWN_STRING } from "../policy/testing/engine";
import type { RecordedResource } from "../policy/testing/types";

/**
 * Records every registration the program makes under Pulumi mocks. The mocks' `newResource`
 * sees no parent, dependencies or URN, but the raw RegisterResourceRequest the mock monitor
 * receives does, so the monitor's `registerResource` is wrapped.
 */

// The proto classes are generated JS without types that the SDK exports; these are the
// accessors we read from them.
interface RegisterRequest {
  getType(): string;
  getName(): string;
  getParent(): string;
  getCustom(): boolean;
  getObject(): unknown;
  getDependenciesList(): string[];
  getIgnorechangesList(): string[];
  getDeletebeforereplace(): boolean;
  getAliasurnsList(): string[];
  getAliasesList(): Array<{ getUrn(): string; getSpec(): { toObject(): unknown } | undefined }>;
  getPropertydependenciesMap(): { forEach(cb: (value: { getUrnsList(): string[] }, key: string) => void): void };
  getProtect(): boolean | undefined;
  /** Where the program declared the resource (the SDK takes it from the constructor's stack frame). */
  getSourceposition?(): { getUri(): string; getLine(): number; getColumn(): number } | undefined;
}
interface RegisterResponse {
  getUrn(): string;
  getObject(): unknown;
}
type Callback = (err: Error | null, resp?: RegisterResponse) => void;
interface MonitorLike {
  registerResource(req: RegisterRequest, cb: Callback): void;
  registerResourceOutputs(req: { getUrn(): string; getOutputs(): unknown }, cb: (err: Error | null, resp?: unknown) => void): void;
}

export interface Recorder {
  /** Resources in registration order, once every registration has answered. */
  settle(timeoutMs?: number): Promise<RecordedResource[]>;
}

/** Call right after `setMocks` and before the program is imported. */
export function installRecorder(): Recorder {
  const monitor = pulumi.runtime.getMonitor() as unknown as MonitorLike | undefined;
  if (!monitor) throw new Error("installRecorder: no monitor; call pulumi.runtime.setMocks first");
  const records: RecordedResource[] = [];
  const byUrn = new Map<string, RecordedResource>();
  let pending = 0;
  let started = 0;

  const original = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req, cb) => {
    pending++;
    started++;
    const propertyDependencies: Record<string, string[]> = {};
    req.getPropertydependenciesMap().forEach((v, k) => {
      propertyDependencies[k] = [...v.getUrnsList()];
    });
    const rawInputs = deserialize(req.getObject());
    const secretInputs = secretKeysOf(rawInputs);
    const base = {
      type: req.getType(),
      name: req.getName(),
      parent: req.getParent() || null,
      custom: req.getCustom(),
      inputs: rawInputs,
      ...(secretInputs.length > 0 ? { secretInputs } : {}),
      dependencies: [...new Set(req.getDependenciesList())],
      propertyDependencies,
      // Children inherit protect from their parent in the SDK, so what arrives here is final.
      protect: req.getProtect() ?? false,
      ...sourcePositionOf(req),
      ...(req.getIgnorechangesList().length > 0 ? { ignoreChanges: [...req.getIgnorechangesList()] } : {}),
      ...(req.getDeletebeforereplace() ? { deleteBeforeReplace: true } : {}),
      ...aliasesOf(req),
    };
    original(req, (err, resp) => {
      pending--;
      if (!err && resp) {
        const id = (resp as RegisterResponse & { getId?(): string }).getId?.() ?? "";
        const outputs = deserialize(resp.getObject());
        const secretOutputs = secretKeysOf(outputs);
        const rec: RecordedResource = {
          urn: resp.getUrn(),
          ...base,
          outputs,
          ...(id ? { id } : {}),
          ...(secretOutputs.length > 0 ? { secretOutputs } : {}),
        };
        records.push(rec);
        byUrn.set(rec.urn, rec);
      }
      cb(err, resp);
    });
  };

  const originalOutputs = monitor.registerResourceOutputs.bind(monitor);
  monitor.registerResourceOutputs = (req, cb) => {
    const rec = byUrn.get(req.getUrn());
    if (rec) {
      const outputs = deserialize(req.getOutputs());
      rec.outputs = { ...rec.outputs, ...outputs };
      const secret = [...new Set([...(rec.secretOutputs ?? []), ...secretKeysOf(outputs)])];
      if (secret.length > 0) rec.secretOutputs = secret;
    }
    originalOutputs(req, cb);
  };

  return {
    async settle(timeoutMs = 60_000) {
      // Resources created inside apply() register late, and waitForRPCs misses them:
      // wait until nothing is in flight and no new registration appeared for two turns.
      const deadline = Date.now() + timeoutMs;
      let quietTurns = 0;
      let seen = -1;
      while (quietTurns < 2) {
        if (Date.now() > deadline) throw new Error(`the program was still registering resources after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
        if (pending === 0 && started === seen) quietTurns++;
        else quietTurns = 0;
        seen = started;
      }
      return Promise.all(records.map(async (r) => ({ ...r, inputs: await plainValue(r.inputs), outputs: await plainValue(r.outputs) }) as RecordedResource));
    },
  };
}

/** The resource's aliases as the SDK sent them: URNs, or specs (name, type, parent…) as objects. */
function aliasesOf(req: RegisterRequest): { aliases?: unknown[] } {
  const aliases = [...req.getAliasurnsList(), ...req.getAliasesList().map((a) => a.getUrn() || a.getSpec()?.toObject())].filter(
    (a) => a !== undefined && a !== "",
  );
  return aliases.length > 0 ? { aliases } : {};
}

function sourcePositionOf(req: RegisterRequest): { sourcePosition?: { uri: string; line: number; column: number } } {
  const pos = req.getSourceposition?.();
  if (!pos || !pos.getUri()) return {};
  return { sourcePosition: { uri: pos.getUri(), line: pos.getLine(), column: pos.getColumn() } };
}

function deserialize(struct: unknown): Record<string, unknown> {
  if (!struct) return {};
  return pulumi.runtime.deserializeProperties(struct as Parameters<typeof pulumi.runtime.deserializeProperties>[0]) as Record<string, unknown>;
}

const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const SIG_KEY = "4dabf18193072939515e22adb298388d";

/** True when a deserialized value holds a secret anywhere (the SDK's secret wrapper, or a secret Output). */
function holdsSecret(v: unknown): boolean {
  if (v === null || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  if (o[SIG_KEY] === SECRET_SIG) return true;
  if (Array.isArray(v)) return v.some(holdsSecret);
  if (pulumi.asset.Asset.isInstance(v) || pulumi.asset.Archive.isInstance(v)) return false;
  return Object.values(o).some(holdsSecret);
}

/** The top-level keys of deserialized properties whose value holds a secret. */
export function secretKeysOf(props: Record<string, unknown>): string[] {
  return Object.entries(props)
    .filter(([, v]) => holdsSecret(v))
    .map(([k]) => k);
}

/**
 * Turns deserialized property values into plain JSON data: secrets unwrapped, assets and
 * archives summarised by size and SHA-256 (a bundle's text would drown the plan).
 */
export async function plainValue<T>(value: T): Promise<T> {
  return (await toPlain(value)) as T;
}

async function toPlain(v: unknown): Promise<unknown> {
  // On a preview the SDK deserialises a value not yet known to its `unknown` marker; the recording
  // keeps the engine's wire placeholder instead, which the policy SDK turns back into an unknown.
  if (isUnknown(v)) return UNKNOWN_STRING;
  if (v === null || v === undefined || typeof v !== "object") return v;
  if (pulumi.asset.Archive.isInstance(v)) {
    const archive = v as pulumi.asset.Archive & { assets?: Promise<Record<string, unknown>>; path?: Promise<string> };
    if (archive.assets) {
      const assets = await archive.assets;
      const out: Record<string, unknown> = {};
      for (const [k, a] of Object.entries(assets)) out[k] = await toPlain(a);
      return { archive: out };
    }
    return { archive: { path: await archive.path } };
  }
  if (pulumi.asset.Asset.isInstance(v)) {
    const asset = v as pulumi.asset.Asset & { text?: Promise<string>; path?: Promise<string> };
    if (asset.text) {
      const text = await asset.text;
      const { createHash } = await import("node:crypto");
      return { asset: { bytes: Buffer.byteLength(text), sha256: createHash("sha256").update(text).digest("base64") } };
    }
    return { asset: { path: await asset.path } };
  }
  if (Array.isArray(v)) return Promise.all((v as unknown[]).map(toPlain));
  const o = v as Record<string, unknown>;
  if (o[SIG_KEY] === SECRET_SIG) return toPlain(o.value);
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(o)) out[k] = await toPlain(val);
  return out;
}
