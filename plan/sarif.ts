/**
 * The plan's violations as SARIF 2.1.0, for code scanning: each violation is a result with its
 * rule, its level, the resource (a logical location, its URN) and the place in the program that
 * declared the resource (the SDK records a source position with every registration). A violation
 * of no single resource points at the stack file.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { Policies } from "@pulumi/policy";
import type { RecordedResource, Violation } from "../policy/testing/types";

export interface SarifInput {
  stack: string;
  mode: "update" | "first-preview";
  violations: readonly Violation[];
  resources: readonly RecordedResource[];
  policies: Policies;
  /** The checkout: artifact URIs are relative to it, so they resolve against the repository. */
  root: string;
  toolVersion: string;
}

const LEVEL = { mandatory: "error", advisory: "warning" } as const;

/** A repository-relative URI for a `file://` source position, or undefined when it lies outside the checkout. */
function relativeUri(uri: string, root: string): string | undefined {
  let file: string;
  try {
    file = fileURLToPath(uri);
  } catch {
    return undefined;
  }
  const rel = path.relative(root, file);
  if (rel.startsWith("..") || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join("/");
}

export function sarifLog(input: SarifInput): Record<string, unknown> {
  const byUrn = new Map(input.resources.map((r) => [r.urn, r]));
  const rules = input.policies.map((p) => ({
    id: p.name,
    name: p.name,
    shortDescription: { text: p.description },
    defaultConfiguration: { level: p.enforcementLevel === "advisory" ? "warning" : "error" },
  }));
  const ruleIndex = new Map(rules.map((r, i) => [r.id, i]));
  const stackFile = `Pulumi.${input.stack}.yaml`;
  const results = input.violations.map((v) => {
    const resource = v.urn ? byUrn.get(v.urn) : undefined;
    const uri = resource?.sourcePosition ? relativeUri(resource.sourcePosition.uri, input.root) : undefined;
    const region =
      uri && resource?.sourcePosition
        ? { startLine: Math.max(1, resource.sourcePosition.line), startColumn: Math.max(1, resource.sourcePosition.column) }
        : { startLine: 1 };
    return {
      ruleId: v.policy,
      ...(ruleIndex.has(v.policy) ? { ruleIndex: ruleIndex.get(v.policy) } : {}),
      level: LEVEL[v.enforcementLevel],
      message: { text: v.message },
      locations: [
        {
          physicalLocation: { artifactLocation: { uri: uri ?? stackFile, uriBaseId: "%SRCROOT%" }, region },
          ...(v.urn ? { logicalLocations: [{ name: resource?.name ?? v.urn.split("::").pop(), fullyQualifiedName: v.urn, kind: "resource" }] } : {}),
        },
      ],
    };
  });
  return {
    $schema: "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
    version: "2.1.0",
    runs: [
      {
        tool: { driver: { name: "encache-plan", version: input.toolVersion, rules } },
        // One category per stack and mode, so code scanning keeps each plan's alerts apart.
        automationDetails: { id: `encache-plan/${input.stack}/${input.mode}/` },
        results,
      },
    ],
  };
}
