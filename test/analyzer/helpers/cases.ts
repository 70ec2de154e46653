/**
 * Cases for the analyzer tier: a view the offline evaluator judged (policy/testing/evaluate.ts), and
 * its verdict. Several cases go into one stack export, each under a stack name of its own (its URNs
 * renamed, so no two cases share a resource), because each `pulumi policy analyze` run costs seconds.
 *
 * Stack policies see every resource in the file, and some match resources by name (an SSM parameter's,
 * a Name tag) or ARN, which cases built from the same fixture share. So each case's names and account
 * are made its own too (`distinct`), where that leaves its offline verdict as it was, and a merged
 * file is used only when the offline evaluator's verdict on it is exactly the union of the cases' own
 * verdicts (`batches` splits a batch in two until it is). The comparison with the real analyzer is
 * then made on the merged file, where both sides see the same state: the mapping back to each rule
 * test's case stays exact.
 */
import { expect } from "chai";
import { evaluatePolicies } from "../../../policy/testing/evaluate";
import type { PolicyPackConfig, RecordedResource, Violation } from "../../../policy/testing/types";
import { policies } from "../../../policy/policies";
import { type ResourceV3, type UntypedDeployment, engineUrns, packageOf, stackExport, stackUrn } from "../../../plan/export";
import { installedProviderVersion } from "../../../plan/export-file";
import type { AnalyzerViolation } from "./cli";
import type { LoggedCase } from "../../policy/helpers/case-log";

export interface Case {
  /** What the case is: the test titles that judged this view, or the fixture program. */
  titles: string[];
  /** The view the pack judged (the update view: the state after a deploy). */
  view: RecordedResource[];
  config?: PolicyPackConfig;
  /** The offline evaluator's verdict on `view` alone. */
  violations: Violation[];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The case with its resources' logical names (wherever they occur: URNs, physical names, ARNs, tags,
 * parameter names) suffixed with `x<n>`, and its account id made `9<n, 11 digits>`.
 */
export function distinct<T extends Case>(c: T, n: number, account = "123456789012"): T {
  const names = [...new Set(c.view.map((r) => r.name))].filter((x) => x.length >= 3).sort((a, b) => b.length - a.length);
  const re = names.length > 0 ? new RegExp(names.map(escape).join("|"), "g") : undefined;
  const own = `9${String(n).padStart(11, "0")}`;
  const rename = (x: unknown): unknown => {
    if (typeof x === "string") {
      const s = x.split(account).join(own);
      return re ? s.replace(re, (m) => `${m}x${n}`) : s;
    }
    if (Array.isArray(x)) return x.map(rename);
    if (typeof x === "object" && x !== null) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, rename(v)]));
    return x;
  };
  return { ...c, view: rename(c.view) as RecordedResource[], violations: rename(c.violations) as Violation[] };
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

const DESCRIPTIONS = new Map(policies.map((p) => [p.name, p.description]));

/**
 * The messages too, as (policy, resource, message) lines. The policy SDK's server sends the policy's
 * description, then a newline and the message reported, if any (@pulumi/policy server.js
 * `makeReportViolationFun`); the evaluator keeps the message alone, or the description without one.
 */
export function analyzerMessages(violations: readonly AnalyzerViolation[]): Verdict[] {
  return violations
    .map((v) => {
      const description = DESCRIPTIONS.get(v.policyName) ?? "";
      const message = v.message.startsWith(`${description}\n`) ? v.message.slice(description.length + 1) : v.message;
      return `${v.policyName} ${v.resourceUrn} ${message}`;
    })
    .sort();
}

export async function offlineMessages(b: Batch): Promise<Verdict[]> {
  return (await offline(b.view, b.config)).map((v) => `${v.policy} ${v.urn ?? b.rootUrn} ${v.message}`).sort();
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

/**
 * The stacks of the cases whose verdict merging changed: every verdict line the merged view and the
 * cases' own verdicts do not share names its case by its URN's stack. Empty when merging changed nothing;
 * `["<stack>"]` for a stack violation without a resource, which names no case.
 */
async function disturbed(b: Batch): Promise<Set<string>> {
  const merged = verdict(await offline(b.view, b.config), "<stack>");
  const union = verdict(
    b.cases.flatMap((c) => c.violations),
    "<stack>",
  );
  const differ = [...merged.filter((v) => !union.includes(v)), ...union.filter((v) => !merged.includes(v))];
  return new Set(differ.map((v) => /urn:pulumi:([^:]+)::/.exec(v)?.[1] ?? "<stack>"));
}

/**
 * Groups `cases` by pack config, renames each under a stack of its own (`<prefix><n>`), and cuts the
 * groups into batches of at most `size` cases that merge cleanly: a case whose verdict the others
 * change moves to a later batch (a batch that cannot say whose verdict changed is split in halves).
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
    let rest: Batch["cases"] = [];
    for (const c of group) {
      const i = n++;
      const own = underStack(c, `${prefix}${i}`);
      const renamed = distinct(own, i);
      // A case whose verdict its renaming changes (a rule reads a name's shape) keeps its names.
      const same = JSON.stringify(verdict(await offline(renamed.view, c.config), "")) === JSON.stringify(verdict(renamed.violations, ""));
      rest.push(same ? renamed : own);
    }
    while (rest.length > 0) {
      let batch = rest.slice(0, size);
      let later = rest.slice(size);
      for (;;) {
        const stacks = await disturbed(batchOf(batch, batch[0]?.config));
        if (stacks.size === 0 || batch.length === 1) break;
        const moved = stacks.has("<stack>") ? batch.slice(Math.ceil(batch.length / 2)) : batch.filter((c) => stacks.has(c.stack));
        batch = batch.filter((c) => !moved.includes(c));
        later = [...moved, ...later];
      }
      out.push(batchOf(batch, batch[0]?.config));
      rest = later;
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

/**
 * The real analyzer's violations with the recorded URNs the offline side uses: the export writes the
 * engine's URNs (the parent's whole type chain, plan/export.ts `engineUrns`), the recording the mock
 * monitor's.
 */
export function recordedUrns<T extends { resourceUrn: string }>(
  violations: readonly T[],
  views: ReadonlyArray<ReadonlyArray<Pick<RecordedResource, "urn" | "type" | "name" | "parent">>>,
): T[] {
  const back = new Map<string, string>();
  for (const view of views) for (const [recorded, engine] of engineUrns(view)) back.set(engine, recorded);
  return violations.map((v) => ({ ...v, resourceUrn: back.get(v.resourceUrn) ?? v.resourceUrn }));
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
  const explain = [...missing.map((v) => `only offline: ${v}\n    in: ${caseOf(v)}`), ...extra.map((v) => `only real:    ${v}\n    in: ${caseOf(v)}`)].join(
    "\n",
  );
  expect(real, explain).to.deep.equal(expected);
}

/** Update-mode cases without stack tags, one per distinct (view, config), with every title that judged it. */
export function replayable(logged: readonly LoggedCase[]): Case[] {
  const byKey = new Map<string, Case>();
  for (const l of logged) {
    if (l.mode !== "update" || Object.keys(l.options.stackTags ?? {}).length > 0 || l.options.defaultEnforcementLevel !== undefined) continue;
    if (l.view.length === 0) continue;
    const key = JSON.stringify([l.view, l.options.config ?? null]);
    const known = byKey.get(key);
    if (known) known.titles.push(l.title);
    else byKey.set(key, { titles: [l.title], view: l.view, config: l.options.config, violations: l.violations });
  }
  return [...byKey.values()];
}
