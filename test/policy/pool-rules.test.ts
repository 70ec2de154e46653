import { expect } from "chai";
import { evaluatePolicies, UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { find, setInput, U } from "./fixtures/ingest";
import { P, poolRecording, refillStatements } from "./fixtures/pool";

async function run(mutate: (rs: RecordedResource[]) => void = () => {}): Promise<Violation[]> {
  const rs = poolRecording();
  mutate(rs);
  return evaluatePolicies(rs, policies);
}

function editInput(rs: RecordedResource[], urn: string, key: string, edit: (v: Record<string, unknown>) => void): void {
  const copy = structuredClone(find(rs, urn).inputs[key]) as Record<string, unknown>;
  edit(copy);
  setInput(rs, urn, key, copy);
}

function setStatements(rs: RecordedResource[], urn: string, statements: unknown[]): void {
  setInput(rs, urn, "policy", { Version: "2012-10-17", Statement: statements });
}

const POOL_RULES = ["launch-template-hardened", "ec2-launch-grants-scoped"];

describe("pool rules: launch-template-hardened, ec2-launch-grants-scoped", () => {
  it("the good pool fixture (with ingest's tag-conditioned StartInstances) has no violations", async () => {
    expect(await run()).to.deep.equal([]);
  });

  it("a first preview, with launch-template and subnet ARNs unknown, still passes", async () => {
    const violations = await run((rs) => {
      const statements = refillStatements();
      (statements[3] as { Resource: unknown[] }).Resource = [UNKNOWN.unknownStringValue, UNKNOWN.unknownStringValue, `arn:aws:ec2:eu-west-1::image/*`];
      setStatements(rs, P.refillPolicy, statements);
    });
    expect(violations).to.deep.equal([]);
  });

  it("a StartInstances grant on one named instance, without a condition, passes (scoped resource)", async () => {
    const violations = await run((rs) =>
      setStatements(rs, P.claimPolicy, [{ Effect: "Allow", Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/i-0123456789abcdef0" }]),
    );
    expect(violations).to.deep.equal([]);
  });

  const cases: Array<{ title: string; rule: string; urn: string; message: RegExp; mutate: (rs: RecordedResource[]) => void }> = [
    {
      title: "a launch template without IMDSv2",
      rule: "launch-template-hardened",
      urn: P.launchTemplate,
      message: /must require IMDSv2/,
      mutate: (rs) => editInput(rs, P.launchTemplate, "metadataOptions", (m) => (m.httpTokens = "optional")),
    },
    {
      title: "a launch template that asks for a public IP",
      rule: "launch-template-hardened",
      urn: P.launchTemplate,
      message: /network interface #0 must set associatePublicIpAddress/,
      mutate: (rs) => setInput(rs, P.launchTemplate, "networkInterfaces", [{ deviceIndex: 0, associatePublicIpAddress: "true" }]),
    },
    {
      title: "a launch template with no network interface (the subnet decides)",
      rule: "launch-template-hardened",
      urn: P.launchTemplate,
      message: /must declare a network interface/,
      mutate: (rs) => setInput(rs, P.launchTemplate, "networkInterfaces", undefined),
    },
    {
      title: "a launch template with an unencrypted volume",
      rule: "launch-template-hardened",
      urn: P.launchTemplate,
      message: /volume \/dev\/sdf must set ebs.encrypted/,
      mutate: (rs) =>
        setInput(rs, P.launchTemplate, "blockDeviceMappings", [
          { deviceName: "/dev/sda1", ebs: { encrypted: true } },
          { deviceName: "/dev/sdf", ebs: { encrypted: "false" } },
        ]),
    },
    {
      title: "a launch template that leaves the root volume to the AMI",
      rule: "launch-template-hardened",
      urn: P.launchTemplate,
      message: /must declare its root volume/,
      mutate: (rs) => setInput(rs, P.launchTemplate, "blockDeviceMappings", []),
    },
    {
      title: "RunInstances on every instance without a tag condition (RolePolicy)",
      rule: "ec2-launch-grants-scoped",
      urn: P.refillPolicy,
      message: /statement RunTaggedPoolInstances grants ec2:RunInstances on arn:aws:ec2:eu-west-1:\*:instance\/\* without a tag condition/,
      mutate: (rs) => {
        const statements = refillStatements();
        delete (statements[2] as { Condition?: unknown }).Condition;
        setStatements(rs, P.refillPolicy, statements);
      },
    },
    {
      title: "StartInstances on `*` (managed Policy)",
      rule: "ec2-launch-grants-scoped",
      urn: P.claimPolicy,
      message: /grants ec2:StartInstances on \*/,
      mutate: (rs) => setStatements(rs, P.claimPolicy, [{ Effect: "Allow", Action: "ec2:StartInstances", Resource: "*" }]),
    },
    {
      title: "a non-tag condition does not count (ec2:Region)",
      rule: "ec2-launch-grants-scoped",
      urn: P.claimPolicy,
      message: /ec2:StartInstances/,
      mutate: (rs) =>
        setStatements(rs, P.claimPolicy, [{ Effect: "Allow", Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:*:*:instance/*", Condition: { StringEquals: { "ec2:Region": "eu-west-1" } } }]),
    },
    {
      title: "a wildcard action that covers both (ec2:*Instances) on an instance wildcard",
      rule: "ec2-launch-grants-scoped",
      urn: P.claimPolicy,
      message: /ec2:RunInstances, ec2:StartInstances/,
      mutate: (rs) => setStatements(rs, P.claimPolicy, [{ Effect: "Allow", Action: ["ec2:*Instances"], Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/*" }]),
    },
    {
      title: "an unconditioned grant in a Role's inlinePolicies given as a JSON string",
      rule: "ec2-launch-grants-scoped",
      urn: P.refillRole,
      message: /'pool-refill-role' grants ec2:RunInstances on \*/,
      mutate: (rs) =>
        setInput(rs, P.refillRole, "inlinePolicies", [
          { name: "run", policy: JSON.stringify({ Version: "2012-10-17", Statement: { Effect: "Allow", Action: "ec2:RunInstances", Resource: "*" } }) },
        ]),
    },
    {
      title: "ingest's GPU StartInstances grant losing its Name-tag condition",
      rule: "ec2-launch-grants-scoped",
      urn: U.gpuPolicy,
      message: /statement StartGpu grants ec2:StartInstances/,
      mutate: (rs) =>
        setStatements(rs, U.gpuPolicy, [
          { Sid: "StartGpu", Effect: "Allow", Action: ["ec2:StartInstances"], Resource: "arn:aws:ec2:eu-west-1:*:instance/*" },
          { Sid: "DescribeInstances", Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" },
        ]),
    },
  ];

  for (const c of cases) {
    it(`catches ${c.title}`, async () => {
      const violations = await run(c.mutate);
      const fired = violations.filter((v) => POOL_RULES.includes(v.policy));
      expect(fired.map((v) => [v.policy, v.urn]), JSON.stringify(violations)).to.deep.equal(fired.map(() => [c.rule, c.urn]));
      expect(fired.length).to.be.greaterThan(0);
      expect(fired.some((v) => c.message.test(v.message)), fired.map((v) => v.message).join("\n")).to.equal(true);
      expect(fired.every((v) => v.enforcementLevel === "mandatory")).to.equal(true);
    });
  }

  it("a Deny statement is never a grant", async () => {
    const violations = await run((rs) =>
      setStatements(rs, P.claimPolicy, [refillStatements()[1], { Effect: "Deny", Action: ["ec2:RunInstances"], Resource: "*" }]),
    );
    expect(violations).to.deep.equal([]);
  });
});
