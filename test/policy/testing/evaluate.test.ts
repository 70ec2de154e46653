import { expect } from "chai";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import type { Policies, PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { evaluatePolicies, UNKNOWN } from "../../../policy/testing/evaluate";
import type { PolicyPackConfig, RecordedResource } from "../../../policy/testing/types";
import { policies } from "../../../policy/policies";
import { U, ingestRecording } from "../helpers/ingest";
import { T, find, remove, setInput } from "../helpers/recording";

function loadConfig(stack: string): PolicyPackConfig {
  const file = path.resolve(__dirname, "../../../policy", `config.${stack}.json`);
  return JSON.parse(readFileSync(file, "utf8")) as PolicyPackConfig;
}

// Stand-ins for @pulumi/aws classes: isType/asType only read `__pulumiType`, so tests pass these
// `as never` instead of loading @pulumi/aws.
const fakeQueueClass = { __pulumiType: T.queue };
const fakeRoleClass = { __pulumiType: T.role };

describe("evaluatePolicies", () => {
  it("a config of `disabled` skips the rule", async () => {
    const rs = ingestRecording();
    setInput(rs, U.ingest, "visibilityTimeoutSeconds", 100);
    expect(await evaluatePolicies(rs, policies)).to.have.length(1);
    const violations = await evaluatePolicies(rs, policies, {
      config: { "visibility-timeout-covers-consumer": "disabled" },
    });
    expect(violations).to.deep.equal([]);
  });

  it("the prod config raises the advisory depth-alarm rule to mandatory; dev keeps it advisory", async () => {
    const rs = ingestRecording();
    remove(rs, U.dlqAlarm);
    const dev = await evaluatePolicies(rs, policies, { config: loadConfig("dev") });
    const prod = await evaluatePolicies(rs, policies, { config: loadConfig("prod") });
    expect(dev.map((v) => [v.policy, v.enforcementLevel, v.urn])).to.deep.equal([["dlq-has-depth-alarm", "advisory", U.dlq]]);
    expect(prod.map((v) => [v.policy, v.enforcementLevel, v.urn])).to.deep.equal([["dlq-has-depth-alarm", "mandatory", U.dlq]]);
  });

  it("config values override configSchema defaults (prod requires maxReceiveCount ≥ 3)", async () => {
    const rs = ingestRecording();
    setInput(rs, U.ingest, "redrivePolicy", JSON.stringify({ deadLetterTargetArn: "arn:aws:sqs:x:1:ingest-dlq", maxReceiveCount: 2 }));
    expect(await evaluatePolicies(rs, policies, { config: loadConfig("dev") })).to.deep.equal([]);
    const prod = await evaluatePolicies(rs, policies, { config: loadConfig("prod") });
    expect(prod.map((v) => [v.policy, v.urn])).to.deep.equal([["dlq-retention-exceeds-source", U.ingest]]);
  });

  it("the visibility multiplier comes from config", async () => {
    const rs = ingestRecording();
    const violations = await evaluatePolicies(rs, policies, {
      config: { "visibility-timeout-covers-consumer": { enforcementLevel: "mandatory", timeoutMultiplier: 13 } },
    });
    // 13 × 30 = 390 > 360 for ingest; 13 × 60 + 5 = 785 > 400 for the DLQ.
    expect(violations.map((v) => v.urn).sort()).to.deep.equal([U.dlq, U.ingest].sort());
  });

  it("both config files name only real policies and valid levels", () => {
    const names = new Set(policies.map((p) => p.name));
    const levels = ["advisory", "mandatory", "remediate", "disabled"];
    for (const stack of ["dev", "prod"]) {
      for (const [name, entry] of Object.entries(loadConfig(stack))) {
        expect(names.has(name), `${stack}: ${name}`).to.equal(true);
        const level = typeof entry === "string" ? entry : entry.enforcementLevel;
        expect(levels, `${stack}: ${name}`).to.include(level);
      }
    }
  });

  it('an unknown value a rule must read yields the advisory "can\'t run during preview"', async () => {
    const rs = ingestRecording();
    find(rs, U.ingest).outputs.visibilityTimeoutSeconds = UNKNOWN.unknownNumberValue;
    const violations = await evaluatePolicies(rs, policies);
    expect(violations).to.have.length(1);
    expect(violations[0]).to.include({ policy: "visibility-timeout-covers-consumer", enforcementLevel: "advisory", urn: null });
    expect(violations[0].message).to.match(
      /^can't run policy 'visibility-timeout-covers-consumer' from policy pack 'encache-guardrails@v0\.1\.0' during preview: .*visibilityTimeoutSeconds/,
    );
  });

  it("an unknown input seen by a resource policy is reported against that resource", async () => {
    const rs = ingestRecording();
    find(rs, U.gpu).inputs.associatePublicIpAddress = UNKNOWN.unknownBooleanValue;
    const violations = await evaluatePolicies(rs, policies);
    expect(violations.map((v) => [v.policy, v.enforcementLevel, v.urn])).to.deep.equal([["ec2-instance-hardened", "advisory", U.gpu]]);
  });

  it("a policy that throws yields a mandatory violation naming the policy", async () => {
    const throwing: StackValidationPolicy = {
      name: "explodes",
      description: "throws",
      enforcementLevel: "advisory",
      validateStack: () => {
        throw new Error("boom");
      },
    };
    const violations = await evaluatePolicies(ingestRecording(), [throwing]);
    expect(violations).to.deep.equal([
      { policy: "explodes", enforcementLevel: "mandatory", urn: null, message: "policy 'explodes' failed with an error: boom" },
    ]);
  });

  it("resource policies see inputs, get the resource's URN, and may call notApplicable", async () => {
    const seen: string[] = [];
    const custom: Policies = [
      {
        name: "sees-inputs",
        description: "records what it sees",
        enforcementLevel: "mandatory",
        validateResource: (args, report) => {
          if (!args.isType(fakeQueueClass as never)) args.notApplicable("queues only");
          seen.push(args.urn);
          expect(args.asType(fakeQueueClass as never)).to.not.equal(undefined);
          expect(args.asType(fakeRoleClass as never)).to.equal(undefined);
          expect(args.props).to.not.have.property("arn"); // an output, not an input
          expect(args.stackTags.get("env")).to.equal("dev");
          if (args.name === "ingest") report("flagged", "urn:ignored");
        },
      },
    ];
    const violations = await evaluatePolicies(ingestRecording(), custom, { stackTags: { env: "dev" } });
    expect(seen.sort()).to.deep.equal([U.dlq, U.ingest, U.quarantine].sort());
    expect(violations).to.deep.equal([{ policy: "sees-inputs", enforcementLevel: "mandatory", urn: U.ingest, message: "flagged" }]);
  });

  it("stack policies see outputs with parent, dependencies and propertyDependencies resolved", async () => {
    let mapping: PolicyResource | undefined;
    let config: Record<string, unknown> = {};
    const custom: StackValidationPolicy = {
      name: "sees-graph",
      description: "inspects the graph",
      configSchema: { properties: { a: { type: "number", default: 1 }, b: { type: "string", default: "x" } } },
      validateStack: (args, report) => {
        config = args.getConfig<Record<string, unknown>>();
        mapping = args.resources.find((r) => r.urn === U.dlqMapping);
        report("stack-level");
      },
    };
    const violations = await evaluatePolicies(ingestRecording(), [custom], {
      config: { "sees-graph": { enforcementLevel: "remediate", b: "y" } },
    });
    expect(config).to.deep.equal({ a: 1, b: "y" });
    expect(violations).to.deep.equal([{ policy: "sees-graph", enforcementLevel: "mandatory", urn: null, message: "stack-level" }]);
    if (!mapping) throw new Error("mapping not passed to the stack policy");
    expect(mapping.parent?.urn).to.equal(U.part);
    expect(mapping.propertyDependencies.eventSourceArn.map((r) => r.urn)).to.deep.equal([U.dlq]);
    expect(mapping.propertyDependencies.functionName[0].propertyDependencies.role[0].urn).to.equal(U.dlqRole);
    expect(mapping.dependencies.map((r) => r.urn).sort()).to.deep.equal([U.dlq, U.dlqFn].sort());
    const fn = mapping.propertyDependencies.functionName[0];
    expect(fn.props.arn).to.match(/^arn:aws:lambda:/);
    expect(fn.isType({ __pulumiType: T.fn } as never)).to.equal(true);
  });

  it("a policy without a level falls back to the pack default (advisory, as PolicyPack does)", async () => {
    const custom: StackValidationPolicy = { name: "no-level", description: "d", validateStack: (_a, report) => report("") };
    expect(await evaluatePolicies([], [custom])).to.deep.equal([{ policy: "no-level", enforcementLevel: "advisory", urn: null, message: "d" }]);
    expect((await evaluatePolicies([], [custom], { defaultEnforcementLevel: "mandatory" }))[0].enforcementLevel).to.equal("mandatory");
  });

  it("secrets in the recording are unwrapped by the SDK's deserializer", async () => {
    const rs: RecordedResource[] = ingestRecording();
    const secret = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: 400 };
    find(rs, U.dlq).outputs.visibilityTimeoutSeconds = secret;
    expect(await evaluatePolicies(rs, policies)).to.deep.equal([]);
  });

  it("sorts violations: mandatory first, then policy, URN and message", async () => {
    const rs = ingestRecording();
    remove(rs, U.dlqAlarm);
    setInput(rs, U.ingest, "visibilityTimeoutSeconds", 100);
    setInput(rs, U.gpu, "associatePublicIpAddress", true);
    const violations = await evaluatePolicies(rs, policies);
    expect(violations.map((v) => v.policy)).to.deep.equal(["ec2-instance-hardened", "visibility-timeout-covers-consumer", "dlq-has-depth-alarm"]);
  });

  it("is fast: the whole pack over the fixture in well under 100 ms", async () => {
    const rs = ingestRecording();
    await evaluatePolicies(rs, policies);
    const start = performance.now();
    for (let i = 0; i < 10; i++) await evaluatePolicies(rs, policies);
    expect((performance.now() - start) / 10).to.be.lessThan(100);
  });
});
