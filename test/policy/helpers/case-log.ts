/**
 * The analyzer tier's record of the rule tests' cases (test/analyzer/policy-cases.test.ts): when
 * POLICY_CASE_LOG names a file, every `evaluate` of the rule tests appends one JSON line with the
 * view the pack judged, the options and the offline evaluator's verdict, so the real analyzer can
 * judge the same view. Without it this does nothing.
 */
import * as fs from "node:fs";
import type { EvaluateOptions } from "../../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../../policy/testing/types";

export interface LoggedCase {
  /** The mocha test's full title (test/analyzer/helpers/case-hooks.ts sets it). */
  title: string;
  mode: "update" | "first-preview";
  options: EvaluateOptions;
  view: RecordedResource[];
  violations: Violation[];
}

/** Set by the root hook of the capture run, read here; a global because the helpers cannot see mocha's context. */
export const CURRENT_TEST = { title: "" };

export function logCase(entry: Omit<LoggedCase, "title">): void {
  const file = process.env.POLICY_CASE_LOG;
  if (!file) return;
  fs.appendFileSync(file, `${JSON.stringify({ title: CURRENT_TEST.title, ...entry })}\n`);
}
