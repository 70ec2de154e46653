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
    expectViolation(await evaluate(rs), {
      policy: POLICY,
      level: "mandatory",
      urn: W.taskDefinition,
      message: /containerDefinitions differs from its declaration/,
      also: [["ecs-container-least-privilege", W.taskDefinition]],
    });
  });

  it("fails an IAM policy with a key its declaration lacks (IAM documents compare whole)", async () => {
    const rs = withDeclarations(workerRecording());
    const policy = structuredClone(find(rs, W.taskPolicy).inputs.policy) as { Statement: Array<Record<string, unknown>> };
    policy.Statement[0]!.NotResource = "*";
    setInput(rs, W.taskPolicy, "policy", policy);
    expectViolation(await evaluate(rs), { policy: POLICY, level: "mandatory", urn: W.taskPolicy, message: /policy differs from its declaration/ });
  });

  describe("compares as the provider does: lists AWS does not order are compared as sets", () => {
    type Env = Array<{ name: string; value: string }>;
    // localeCompare puts "AWS_REGION" before "AWSX" ("_" sorts before letters); the provider stores
    // the environment in byte order ("_" is 0x5F, after "X"), the order cmp.Compare gives.
    const localeOrder: Env = [
      { name: "AWS_REGION", value: "eu-west-1" },
      { name: "AWSX", value: "1" },
      { name: "QUEUE_URL", value: "https://sqs" },
    ];

    it("passes an environment the program lists in another order than the provider stores", async () => {
      // Prepare
      const rs = workerRecording();
      setContainer(rs, (c) => (c.environment = localeOrder));
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    const differs: Array<[string, (env: Env) => void]> = [
      ["a value", (env) => (env[1]!.value = "2")],
      ["a variable the declaration lacks", (env) => env.push({ name: "EXTRA", value: "x" })],
      ["a variable the declaration has", (env) => env.pop()],
    ];
    for (const [title, edit] of differs) {
      it(`fails an environment that differs in ${title}, whatever the order`, async () => {
        // Prepare
        const rs = withDeclarations(
          (() => {
            const r = workerRecording();
            setContainer(r, (c) => (c.environment = structuredClone(localeOrder)));
            return r;
          })(),
        );
        setContainer(rs, (c) => {
          const env = structuredClone(c.environment as Env).reverse();
          edit(env);
          c.environment = env;
        });
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, {
          policy: POLICY,
          level: "mandatory",
          urn: W.taskDefinition,
          message: /containerDefinitions differs from its declaration/,
        });
      });
    }

    it("passes an IAM policy whose Action and Resource lists are in another order, or a lone string for a one-element list", async () => {
      // Prepare
      const rs = withDeclarations(workerRecording());
      const policy = structuredClone(find(rs, W.taskPolicy).inputs.policy) as { Statement: Array<Record<string, unknown>> };
      for (const s of policy.Statement) {
        if (Array.isArray(s.Action)) s.Action = s.Action.length === 1 ? s.Action[0] : [...(s.Action as string[])].reverse();
        if (Array.isArray(s.Resource)) s.Resource = [...(s.Resource as string[])].reverse();
      }
      policy.Statement.reverse();
      setInput(rs, W.taskPolicy, "policy", policy);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });
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
