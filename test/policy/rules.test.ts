import { expect } from "chai";
import { evaluatePolicies, UNKNOWN } from "../../policy/testing/evaluate";
import type { RecordedResource, Violation } from "../../policy/testing/types";
import { policies } from "../../policy/policies";
import { T, U, add, asFirstPreview, find, ingestRecording, remove, setInput } from "./fixtures/ingest";

type Doc = { Statement: Record<string, unknown>[] };

function doc(resources: RecordedResource[], urn: string): Doc {
  return find(resources, urn).inputs.policy as Doc;
}

/** Statements must change in inputs and outputs alike; the fixture shares no objects between them. */
function editDoc(resources: RecordedResource[], urn: string, edit: (d: Doc) => void): void {
  const r = find(resources, urn);
  edit(r.inputs.policy as Doc);
  edit(r.outputs.policy as Doc);
}

async function run(mutate: (rs: RecordedResource[]) => void = () => {}): Promise<Violation[]> {
  const rs = ingestRecording();
  mutate(rs);
  return evaluatePolicies(rs, policies);
}

describe("policy rules against the ingest recording", () => {
  it("the good fixture has no violations at all", async () => {
    expect(await run()).to.deep.equal([]);
  });

  it("the good fixture still passes on a first preview, when ARNs and redrive JSON are unknown", async () => {
    const violations = await run((rs) => asFirstPreview(rs, UNKNOWN.unknownStringValue));
    expect(violations).to.deep.equal([]);
  });

  interface Case {
    title: string;
    rule: string;
    urns: [string];
    level?: "mandatory" | "advisory";
    message?: RegExp;
    /** Other (rule, URN) pairs the mutation legitimately trips as well. */
    also?: [string, string][];
    mutate: (rs: RecordedResource[]) => void;
  }

  const cases: Case[] = [
    {
      title: "DLQ consumer's gpu-ec2 attachment removed",
      rule: "dlq-consumer-can-start-gpu",
      urns: [U.dlqFn],
      message: /ingest-dlq-consumer.*ec2:StartInstances, ec2:DescribeInstances/,
      mutate: (rs) => remove(rs, U.gpuAttachment),
    },
    {
      title: "a Deny on ec2:StartInstances in the inline policy overrides the attached grant",
      rule: "dlq-consumer-can-start-gpu",
      urns: [U.dlqFn],
      message: /not allowed ec2:StartInstances\.$/,
      mutate: (rs) =>
        editDoc(rs, U.dlqPolicy, (d) =>
          d.Statement.push({ Effect: "Deny", Action: "ec2:StartInstances", Resource: "*" }),
        ),
    },
    {
      title: "a Deny via a wildcard (ec2:Start*) also overrides",
      rule: "dlq-consumer-can-start-gpu",
      urns: [U.dlqFn],
      mutate: (rs) =>
        editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Deny", Action: ["EC2:start*"], Resource: "*" })),
    },
    {
      title: "only StartInstances granted: DescribeInstances is named as missing",
      rule: "dlq-consumer-can-start-gpu",
      urns: [U.dlqFn],
      message: /not allowed ec2:DescribeInstances\.$/,
      mutate: (rs) => editDoc(rs, U.gpuPolicy, (d) => d.Statement.splice(1, 1)),
    },
    {
      title: "a NotAction Allow that excludes ec2 does not grant it",
      rule: "dlq-consumer-can-start-gpu",
      urns: [U.dlqFn],
      also: [["no-wildcard-iam-actions", U.dlqPolicy]],
      mutate: (rs) => {
        remove(rs, U.gpuAttachment);
        editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Allow", NotAction: ["ec2:*", "iam:*"], Resource: "*" }));
      },
    },
    {
      title: "a queue without a redrive policy",
      rule: "queue-has-dlq",
      urns: [urnOfExtra()],
      mutate: (rs) => {
        add(rs, { type: T.queue, name: "ingest-extra", inputs: { visibilityTimeoutSeconds: 60 } });
      },
    },
    {
      title: "the quarantine queue loses its tag",
      rule: "queue-has-dlq",
      urns: [U.quarantine],
      mutate: (rs) => setInput(rs, U.quarantine, "tags", { "encache:part": "ingest" }),
    },
    {
      title: "a mapping reads the quarantine queue",
      rule: "queue-has-dlq",
      urns: [U.quarantine],
      message: /terminal sink.*ingest-quarantine-reader/,
      mutate: (rs) => {
        setInput(rs, U.quarantine, "visibilityTimeoutSeconds", 400);
        add(rs, {
          type: T.mapping,
          name: "ingest-quarantine-reader",
          inputs: {
            eventSourceArn: "arn:aws:sqs:eu-west-1:123456789012:ingest-quarantine",
            functionName: "ingest-window",
            functionResponseTypes: ["ReportBatchItemFailures"],
          },
          propertyDependencies: { eventSourceArn: [U.quarantine], functionName: [U.windowFn] },
        });
      },
    },
    {
      title: "DLQ retention equal to the source's",
      rule: "dlq-retention-exceeds-source",
      urns: [U.dlq],
      mutate: (rs) => setInput(rs, U.dlq, "messageRetentionSeconds", 345600),
    },
    {
      title: "DLQ retention unset (AWS default 4 days) equals the source's",
      rule: "dlq-retention-exceeds-source",
      urns: [U.dlq],
      mutate: (rs) => setInput(rs, U.dlq, "messageRetentionSeconds", undefined),
    },
    {
      title: "maxReceiveCount 1",
      rule: "dlq-retention-exceeds-source",
      urns: [U.ingest],
      message: /maxReceiveCount 1/,
      mutate: (rs) =>
        setInput(
          rs,
          U.ingest,
          "redrivePolicy",
          JSON.stringify({ deadLetterTargetArn: "arn:aws:sqs:eu-west-1:123456789012:ingest-dlq", maxReceiveCount: 1 }),
        ),
    },
    {
      title: "visibility 100 with function timeout 30",
      rule: "visibility-timeout-covers-consumer",
      urns: [U.ingest],
      message: /100s is below 180s/,
      mutate: (rs) => setInput(rs, U.ingest, "visibilityTimeoutSeconds", 100),
    },
    {
      title: "the DLQ consumer's batching window pushes past the DLQ's visibility",
      rule: "visibility-timeout-covers-consumer",
      urns: [U.dlq],
      message: /400s is below 425s/,
      mutate: (rs) => setInput(rs, U.dlqFn, "timeout", 70),
    },
    {
      title: "visibility left at the 30 s default",
      rule: "visibility-timeout-covers-consumer",
      urns: [U.ingest],
      mutate: (rs) => setInput(rs, U.ingest, "visibilityTimeoutSeconds", undefined),
    },
    {
      title: "mapping without ReportBatchItemFailures",
      rule: "sqs-mapping-reports-batch-item-failures",
      urns: [U.windowMapping],
      mutate: (rs) => setInput(rs, U.windowMapping, "functionResponseTypes", undefined),
    },
    {
      title: "wildcard sqs:* in a RolePolicy",
      rule: "no-wildcard-iam-actions",
      urns: [U.windowPolicy],
      message: /sqs:\*/,
      mutate: (rs) => editDoc(rs, U.windowPolicy, (d) => (d.Statement[0].Action = ["sqs:*"])),
    },
    {
      title: "`*` in the attached customer-managed Policy",
      rule: "no-wildcard-iam-actions",
      urns: [U.gpuPolicy],
      // `*` also grants RunInstances/StartInstances on every instance, unconditioned.
      also: [["ec2-launch-grants-scoped", U.gpuPolicy]],
      mutate: (rs) => editDoc(rs, U.gpuPolicy, (d) => (d.Statement[1].Action = "*")),
    },
    {
      title: "wildcard in a Role's inline policy given as a JSON string",
      rule: "no-wildcard-iam-actions",
      urns: [U.windowRole],
      mutate: (rs) =>
        setInput(rs, U.windowRole, "inlinePolicies", [
          {
            name: "extra",
            policy: JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "S3:*", Resource: "*" }] }),
          },
        ]),
    },
    {
      title: "IMDSv1 allowed",
      rule: "ec2-instance-hardened",
      urns: [U.gpu],
      message: /httpTokens/,
      mutate: (rs) => setInput(rs, U.gpu, "metadataOptions", { httpTokens: "optional" }),
    },
    {
      title: "associatePublicIpAddress not set explicitly",
      rule: "ec2-instance-hardened",
      urns: [U.gpu],
      mutate: (rs) => setInput(rs, U.gpu, "associatePublicIpAddress", undefined),
    },
    {
      title: "root volume unencrypted",
      rule: "ec2-instance-hardened",
      urns: [U.gpu],
      mutate: (rs) => setInput(rs, U.gpu, "rootBlockDevice", { volumeSize: 200 }),
    },
    {
      title: "an EBS volume unencrypted",
      rule: "ec2-instance-hardened",
      urns: [U.gpu],
      message: /\/dev\/sdg/,
      mutate: (rs) =>
        setInput(rs, U.gpu, "ebsBlockDevices", [
          { deviceName: "/dev/sdf", encrypted: true },
          { deviceName: "/dev/sdg", volumeSize: 100 },
        ]),
    },
    {
      title: "DLQ depth alarm removed",
      rule: "dlq-has-depth-alarm",
      urns: [U.dlq],
      level: "advisory",
      mutate: (rs) => remove(rs, U.dlqAlarm),
    },
    {
      title: "quarantine alarm watches the wrong metric",
      rule: "dlq-has-depth-alarm",
      urns: [U.quarantine],
      level: "advisory",
      mutate: (rs) => setInput(rs, U.quarantineAlarm, "metricName", "NumberOfMessagesSent"),
    },
  ];

  for (const c of cases) {
    it(`${c.rule}: ${c.title}`, async () => {
      const violations = await run(c.mutate);
      const dump = JSON.stringify(violations, null, 2);
      const mine = violations.filter((v) => v.policy === c.rule);
      expect(mine.length, dump).to.be.greaterThan(0);
      for (const v of mine) expect(v.enforcementLevel, dump).to.equal(c.level ?? "mandatory");
      if (c.message) expect(mine.map((v) => v.message).join("\n")).to.match(c.message);
      // Exactly the expected (rule, resource) pairs fire, nothing else.
      const fired = [...new Set(violations.map((v) => `${v.policy} ${v.urn}`))].sort();
      const expected = [`${c.rule} ${c.urns[0]}`, ...(c.also ?? []).map(([p, u]) => `${p} ${u}`)].sort();
      expect(fired, dump).to.deep.equal(expected);
    });
  }

  describe("grants that satisfy dlq-consumer-can-start-gpu", () => {
    // Launch grants stay tag-conditioned here so that only the rule under test is exercised.
    const onGpuTag = { StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker" } };
    const grants: { title: string; alsoFires?: string; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "ec2:* in the attached policy (which the wildcard rule then rejects on its own)",
        alsoFires: "no-wildcard-iam-actions",
        mutate: (rs) => editDoc(rs, U.gpuPolicy, (d) => (d.Statement = [{ Effect: "Allow", Action: "ec2:*", Resource: "*", Condition: onGpuTag }])),
      },
      {
        title: "ec2:Start* and ec2:Describe* (mixed case) in the attached policy",
        mutate: (rs) =>
          editDoc(rs, U.gpuPolicy, (d) => (d.Statement = [{ Effect: "Allow", Action: ["EC2:start*", "ec2:describe*"], Resource: "*", Condition: onGpuTag }])),
      },
      {
        title: "the inline RolePolicy, with the attachment removed",
        mutate: (rs) => {
          remove(rs, U.gpuAttachment);
          editDoc(rs, U.dlqPolicy, (d) =>
            d.Statement.push({ Effect: "Allow", Action: ["ec2:StartInstances", "ec2:DescribeInstances"], Resource: "*", Condition: onGpuTag }),
          );
        },
      },
      {
        title: "the Role's own inlinePolicies as a JSON string",
        mutate: (rs) => {
          remove(rs, U.gpuAttachment);
          const statement = { Effect: "Allow", Action: ["ec2:StartInstances", "ec2:DescribeInstances"], Resource: "*", Condition: onGpuTag };
          setInput(rs, U.dlqRole, "inlinePolicies", [
            { name: "gpu", policy: JSON.stringify({ Version: "2012-10-17", Statement: statement }) },
          ]);
        },
      },
      {
        title: "the attached policy given as a JSON string",
        mutate: (rs) => setInput(rs, U.gpuPolicy, "policy", JSON.stringify(doc(rs, U.gpuPolicy))),
      },
    ];
    for (const g of grants) {
      it(g.title, async () => {
        const violations = await run(g.mutate);
        expect(violations.filter((v) => v.policy === "dlq-consumer-can-start-gpu")).to.deep.equal([]);
        expect([...new Set(violations.map((v) => v.policy))]).to.deep.equal(g.alsoFires ? [g.alsoFires] : []);
      });
    }
  });

  it("a consumer of a non-DLQ queue needs no EC2 grant", async () => {
    const violations = await run((rs) => {
      remove(rs, U.gpuAttachment);
      // Point the DLQ consumer's mapping at the main queue instead: it is no longer a DLQ consumer.
      find(rs, U.dlqMapping).propertyDependencies.eventSourceArn = [U.ingest];
    });
    expect(violations.filter((v) => v.policy === "dlq-consumer-can-start-gpu")).to.deep.equal([]);
  });
});

function urnOfExtra(): string {
  return "urn:pulumi:dev::encache::encache:parts:Ingest$aws:sqs/queue:Queue::ingest-extra";
}
