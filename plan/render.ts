import { UNKNOWN_STRING } from "../policy/testing/engine";
import type { RecordedResource, Violation } from "../policy/testing/types";

export interface PlanDocument {
  project: string;
  stack: string;
  /** `update`: a preview of an existing stack (every output known); `first-preview`: of one that does not exist yet. */
  mode: "update" | "first-preview";
  resources: Array<Pick<RecordedResource, "urn" | "type" | "name" | "parent" | "inputs" | "dependencies"> & { protect: boolean; arn?: string }>;
  violations: Violation[];
  summary: { resources: number; mandatory: number; advisory: number };
}

/** The `--json` contract of docs/plan.md: nothing else goes to stdout. */
/** The engine's placeholder for a value unknown on this preview, as the plan's JSON shows it. */
export const UNKNOWN_IN_JSON = "[unknown]";

function readable(value: unknown): unknown {
  if (value === UNKNOWN_STRING) return UNKNOWN_IN_JSON;
  if (Array.isArray(value)) return value.map(readable);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, readable(v)]));
  return value;
}

export function planDocument(
  project: string,
  stack: string,
  resources: RecordedResource[],
  violations: Violation[],
  opts: { firstPreview?: boolean } = {},
): PlanDocument {
  return {
    project,
    stack,
    mode: opts.firstPreview ? "first-preview" : "update",
    resources: resources.map(({ urn, type, name, parent, inputs, dependencies, protect, outputs }) => ({
      urn,
      type,
      name,
      parent,
      inputs: readable(inputs) as Record<string, unknown>,
      dependencies,
      protect: protect ?? false,
      ...(typeof outputs?.arn === "string" && outputs.arn !== UNKNOWN_STRING ? { arn: outputs.arn } : {}),
    })),
    violations,
    summary: {
      resources: resources.length,
      mandatory: violations.filter((v) => v.enforcementLevel === "mandatory").length,
      advisory: violations.filter((v) => v.enforcementLevel === "advisory").length,
    },
  };
}

/** A resource tree by component, like `pulumi preview`, then the violations. */
export function renderHuman(doc: PlanDocument, extras: { bundles: Record<string, number>; wallMs: number }): string {
  const children = new Map<string | null, PlanDocument["resources"]>();
  for (const r of doc.resources) {
    const key = doc.resources.some((p) => p.urn === r.parent) ? r.parent : null;
    children.set(key, [...(children.get(key) ?? []), r]);
  }
  const lines: string[] = [`Plan: project ${doc.project}, stack ${doc.stack} (offline, Pulumi mocks)`, ""];
  const walk = (parent: string | null, prefix: string) => {
    const kids = children.get(parent) ?? [];
    kids.forEach((r, i) => {
      const last = i === kids.length - 1;
      const branch = parent === null ? "" : last ? "└─ " : "├─ ";
      lines.push(`${prefix}${branch}${r.type}  ${r.name}`);
      walk(r.urn, parent === null ? prefix : prefix + (last ? "   " : "│  "));
    });
  };
  walk(null, "");
  lines.push("", `Resources: ${doc.summary.resources}`);
  const bundleLines = Object.entries(extras.bundles).map(([entry, bytes]) => `  ${entry}  ${(bytes / 1024).toFixed(1)} KiB`);
  if (bundleLines.length > 0) lines.push("Function bundles:", ...bundleLines);
  lines.push("");
  if (doc.violations.length === 0) {
    lines.push("Policy violations: none");
  } else {
    lines.push("Policy violations:");
    for (const v of doc.violations) {
      lines.push(`  ${v.enforcementLevel === "mandatory" ? "✖ mandatory" : "! advisory "}  ${v.policy}`);
      if (v.urn) lines.push(`      ${v.urn}`);
      lines.push(`      ${v.message.replace(/\n/g, "\n      ")}`);
    }
  }
  lines.push("", `${doc.summary.mandatory} mandatory, ${doc.summary.advisory} advisory violation(s); planned in ${(extras.wallMs / 1000).toFixed(1)} s`);
  return lines.join("\n");
}
