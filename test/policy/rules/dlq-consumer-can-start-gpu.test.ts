/** policy/rules/dlq-consumer-can-start-gpu.ts, against the ingest recording (its DLQ consumer and the gpu-ec2 grant). */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { T, doc, editInput, find, fn, mapping, queue, queueArn, remove, role, setInput, urnOf } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectPolicies, expectViolation } from "../helpers/violations";

const POLICY = "dlq-consumer-can-start-gpu";

type Doc = { Statement: Record<string, unknown>[] };
const editDoc = (rs: RecordedResource[], urn: string, edit: (d: Doc) => void) => editInput<Doc>(rs, urn, "policy", edit);
/** Launch grants stay tag-conditioned so that only the rule under test is exercised. */
const onGpuTag = { StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker" } };

const jobsDlq = urnOf(T.queue, "jobs-dlq");
const drainFn = urnOf(T.fn, "drain");
/** A source queue redriving to jobs-dlq, drained by a function whose role has these inline statements. */
const drainedDlq = (...statements: Record<string, unknown>[]) => [
  queue("jobs-dlq", { messageRetentionSeconds: 1_209_600, visibilityTimeoutSeconds: 400, tags: { "encache:queue-role": "dlq" } }),
  queue("jobs", { redrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn("jobs-dlq"), maxReceiveCount: 3 }) }, { deps: { redrivePolicy: [jobsDlq] } }),
  role("drain", { inlinePolicies: [{ name: "own", policy: JSON.stringify(doc(...statements)) }] }),
  fn("drain", { timeout: 60 }, { deps: { role: [urnOf(T.role, "drain")] } }),
  mapping("drain", { functionResponseTypes: ["ReportBatchItemFailures"] }, { deps: { eventSourceArn: [jobsDlq], functionName: [drainFn] } }),
];

describe(POLICY, () => {
  it("passes the good ingest recording", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("built in one line", () => {
    it("passes a DLQ consumer whose role may start and describe instances", async () => {
      // Prepare
      const rs = drainedDlq({ Effect: "Allow", Action: ["ec2:StartInstances", "ec2:DescribeInstances"], Resource: "*", Condition: onGpuTag });
      // Act
      const violations = await evaluate(rs);
      // Assess: the built DLQ has no depth alarm, which is another rule's concern.
      expectNoViolationOf(violations, POLICY);
    });

    it("fails a DLQ consumer whose role may only describe them", async () => {
      // Prepare
      const rs = drainedDlq({ Effect: "Allow", Action: "ec2:DescribeInstances", Resource: "*" });
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: drainFn,
        message: /DLQ consumer 'drain' \(reads jobs-dlq\) cannot start the GPU instance: role 'drain' is not allowed ec2:StartInstances\.$/,
        also: [["dlq-has-depth-alarm", jobsDlq]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn?: string; message?: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "when the DLQ consumer's gpu-ec2 attachment is removed",
        message: /ingest-dlq-consumer.*ec2:StartInstances, ec2:DescribeInstances/,
        mutate: (rs) => remove(rs, U.gpuAttachment),
      },
      {
        title: "when a Deny on ec2:StartInstances in the inline policy overrides the attached grant",
        message: /not allowed ec2:StartInstances\.$/,
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Deny", Action: "ec2:StartInstances", Resource: "*" })),
      },
      {
        title: "when a Deny via a wildcard (ec2:Start*) overrides",
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Deny", Action: ["EC2:start*"], Resource: "*" })),
      },
      {
        title: "when only StartInstances is granted: DescribeInstances is named as missing",
        message: /not allowed ec2:DescribeInstances\.$/,
        mutate: (rs) => editDoc(rs, U.gpuPolicy, (d) => d.Statement.splice(1, 1)),
      },
      {
        title: "when the only grant is a NotAction Allow that excludes ec2",
        also: [["no-wildcard-iam-actions", U.dlqPolicy]],
        mutate: (rs) => {
          remove(rs, U.gpuAttachment);
          editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Allow", NotAction: ["ec2:*", "iam:*"], Resource: "*" }));
        },
      },
      {
        title: "when the consumer's role is not a Role in the stack (nothing to verify)",
        message: /DLQ consumer 'ingest-dlq-consumer' \(reads ingest-dlq\) has a role that is not a Role in this stack/,
        mutate: (rs) => {
          find(rs, U.dlqFn).propertyDependencies.role = [];
        },
      },
      {
        title: "when the DLQ's mapping names no Function in the stack",
        urn: U.dlqMapping,
        message: /Event source mapping 'ingest-dlq-consumer' reads DLQ 'ingest-dlq' but its functionName is not/,
        mutate: (rs) => {
          find(rs, U.dlqMapping).propertyDependencies.functionName = [];
        },
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: c.urn ?? U.dlqFn, message: c.message, also: c.also });
      });
    }
  });

  describe("passes when the grant comes from", () => {
    const grants: { title: string; alsoFires?: string[]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "ec2:* in the attached policy (which no-wildcard-iam-actions, and the launch-template rule, then reject on their own)",
        alsoFires: ["no-wildcard-iam-actions", "ec2-run-instances-via-launch-template"],
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
          setInput(rs, U.dlqRole, "inlinePolicies", [{ name: "gpu", policy: JSON.stringify({ Version: "2012-10-17", Statement: statement }) }]);
        },
      },
      {
        title: "the attached policy given as a JSON string",
        mutate: (rs) => setInput(rs, U.gpuPolicy, "policy", JSON.stringify(find(rs, U.gpuPolicy).inputs.policy)),
      },
    ];
    for (const g of grants) {
      it(g.title, async () => {
        // Prepare
        const rs = ingestRecording();
        g.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectNoViolationOf(violations, POLICY);
        expectPolicies(violations, g.alsoFires ?? []);
      });
    }
  });

  it("passes a consumer of a non-DLQ queue, which needs no EC2 grant", async () => {
    // Prepare: point the DLQ consumer's mapping at the main queue; it is no longer a DLQ consumer.
    const rs = ingestRecording();
    remove(rs, U.gpuAttachment);
    find(rs, U.dlqMapping).propertyDependencies.eventSourceArn = [U.ingest];
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolationOf(violations, POLICY);
  });
});
