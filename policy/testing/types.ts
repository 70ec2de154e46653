/**
 * The offline plan's recording: what the program registered under Pulumi mocks.
 * Everything is keyed by URN, because logical names are not unique (a Role and a
 * Function may share one).
 */
export interface RecordedResource {
  urn: string;
  /** Pulumi type token, e.g. `aws:sqs/queue:Queue` or `encache:messaging:ManagedQueue`. */
  type: string;
  name: string;
  /** Parent URN, or null for children of the stack. */
  parent: string | null;
  /** True for provider (custom) resources, false for components. */
  custom: boolean;
  /** Raw inputs as the program passed them (already resolved; secrets unwrapped). */
  inputs: Record<string, unknown>;
  /** What the mock returned as state: inputs plus realistic id/arn/url/name. */
  outputs: Record<string, unknown>;
  /** Where the program declared it: a file URI, 1-based line and column (from the SDK's RegisterResourceRequest). */
  sourcePosition?: { uri: string; line: number; column: number };
  /** The id the mock returned (custom resources); absent in hand-built fixtures that need none. */
  id?: string;
  /** Every URN this resource depends on (property dependencies and dependsOn). */
  dependencies: string[];
  /** Input key → URNs whose outputs flowed into that input. */
  propertyDependencies: Record<string, string[]>;
  /** Resource option `protect`: the engine refuses to delete or replace the resource. Absent means false. */
  protect?: boolean;
  /** Top-level inputs that hold a secret (the stack export writes them in its secret form; not part of the `--json` contract). */
  secretInputs?: string[];
  /** Top-level outputs that hold a secret (as `secretInputs`). */
  secretOutputs?: string[];
  /** Resource option `ignoreChanges`, when set (not part of the `--json` contract). */
  ignoreChanges?: string[];
  /** Resource option `deleteBeforeReplace`, when set (not part of the `--json` contract). */
  deleteBeforeReplace?: boolean;
  /** Resource option `aliases`, as the SDK sent them: URNs or alias specs (not part of the `--json` contract). */
  aliases?: unknown[];
}

export type EnforcementLevel = "advisory" | "mandatory" | "remediate" | "disabled";

export interface Violation {
  policy: string;
  enforcementLevel: "mandatory" | "advisory";
  urn: string | null;
  message: string;
}

/** Contents of `policy/config.<stack>.json`, in `--policy-pack-config` format. */
export type PolicyPackConfig = Record<string, EnforcementLevel | ({ enforcementLevel?: EnforcementLevel } & Record<string, unknown>)>;
