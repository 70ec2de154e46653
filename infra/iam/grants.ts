import * as pulumi from "@pulumi/pulumi";
import type { Grant } from "../../functions/shared/grants";
import type { Statement } from "./document";

/**
 * Where a symbolic resource of a grant lives: its ARNs, and the conditions that scope it (a tag
 * value from config, the cluster a task runs on). The part that owns the resources binds them.
 */
export interface Binding {
  resource: pulumi.Input<string> | pulumi.Input<string>[];
  /** A value may be a list (IAM ORs its values), and an output (a launch template's ARN). */
  condition?: Record<string, Record<string, pulumi.Input<string> | pulumi.Input<string>[]>>;
}

/** An ARN from its parts: a plain string when every part is one (pure callers and their tests), else an output. */
export function arnOf(...parts: pulumi.Input<string>[]): pulumi.Input<string> {
  return parts.every((p): p is string => typeof p === "string") ? parts.join("") : pulumi.concat(...parts);
}

/** One binding for every symbolic resource the grants name, and no other. */
export type Bindings<G extends readonly Grant[]> = { [K in G[number]["resource"]]: Binding };

/**
 * A role's statements, derived from the grants declared beside the function code
 * (`functions/<part>/iam.ts`): one statement per grant, in order, its Sid the grant's.
 */
export function statementsFor<const G extends readonly Grant[]>(grants: G, bindings: Bindings<G>): Statement[] {
  return grants.map((g) => {
    const binding: Binding = bindings[g.resource as G[number]["resource"]];
    const condition = mergeConditions(g.condition, binding.condition);
    return {
      Sid: g.sid,
      Effect: "Allow",
      Action: [...g.actions],
      Resource: binding.resource,
      ...(condition ? { Condition: condition } : {}),
    };
  });
}

/**
 * `Statement` types condition values as literal strings so the pack can read them at preview;
 * pulumi-aws resolves Inputs anywhere in a document, so a binding may scope by an output (the
 * cluster ARN). Only conditions no rule needs to read are Inputs.
 */
function mergeConditions(fromGrant: Grant["condition"], fromBinding: Binding["condition"]): Statement["Condition"] | undefined {
  if (!fromGrant && !fromBinding) return undefined;
  const merged: Record<string, Record<string, string | string[]>> = {};
  for (const source of [fromGrant ?? {}, fromBinding ?? {}]) {
    for (const [operator, entries] of Object.entries(source)) {
      // Typed as literals for the Statement; pulumi-aws resolves the outputs inside (see above).
      merged[operator] = { ...merged[operator], ...(entries as Record<string, string | string[]>) };
    }
  }
  return merged;
}
