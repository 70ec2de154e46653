/** policy/rules/declared-documents-match.ts: declarations say what is deployed. */
import { expect } from "chai";
import { saysAllOf } from "../../../policy/rules/declared-documents-match";
import { W, setContainer, workerRecording } from "../helpers/worker";
import { find, setInput, withDeclarations } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation } from "../helpers/violations";

const POLICY = "declared-documents-match";

describe(POLICY, () => {
  it("passes container definitions as ECS stores them: the declared fields, plus ECS's own defaults", async () => {
    // Prepare: declare from the program's value, then let the state hold what ECS returns.
    const rs = withDeclarations(workerRecording());
    const stored = (JSON.parse(String(find(rs, W.taskDefinition).inputs.containerDefinitions)) as Array<Record<string, unknown>>).map((c) => ({
      ...c,
      cpu: 0,
      portMappings: [],
      volumesFrom: [],
      systemControls: [],
    }));
    setInput(rs, W.taskDefinition, "containerDefinitions", JSON.stringify(stored));
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  it("fails a container definition that differs from its declaration in a declared field", async () => {
    const rs = withDeclarations(workerRecording());
    setContainer(rs, (c) => (c.readonlyRootFilesystem = false));
    expectViolation(await evaluate(rs), { policy: POLICY, level: "mandatory", urn: W.taskDefinition, message: /containerDefinitions differs from its declaration/, also: [["ecs-container-least-privilege", W.taskDefinition]] });
  });

  it("fails an IAM policy with a key its declaration lacks (IAM documents compare whole)", async () => {
    const rs = withDeclarations(workerRecording());
    const policy = structuredClone(find(rs, W.taskPolicy).inputs.policy) as { Statement: Array<Record<string, unknown>> };
    policy.Statement[0]!.NotResource = "*";
    setInput(rs, W.taskPolicy, "policy", policy);
    expectViolation(await evaluate(rs), { policy: POLICY, level: "mandatory", urn: W.taskPolicy, message: /policy differs from its declaration/ });
  });

  const cases: Array<[string, unknown, unknown, boolean]> = [
    ["extra keys in the actual object", { a: 1, b: 2 }, { a: 1 }, true],
    ["a different value", { a: 2 }, { a: 1 }, false],
    ["a longer list", [1, 2], [1], false],
    ["a nested extra key", [{ a: 1, z: 0 }], [{ a: 1 }], true],
    ["a missing key", {}, { a: 1 }, false],
  ];
  for (const [title, actual, declared, ok] of cases) {
    it(`saysAllOf: ${title} → ${ok}`, () => expect(saysAllOf(actual, declared)).to.equal(ok));
  }
});
