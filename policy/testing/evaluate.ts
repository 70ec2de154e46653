/**
 * Runs a policy pack's policies against the offline plan's recording, the way the Pulumi engine's
 * analyzer would: resource policies see each resource's inputs, stack policies see every
 * resource's outputs with parent, dependencies and propertyDependencies resolved to objects.
 * Arguments are built by hand (no gRPC, no child process) so a plan stays fast.
 */
import * as policySdk from "@pulumi/policy";
import * as deserializeModule from "@pulumi/policy/deserialize";
import * as proxyModule from "@pulumi/policy/proxy";
import type {
  Policies,
  PolicyConfigSchema,
  PolicyResource,
  PolicyResourceOptions,
  ReportViolation,
  ResourceValidation,
  ResourceValidationArgs,
  ResourceValidationPolicy,
  StackValidationArgs,
  StackValidationPolicy,
} from "@pulumi/policy";
import type { EnforcementLevel, PolicyPackConfig, RecordedResource, Violation } from "./types";
import pack from "../package.json";

// @pulumi/policy marks these @internal, so its .d.ts files declare nothing; these are their real shapes.
const unknownCheckingProxy = (policySdk as unknown as { unknownCheckingProxy<T extends object>(o: T): T }).unknownCheckingProxy;
const UnknownValueError = (policySdk as unknown as { UnknownValueError: abstract new (...a: never[]) => Error }).UnknownValueError;
const deserializeProperties = (
  deserializeModule as unknown as {
    deserializeProperties(struct: { toJavaScript(): unknown }, proxySecrets: boolean): Record<string, unknown>;
  }
).deserializeProperties;

/**
 * The engine's placeholders for values that are unknown during preview. A recording that stores
 * one of these in inputs/outputs makes a policy reading it report "can't run during preview".
 */
export const UNKNOWN = proxyModule as unknown as {
  unknownStringValue: string;
  unknownNumberValue: string;
  unknownBooleanValue: string;
  unknownArrayValue: string;
  unknownObjectValue: string;
};

export interface EvaluateOptions {
  config?: PolicyPackConfig;
  stackTags?: Record<string, string>;
  /** The pack-wide level for policies that set none; `new PolicyPack` defaults to advisory. */
  defaultEnforcementLevel?: EnforcementLevel;
  /** The pack's name and version, which the SDK puts in a "can't run during preview" message; policy/package.json's by default. */
  policyPack?: { name: string; version: string };
}

class NotApplicable extends Error {}

function isStackPolicy(p: Policies[number]): p is StackValidationPolicy {
  return typeof (p as Partial<StackValidationPolicy>).validateStack === "function";
}

function resourceValidations(p: ResourceValidationPolicy): ResourceValidation[] {
  const v = p.validateResource;
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

function isUnknownValueError(e: unknown): e is Error {
  // Duck-typed too: the pack may load its own copy of @pulumi/policy, whose error class differs.
  return e instanceof UnknownValueError || (e instanceof Error && "unknownTypeSentinel" in e && "props" in e);
}

function pulumiTypeOf(x: unknown): string | undefined {
  const t = (x as { __pulumiType?: unknown } | null | undefined)?.__pulumiType;
  return typeof t === "string" && t.length > 0 ? t : undefined;
}

function isTypeOf(type: string, resourceClass: unknown): boolean {
  const t = pulumiTypeOf(resourceClass);
  if (t !== undefined) return t === type;
  const isInstance = (resourceClass as { isInstance?: unknown }).isInstance;
  return typeof isInstance === "function" && isInstance({ __pulumiType: type }) === true;
}

/** What a protobuf Struct would carry: no undefined members, undefined array slots as null. */
function structLike(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : structLike(v)));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = structLike(v);
    return out;
  }
  return value;
}

/** Deserialized with the SDK's own deserializer (secrets unwrapped, assets rebuilt), then proxied. */
function policyProps(raw: Record<string, unknown>, urn: string): Record<string, unknown> {
  const plain = structLike(raw);
  let props: Record<string, unknown>;
  try {
    props = deserializeProperties({ toJavaScript: () => plain }, false);
  } catch (e) {
    throw new Error(`cannot deserialize properties of ${urn}: ${(e as Error).message}`, { cause: e });
  }
  return unknownCheckingProxy(props);
}

function resourceOptions(r: RecordedResource): PolicyResourceOptions {
  const opts: PolicyResourceOptions = {
    protect: r.protect ?? false,
    // The engine hands over the resource's own ignoreChanges (the state's, or the goal's at preview).
    ignoreChanges: [...(r.ignoreChanges ?? [])],
    aliases: [],
    customTimeouts: { createSeconds: 0, updateSeconds: 0, deleteSeconds: 0 },
    additionalSecretOutputs: [],
  };
  if (r.parent) opts.parent = r.parent;
  return opts;
}

function configEntry(config: PolicyPackConfig, name: string): Record<string, unknown> {
  const entry = config[name];
  if (entry === undefined) return {};
  return typeof entry === "string" ? { enforcementLevel: entry } : entry;
}

function levelOf(p: Policies[number], config: PolicyPackConfig, fallback: EnforcementLevel): EnforcementLevel {
  const configured = configEntry(config, p.name).enforcementLevel as EnforcementLevel | undefined;
  return configured ?? p.enforcementLevel ?? fallback;
}

/** configSchema defaults, overlaid with the config file's values for that policy. */
function makeGetConfig(p: Policies[number], config: PolicyPackConfig): <T extends object>() => T {
  const defaults: Record<string, unknown> = {};
  const schema: PolicyConfigSchema | undefined = p.configSchema;
  for (const [k, s] of Object.entries(schema?.properties ?? {})) {
    const d = (s as { default?: unknown }).default;
    if (d !== undefined) defaults[k] = structuredClone(d);
  }
  const { enforcementLevel: _level, ...values } = configEntry(config, p.name);
  // The caller chooses T; config is untyped JSON, exactly as the engine hands it over.
  return <T extends object>() => ({ ...defaults, ...structuredClone(values) }) as T;
}

function notApplicable(reason?: string): never {
  throw new NotApplicable(reason);
}

function freezeTags(tags: Record<string, string>): ReadonlyMap<string, string> {
  return new Map(Object.entries(tags));
}

/** Resource objects for a stack policy, built afresh per policy so one policy cannot disturb another. */
function stackResources(recording: readonly RecordedResource[]): PolicyResource[] {
  const byUrn = new Map<string, PolicyResource>();
  const built = recording.map((r) => {
    const props = policyProps(r.outputs, r.urn);
    const resource: PolicyResource = {
      type: r.type,
      props,
      urn: r.urn,
      name: r.name,
      opts: resourceOptions(r),
      dependencies: [],
      propertyDependencies: {},
      isType: (cls) => isTypeOf(r.type, cls),
      // asType's generic return type cannot be expressed for a runtime type token.
      asType: ((cls: unknown) => (isTypeOf(r.type, cls) ? props : undefined)) as PolicyResource["asType"],
    };
    byUrn.set(r.urn, resource);
    return { r, resource };
  });
  const resolve = (urns: readonly string[]): PolicyResource[] => urns.map((u) => byUrn.get(u)).filter((x): x is PolicyResource => x !== undefined);
  for (const { r, resource } of built) {
    const parent = r.parent ? byUrn.get(r.parent) : undefined;
    if (parent) resource.parent = parent;
    resource.dependencies = resolve(r.dependencies);
    // The engine sends no entry for an input without dependencies (pkg/resource/plugin/analyzer_plugin.go
    // AnalyzeStack: "Skip properties that have no dependencies"); one whose dependencies are all
    // outside the stack arrives, and the SDK leaves it empty.
    for (const [k, urns] of Object.entries(r.propertyDependencies)) if (urns.length > 0) resource.propertyDependencies[k] = resolve(urns);
  }
  return built.map((b) => b.resource);
}

function errorViolation(policy: string, urn: string | null, e: unknown, pack: { name: string; version: string }): Violation {
  if (isUnknownValueError(e)) {
    // The SDK's own words (@pulumi/policy server.js), pack and version included: the real analyzer
    // showed the evaluator leaving them out (test/analyzer/engine-edges.test.ts).
    return {
      policy,
      enforcementLevel: "advisory",
      urn,
      message: `can't run policy '${policy}' from policy pack '${pack.name}@v${pack.version}' during preview: ${e.message}`,
    };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { policy, enforcementLevel: "mandatory", urn, message: `policy '${policy}' failed with an error: ${message}` };
}

function compareViolations(a: Violation, b: Violation): number {
  const rank = (v: Violation) => (v.enforcementLevel === "mandatory" ? 0 : 1);
  return (
    rank(a) - rank(b) || a.policy.localeCompare(b.policy, "en") || (a.urn ?? "").localeCompare(b.urn ?? "", "en") || a.message.localeCompare(b.message, "en")
  );
}

export async function evaluatePolicies(resources: RecordedResource[], policies: Policies, options: EvaluateOptions = {}): Promise<Violation[]> {
  const config = options.config ?? {};
  const stackTags = freezeTags(options.stackTags ?? {});
  const fallbackLevel = options.defaultEnforcementLevel ?? "advisory";
  const packInfo = options.policyPack ?? { name: pack.name, version: pack.version };
  const violations: Violation[] = [];

  for (const p of policies) {
    const configured = levelOf(p, config, fallbackLevel);
    if (configured === "disabled") continue;
    // Violations are reported after remediation would have run, so remediate reads as mandatory.
    const level: Violation["enforcementLevel"] = configured === "advisory" ? "advisory" : "mandatory";
    const getConfig = makeGetConfig(p, config);

    if (isStackPolicy(p)) {
      const report: ReportViolation = (message, urn) =>
        violations.push({ policy: p.name, enforcementLevel: level, urn: urn ?? null, message: message || p.description });
      const args: StackValidationArgs = { resources: stackResources(resources), stackTags, getConfig, notApplicable };
      try {
        await p.validateStack(args, report);
      } catch (e) {
        if (!(e instanceof NotApplicable)) violations.push(errorViolation(p.name, null, e, packInfo));
      }
      continue;
    }

    const validations = resourceValidations(p);
    for (const r of resources) {
      // Like the engine, the URN passed to reportViolation is ignored for resource policies.
      const report: ReportViolation = (message) => violations.push({ policy: p.name, enforcementLevel: level, urn: r.urn, message: message || p.description });
      for (const validate of validations) {
        const onlyType = pulumiTypeOf(validate);
        if (onlyType !== undefined && onlyType !== r.type) continue;
        try {
          const props = policyProps(r.inputs, r.urn);
          const args: ResourceValidationArgs = {
            type: r.type,
            props,
            urn: r.urn,
            name: r.name,
            opts: resourceOptions(r),
            stackTags,
            isType: (cls) => isTypeOf(r.type, cls),
            // asType's generic return type cannot be expressed for a runtime type token.
            asType: ((cls: unknown) => (isTypeOf(r.type, cls) ? props : undefined)) as ResourceValidationArgs["asType"],
            getConfig,
            notApplicable,
          };
          await validate(args, report);
        } catch (e) {
          if (!(e instanceof NotApplicable)) violations.push(errorViolation(p.name, r.urn, e, packInfo));
        }
      }
    }
  }
  return violations.sort(compareViolations);
}
