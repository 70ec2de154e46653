/**
 * Cases for the analyzer tier: a view the offline evaluator judged (policy/testing/evaluate.ts), and
 * its verdict. Several cases go into one stack export, each under a stack name of its own (its URNs
 * renamed, so no two cases share a resource), because each `pulumi policy analyze` run costs seconds.
 *
 * Stack policies see every resource in the file, and some match resources by name or ARN, which the
 * cases share: a merged file is used only when the offline evaluator's verdict on it is exactly the
 * union of the cases' own verdicts (`batches` splits a batch in two until it is). The comparison with
 * the real analyzer is then made on the merged file, where both sides see the same state.
 */
import { expect } from "chai";
import { evaluatePolicies } from "../../../policy/testing/evaluate";
import type { PolicyPackConfig, RecordedResource, Violation } from "../../../policy/testing/types";
import { policies } from "../../../policy/policies";
import { type ResourceV3, type UntypedDeployment, packageOf, stackExport, stackUrn } from "../../../plan/export";
import { installedProviderVersion } from "../../../plan/export-file";
import type { AnalyzerViolation } from "./cli";

export interface Case {
  /** What the case is: the test titles that judged this view, or the fixture program. */
  titles: string[];
  /** The view the pack judged (the update view: the state after a deploy). */
  view: RecordedResource[];
  config?: PolicyPackConfig;
  /** The offline evaluator's verdict on `view` alone. */
  violations: Violation[];
}

/** One (policy, resource, level) of a verdict; a stack violation without a resource is the root stack's, as the engine attributes it. */
export type Verdict = string;

/** The stack and project of a view's URNs (all of a case's URNs share them). */
export function stackOf(view: readonly RecordedResource[]): { stack: string; project: string } {
  const m = /^urn:pulumi:([^:]+)::([^:]+)::/.exec(view[0]?.urn ?? "");
  if (!m) throw new Error(`a case's first URN is not a Pulumi URN: ${view[0]?.urn}`);
  return { stack: m[1] as string, project: m[2] as string };
}

/** `value` with every URN of stack `from` renamed to stack `to`, anywhere inside it. */
function renamed<T>(value: T, from: string, to: string): T {
  const rename = (v: unknown): unknown => {
    if (typeof v === "string") return v.startsWith(from) ? to + v.slice(from.length) : v;
    if (Array.isArray(v)) return v.map(rename);
    if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [rename(k), rename(x)]));
    return v;
  };
  return rename(value) as T;
}

/** The case under stack `stack`: every URN in its view and verdict renamed. */
export function underStack(c: Case, stack: string): Case & { stack: string; project: string } {
  const { stack: old, project } = stackOf(c.view);
  const from = `urn:pulumi:${old}::${project}::`;
  const to = `urn:pulumi:${stack}::${project}::`;
  return { ...c, view: renamed(c.view, from, to), violations: renamed(c.violations, from, to), stack, project };
}

export function verdict(violations: ReadonlyArray<Pick<Violation, "policy" | "urn" | "enforcementLevel">>, rootUrn: string): Verdict[] {
  return violations.map((v) => `${v.policy} ${v.enforcementLevel} ${v.urn ?? rootUrn}`).sort();
}

export function analyzerVerdict(violations: readonly AnalyzerViolation[]): Verdict[] {
  return violations.map((v) => `${v.policyName} ${v.enforcementLevel} ${v.resourceUrn}`).sort();
}

/** One analyze run: cases under stacks of their own, the same pack config. */
export interface Batch {
  cases: Array<Case & { stack: string; project: string }>;
  config?: PolicyPackConfig;
  /** The merged view, in file order. */
  view: RecordedResource[];
  /** The URN a stack violation without a resource goes to: the first root stack in the file. */
  rootUrn: string;
}

function batchOf(cases: Batch["cases"], config: PolicyPackConfig | undefined): Batch {
  const first = cases[0];
  if (!first) throw new Error("an empty batch");
  return { cases, config, view: cases.flatMap((c) => c.view), rootUrn: stackUrn(first.project, first.stack) };
}

async function offline(view: RecordedResource[], config: PolicyPackConfig | undefined): Promise<Violation[]> {
  return evaluatePolicies(view, policies, { config: config ?? {} });
}

/** True when the offline verdict on the merged view is the cases' own verdicts together: merging changed nothing. */
async function mergesCleanly(b: Batch): Promise<boolean> {
  const merged = verdict(await offline(b.view, b.config), "<stack>");
  const union = verdict(
    b.cases.flatMap((c) => c.violations),
    "<stack>",
  );
  return JSON.stringify(merged) === JSON.stringify(union);
}

/**
 * Groups `cases` by pack config, renames each under a stack of its own (`<prefix><n>`), and cuts the
 * groups into batches of at most `size` cases that merge cleanly (split in halves until they do).
 */
export async function batches(cases: readonly Case[], prefix: string, size: number): Promise<Batch[]> {
  const byConfig = new Map<string, Case[]>();
  for (const c of cases) {
    const key = JSON.stringify(c.config ?? null);
    byConfig.set(key, [...(byConfig.get(key) ?? []), c]);
  }
  const out: Batch[] = [];
  let n = 0;
  for (const group of byConfig.values()) {
    const named = group.map((c) => underStack(c, `${prefix}${n++}`));
    const pending: Array<Batch["cases"]> = [];
    for (let i = 0; i < named.length; i += size) pending.push(named.slice(i, i + size));
    while (pending.length > 0) {
      const cs = pending.shift() as Batch["cases"];
      const b = batchOf(cs, cs[0]?.config);
      if (cs.length === 1 || (await mergesCleanly(b))) out.push(b);
      else pending.unshift(cs.slice(0, Math.ceil(cs.length / 2)), cs.slice(Math.ceil(cs.length / 2)));
    }
  }
  return out;
}

/** The batch as one stack export: each case's own Stack, default provider and resources. */
export function batchExport(b: Batch): UntypedDeployment {
  const versions: Record<string, string> = {};
  const resources: ResourceV3[] = [];
  let head: UntypedDeployment | undefined;
  for (const c of b.cases) {
    for (const pkg of new Set(c.view.map((r) => packageOf(r.type)))) {
      if (pkg !== "pulumi" && pkg !== c.project && !(pkg in versions)) versions[pkg] = installedProviderVersion(pkg);
    }
    const doc = stackExport({ project: c.project, stack: c.stack, resources: c.view, providerVersions: versions, time: "2026-01-01T00:00:00Z" });
    head ??= doc;
    resources.push(...doc.deployment.resources);
  }
  if (!head) throw new Error("an empty batch");
  return { ...head, deployment: { ...head.deployment, resources } };
}

/** The offline verdict on the batch's merged view, and the real analyzer's on its export, as the same kind of list. */
export async function offlineVerdict(b: Batch): Promise<Verdict[]> {
  return verdict(await offline(b.view, b.config), b.rootUrn);
}

/** Assess: the real analyzer's verdict is the offline one; on a difference, name the cases it concerns. */
export function expectSameVerdict(b: Batch, real: Verdict[], expected: Verdict[]): void {
  const missing = expected.filter((v) => !real.includes(v));
  const extra = real.filter((v) => !expected.includes(v));
  const caseOf = (v: Verdict) => {
    const stack = /urn:pulumi:([^:]+)::/.exec(v)?.[1];
    return b.cases.find((c) => c.stack === stack)?.titles[0] ?? "?";
  };
  const explain = [
    ...missing.map((v) => `only offline: ${v}\n    in: ${caseOf(v)}`),
    ...extra.map((v) => `only real:    ${v}\n    in: ${caseOf(v)}`),
  ].join("\n");
  expect(real, explain).to.deep.equal(expected);
}
