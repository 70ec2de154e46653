/** plan/sarif.ts: the plan's violations as SARIF 2.1.0, validated against the OASIS schema. */
import * as fs from "node:fs";
import * as path from "node:path";
import Ajv from "ajv-draft-04";
import { expect } from "chai";
import { sarifLog } from "../../plan/sarif";
import { REPO_ROOT } from "../../infra/bundle";
import { policies } from "../../policy/policies";
import type { RecordedResource, Violation } from "../../policy/testing/types";

const schema = JSON.parse(fs.readFileSync(path.join(__dirname, "fixtures/sarif-schema-2.1.0.json"), "utf8")) as object;
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

const URN = "urn:pulumi:prod::encache::encache:compute:QueueConsumer$aws:lambda/function:Function::orders-dlq-consumer";
const resource: RecordedResource = {
  urn: URN,
  type: "aws:lambda/function:Function",
  name: "orders-dlq-consumer",
  parent: null,
  custom: true,
  inputs: {},
  outputs: {},
  dependencies: [],
  propertyDependencies: {},
  sourcePosition: { uri: `file://${path.join(REPO_ROOT, "infra/components/queue-consumer.ts")}`, line: 168, column: 21 },
};
const violations: Violation[] = [
  {
    policy: "dlq-consumer-can-start-gpu",
    enforcementLevel: "mandatory",
    urn: URN,
    message: "DLQ consumer 'orders-dlq-consumer' cannot start the GPU instance",
  },
  { policy: "dlq-has-depth-alarm", enforcementLevel: "advisory", urn: null, message: "a stack-wide finding" },
];

describe("plan --sarif (plan/sarif.ts)", () => {
  const log = sarifLog({ stack: "prod", mode: "first-preview", violations, resources: [resource], policies, root: REPO_ROOT, toolVersion: "0.1.0" });
  const run = (log.runs as Array<{ results: Array<Record<string, unknown>>; tool: { driver: { rules: Array<{ id: string }> } } }>)[0]!;

  it("validates against the SARIF 2.1.0 schema", () => {
    const ok = validate(log);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).to.deep.equal([]);
    expect(ok).to.equal(true);
  });

  it("names the rule, the level, the resource and the line that declared it", () => {
    expect(run.results[0]).to.deep.include({ ruleId: "dlq-consumer-can-start-gpu", level: "error" });
    expect(run.results[0]!.locations).to.deep.equal([
      {
        physicalLocation: {
          artifactLocation: { uri: "infra/components/queue-consumer.ts", uriBaseId: "%SRCROOT%" },
          region: { startLine: 168, startColumn: 21 },
        },
        logicalLocations: [{ name: "orders-dlq-consumer", fullyQualifiedName: URN, kind: "resource" }],
      },
    ]);
    expect(run.tool.driver.rules.map((r) => r.id)).to.deep.equal(policies.map((p) => p.name));
  });

  it("points a finding of no single resource at the stack file, as a warning when advisory", () => {
    expect(run.results[1]).to.deep.include({ ruleId: "dlq-has-depth-alarm", level: "warning" });
    expect(JSON.stringify(run.results[1]!.locations)).to.contain('"uri":"Pulumi.prod.yaml"');
  });

  it("refuses nothing the schema forbids: a broken log fails validation (the check can fail)", () => {
    expect(validate({ version: "2.1.0", runs: [{ results: [] }] })).to.equal(false);
  });
});
