/**
 * The offline plan as the stack's state after a deploy: what `pulumi stack export` prints once `pulumi up`
 * has run the program, so the real CLI can judge it (`pulumi policy analyze --file`) or load it
 * (`pulumi stack import --file`). Pure: the caller hands in the update view (policy/testing/engine.ts),
 * whose outputs are the provider model's stored outputs.
 *
 * The format follows pulumi/pulumi's own types (sdk/go/common/apitype/core.go `UntypedDeployment`,
 * `DeploymentV3`, `ResourceV3`, `SecretV1`; pkg/resource/stack/deployment.go serialises and checks them):
 *
 * - `{ version: 3, deployment: { manifest, resources } }`; the manifest's `magic` is the SHA-256 of its
 *   `version` (pkg/resource/deploy/manifest.go `NewMagic`).
 * - The root `pulumi:pulumi:Stack` resource first (custom false, no id), with the program's outputs.
 * - A default provider per package (`pulumi:providers:aws::default_7_48_0`), custom with an id, its
 *   inputs the package's stack config plus `version`; every custom resource of that package, and every
 *   remote component (awsx), refers to it as `<provider urn>::<provider id>`.
 * - URNs as the engine writes them: the type part is the parent's whole type chain, then the type
 *   (`encache:parts:Ingest$encache:messaging:ManagedQueue$aws:sqs/queue:Queue`; sdk/go/common/resource
 *   `NewURN`), where Pulumi's mock monitor keeps only the immediate parent's type (`engineUrns`).
 *   Every reference (parent, dependencies, property dependencies, a value that is a URN) follows.
 * - Resources the program left without a parent are the Stack's children, as the engine parents them.
 * - Components are `custom: false` without an id; custom resources carry their id.
 * - Secrets as `{ <sig key>: <secret sig>, ciphertext: "v1:<nonce>:<sealed>" }` with the passphrase
 *   secrets manager's state in `secrets_providers`, as a passphrase backend's export holds them
 *   (`secrets` below; pkg/secrets/passphrase, sdk/go/common/resource/config/crypt.go). Without it,
 *   `{ …, plaintext: <JSON text> }`, the form `pulumi stack export --show-secrets` prints:
 *   `policy analyze --file` reads it, but `stack import` then has no secrets manager to store it with
 *   (v3.274.1 panics: "attempt to encrypt value").
 * - Resources in dependency order (parents, dependencies and providers first): the engine's snapshot
 *   integrity check (`Snapshot.VerifyIntegrity`) refuses anything else.
 */
import { createHash } from "node:crypto";
import type { RecordedResource } from "../policy/testing/types";

/** The CLI version the manifest names (the one scripts/ensure-pulumi.sh provides). */
export const EXPORT_CLI_VERSION = "v3.274.1";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const SIG_KEY = "4dabf18193072939515e22adb298388d";

export interface ResourceV3 {
  urn: string;
  custom: boolean;
  id?: string;
  type: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  parent?: string;
  protect?: boolean;
  dependencies?: string[];
  provider?: string;
  propertyDependencies?: Record<string, string[]>;
  ignoreChanges?: string[];
}

export interface SecretsProviderV1 {
  type: string;
  state: unknown;
}

/** How the export seals secrets: the secrets manager's state, and its encrypter. */
export interface ExportSecrets {
  provider: SecretsProviderV1;
  encrypt(plaintext: string): string;
}

export interface UntypedDeployment {
  version: 3;
  deployment: {
    manifest: { time: string; magic: string; version: string };
    secrets_providers?: SecretsProviderV1;
    resources: ResourceV3[];
  };
}

export interface ExportOptions {
  project: string;
  stack: string;
  /** The update view: inputs after Check, outputs as the provider stores them. */
  resources: readonly RecordedResource[];
  /** Package → the version of its SDK (and so of its default provider), e.g. `{ aws: "7.48.0" }`. */
  providerVersions: Readonly<Record<string, string>>;
  /** Fully-qualified stack config (`aws:region` → value), as Pulumi hands it to a program. */
  config?: Readonly<Record<string, string>>;
  /** The program's stack outputs. */
  stackOutputs?: Record<string, unknown>;
  /** Top-level stack outputs that are secret. */
  secretStackOutputs?: readonly string[];
  /** Seal secrets with this manager; without it they are written as plaintext. */
  secrets?: ExportSecrets;
  /** The manifest's time; fixed in tests. */
  time?: string;
}

/** Packages whose resources the engine gives no provider: the Stack itself and local components. */
const isLocal = (pkg: string, project: string) => pkg === "pulumi" || pkg === project || pkg === "encache";

export const packageOf = (type: string): string => type.split(":")[0] ?? "";

export function stackUrn(project: string, stack: string): string {
  return `urn:pulumi:${stack}::${project}::pulumi:pulumi:Stack::${project}-${stack}`;
}

export function defaultProviderUrn(project: string, stack: string, pkg: string, version: string): string {
  return `urn:pulumi:${stack}::${project}::pulumi:providers:${pkg}::default_${version.replace(/[.+-]/g, "_")}`;
}

type UrnFields = Pick<RecordedResource, "urn" | "type" | "name" | "parent">;

/**
 * Recorded URN → the URN the engine gives the resource: `urn:pulumi:<stack>::<project>::` then the
 * parent's qualified type (its URN's type part; none for a child of the root Stack) joined to the
 * resource's type with `$`, then `::<name>`. A resource whose parent is not in `resources` keeps its URN.
 */
export function engineUrns(resources: readonly UrnFields[]): Map<string, string> {
  const byUrn = new Map(resources.map((r) => [r.urn, r]));
  const out = new Map<string, string>();
  const resolve = (r: UrnFields, seen: Set<string>): string => {
    const known = out.get(r.urn);
    if (known) return known;
    const prefix = /^(urn:pulumi:[^:]+::[^:]+::)/.exec(r.urn)?.[1];
    const parent = r.parent ? byUrn.get(r.parent) : undefined;
    let urn = r.urn;
    if (prefix && (!r.parent || parent) && !seen.has(r.urn)) {
      const parentType = parent ? (resolve(parent, new Set([...seen, r.urn])).split("::")[2] ?? "") : "";
      urn = `${prefix}${parentType ? `${parentType}$` : ""}${r.type}::${r.name}`;
    }
    out.set(r.urn, urn);
    return urn;
  };
  for (const r of resources) resolve(r, new Set());
  return out;
}

/** `value` with every string that is one of `urns`' keys replaced by its value. */
function withUrns<T>(value: T, urns: ReadonlyMap<string, string>): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return urns.get(v) ?? v;
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** A UUID-shaped id fixed by its inputs, as the engine gives a provider a random UUID. */
function providerId(urn: string): string {
  const h = createHash("sha256").update(urn).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** `value` in the export's secret form: sealed when `secrets` is given, else plaintext. */
export function secretValue(value: unknown, secrets?: ExportSecrets): Record<string, string> {
  const text = JSON.stringify(value);
  return secrets ? { [SIG_KEY]: SECRET_SIG, ciphertext: secrets.encrypt(text) } : { [SIG_KEY]: SECRET_SIG, plaintext: text };
}

function withSecrets(props: Record<string, unknown>, secretKeys: readonly string[] | undefined, secrets: ExportSecrets | undefined): Record<string, unknown> {
  if (!secretKeys || secretKeys.length === 0) return props;
  const out = { ...props };
  for (const key of secretKeys) if (key in out) out[key] = secretValue(out[key], secrets);
  return out;
}

/** The provider's inputs: each `<pkg>:<key>` config value (non-strings as JSON text, as the engine passes config) and `version`. */
function providerInputs(pkg: string, version: string, config: Readonly<Record<string, string>>): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    const [ns, ...rest] = key.split(":");
    if (ns === pkg && rest.length > 0) inputs[rest.join(":")] = value;
  }
  return { ...inputs, version };
}

/** `resources` ordered so that everything a resource names (parent, dependencies, provider) comes before it; stable otherwise. */
function dependencyOrder(resources: readonly ResourceV3[]): ResourceV3[] {
  const byUrn = new Map(resources.map((r) => [r.urn, r]));
  const placed = new Set<string>();
  const visiting = new Set<string>();
  const out: ResourceV3[] = [];
  const visit = (r: ResourceV3) => {
    if (placed.has(r.urn) || visiting.has(r.urn)) return;
    visiting.add(r.urn);
    const refs = [r.parent, r.provider?.split("::").slice(0, -1).join("::"), ...(r.dependencies ?? []), ...Object.values(r.propertyDependencies ?? {}).flat()];
    for (const ref of refs) {
      const dep = ref ? byUrn.get(ref) : undefined;
      if (dep) visit(dep);
    }
    visiting.delete(r.urn);
    placed.add(r.urn);
    out.push(r);
  };
  for (const r of resources) visit(r);
  return out;
}

export function stackExport(opts: ExportOptions): UntypedDeployment {
  const { project, stack, config = {} } = opts;
  const root = stackUrn(project, stack);
  const providers = new Map<string, ResourceV3>();
  const providerRef = (pkg: string): string | undefined => {
    if (isLocal(pkg, project)) return undefined;
    const version = opts.providerVersions[pkg];
    if (!version) throw new Error(`no provider version for package "${pkg}": pass it in providerVersions`);
    let p = providers.get(pkg);
    if (!p) {
      const urn = defaultProviderUrn(project, stack, pkg, version);
      const inputs = providerInputs(pkg, version, config);
      p = { urn, custom: true, id: providerId(urn), type: `pulumi:providers:${pkg}`, inputs, outputs: { ...inputs } };
      providers.set(pkg, p);
    }
    return `${p.urn}::${p.id}`;
  };

  const urns = engineUrns(opts.resources);
  const body: ResourceV3[] = withUrns(opts.resources, urns).map((r) => {
    const pkg = packageOf(r.type);
    // Custom resources and remote components (a package's components, constructed by its provider) name their provider.
    const provider = r.custom || !isLocal(pkg, project) ? providerRef(pkg) : undefined;
    const out: ResourceV3 = {
      urn: r.urn,
      custom: r.custom,
      ...(r.custom ? { id: r.id ?? `${r.name}-id` } : {}),
      type: r.type,
      inputs: withSecrets(r.inputs, r.secretInputs, opts.secrets),
      outputs: withSecrets(r.outputs, r.secretOutputs, opts.secrets),
      parent: r.parent ?? root,
      ...(r.protect ? { protect: true } : {}),
      dependencies: [...r.dependencies],
      ...(provider ? { provider } : {}),
      propertyDependencies: Object.fromEntries(Object.entries(r.propertyDependencies).map(([k, v]) => [k, [...v]])),
      ...(r.ignoreChanges && r.ignoreChanges.length > 0 ? { ignoreChanges: [...r.ignoreChanges] } : {}),
    };
    return out;
  });

  const stackResource: ResourceV3 = {
    urn: root,
    custom: false,
    type: "pulumi:pulumi:Stack",
    outputs: withSecrets(opts.stackOutputs ?? {}, opts.secretStackOutputs, opts.secrets),
  };
  return {
    version: 3,
    deployment: {
      manifest: {
        time: opts.time ?? new Date().toISOString(),
        magic: createHash("sha256").update(EXPORT_CLI_VERSION).digest("hex"),
        version: EXPORT_CLI_VERSION,
      },
      ...(opts.secrets ? { secrets_providers: opts.secrets.provider } : {}),
      resources: [stackResource, ...dependencyOrder([...providers.values(), ...body])],
    },
  };
}
