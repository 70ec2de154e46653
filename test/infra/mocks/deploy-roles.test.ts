/**
 * The CI deploy roles (ci/aws/deploy-<stack>.permissions.json, docs/ci.md) against what each
 * committed stack's plan declares: `pulumi up` must be able to create every resource, so the role
 * grants every AWS service the plan has a resource of. test/ci/roles.test.ts checks the documents'
 * shape (region condition, IAM in the account, no `*`); this is the part that needs the plans. A
 * stack whose config adds a service (prod's GPU fleet: Auto Scaling and Elastic Load Balancing)
 * fails here until its role can deploy it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../../infra/bundle";
import { STACKS, useStackPlans } from "../helpers/run-plan";

type Statement = { Effect: string; Action: string | string[] };

/**
 * The IAM service prefix of a Pulumi type's API, where it is not the type's module: pulumi-aws
 * files CloudWatch Logs under `cloudwatch`, and the load balancers (`lb`, `alb`) are one API.
 */
const SERVICE_OF_TYPE: Record<string, string> = {
  "aws:cloudwatch/logGroup:LogGroup": "logs",
  "aws:cloudwatch/eventTarget:EventTarget": "events",
  "aws:cloudwatch/eventRule:EventRule": "events",
};
const SERVICE_OF_MODULE: Record<string, string> = {
  appautoscaling: "application-autoscaling",
  lb: "elasticloadbalancing",
  alb: "elasticloadbalancing",
};

/** The IAM service prefix that creates a resource of `type` (`aws:<module>/<name>:<Name>`). Pure. */
function iamServiceOf(type: string): string {
  const module = /^aws:([a-z0-9]+)\//.exec(type)?.[1];
  if (!module) throw new Error(`${type} is not an AWS resource type`);
  return SERVICE_OF_TYPE[type] ?? SERVICE_OF_MODULE[module] ?? module;
}

/** True when the document allows `service:<anything>`, i.e. `service:*` (the deploy roles grant whole services). */
function allowsService(doc: { Statement: Statement[] }, service: string): boolean {
  return doc.Statement.some((s) => s.Effect === "Allow" && [s.Action].flat().includes(`${service}:*`));
}

describe("the CI deploy roles can deploy what each stack's plan declares", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();

  it("maps a type to the API that creates it", () => {
    expect(
      ["aws:sqs/queue:Queue", "aws:cloudwatch/logGroup:LogGroup", "aws:lb/targetGroup:TargetGroup", "aws:appautoscaling/policy:Policy"].map(iamServiceOf),
    ).to.deep.equal(["sqs", "logs", "elasticloadbalancing", "application-autoscaling"]);
  });

  for (const stack of STACKS) {
    it(`deploy-${stack} grants every service of ${stack}'s plan`, () => {
      // Prepare
      const doc = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "ci", "aws", `deploy-${stack}.permissions.json`), "utf8")) as { Statement: Statement[] };
      const services = [...new Set(stacks[stack]!.resources.filter((r) => r.type.startsWith("aws:")).map((r) => iamServiceOf(r.type)))].sort();
      // Assess: the plan is not empty of services, and the role lacks none of them.
      expect(services).to.include.members(["sqs", "lambda", "iam", "ec2"]);
      expect(services.filter((s) => !allowsService(doc, s))).to.deep.equal([]);
    });
  }
});
