/**
 * Act and Assess for the rule tests: run the whole pack over a recording (as `pulumi preview
 * --policy-pack` would), then check exactly which (policy, URN) pairs fired.
 */
import { expect } from "chai";
import { evaluatePolicies, type EvaluateOptions } from "../../../policy/testing/evaluate";
import { firstPreview, updateView } from "../../../policy/testing/engine";
import type { RecordedResource, Violation } from "../../../policy/testing/types";
import { policies } from "../../../policy/policies";
import { withDeclarations } from "./recording";
import { logCase } from "./case-log";

export type Mode = "update" | "first-preview";

/**
 * Act: the whole pack, so a case also proves no OTHER rule fires on its resources, over what the
 * engine would hand it (policy/testing/engine.ts, the offline plan's model): a preview of an
 * existing stack or `up` by default, or a first preview. The recording gets the program's
 * declarations first.
 */
export async function evaluate(resources: RecordedResource[], options: EvaluateOptions & { mode?: Mode; declare?: boolean } = {}): Promise<Violation[]> {
  const { mode = "update", declare = true, ...rest } = options;
  // `declare: false` plays a program that puts no DeclaredDocument beside its documents.
  const declared = declare ? withDeclarations(resources) : resources;
  const view = mode === "first-preview" ? firstPreview(declared) : updateView(declared);
  const violations = await evaluatePolicies(view, policies, rest);
  // The analyzer tier replays these views through the real CLI (a no-op unless POLICY_CASE_LOG is set).
  logCase({ mode, options: rest, view, violations });
  return violations;
}

export interface Expected {
  policy: string;
  level: Violation["enforcementLevel"];
  urn: string | null;
  /** Some violation of `policy` (the only one, when `count` is 1) has a matching message. */
  message?: RegExp;
  /** How many violations `policy` reports on `urn` (default 1). */
  count?: number;
  /** Other (policy, URN) pairs the case legitimately trips as well. */
  also?: [string, string][];
}

/** Assess: `policy` fired on `urn` only, at `level`, and nothing else fired but `also`. */
export function expectViolation(violations: Violation[], e: Expected): void {
  const dump = JSON.stringify(violations, null, 2);
  const mine = violations.filter((v) => v.policy === e.policy);
  expect(
    mine.map((v) => [v.urn, v.enforcementLevel]),
    dump,
  ).to.deep.equal(Array.from({ length: e.count ?? 1 }, () => [e.urn, e.level]));
  if (e.message) {
    const re = e.message;
    expect(
      mine.some((v) => re.test(v.message)),
      `no ${e.policy} message matches ${re}:\n${dump}`,
    ).to.equal(true);
  }
  const fired = [...new Set(violations.map((v) => `${v.policy} ${v.urn}`))].sort();
  const expected = [`${e.policy} ${e.urn}`, ...(e.also ?? []).map(([p, u]) => `${p} ${u}`)].sort();
  expect(fired, dump).to.deep.equal(expected);
}

/** Assess: nothing fired at all. */
export function expectNoViolations(violations: Violation[]): void {
  expect(violations, JSON.stringify(violations, null, 2)).to.deep.equal([]);
}

/** Assess: `policy` did not fire (other rules may, when the case is about this one only). */
export function expectNoViolationOf(violations: Violation[], policy: string): void {
  const mine = violations.filter((v) => v.policy === policy);
  expect(mine, JSON.stringify(violations, null, 2)).to.deep.equal([]);
}

/** Assess: exactly these policies fired (any URNs), listed once each in sorted order. */
export function expectPolicies(violations: Violation[], names: string[]): void {
  expect([...new Set(violations.map((v) => v.policy))].sort(), JSON.stringify(violations, null, 2)).to.deep.equal([...names].sort());
}
