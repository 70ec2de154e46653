/** policy/rules/dlq-consumer-can-start-gpu.ts, against the ingest recording (its DLQ consumer and the gpu-ec2 grant). */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { editInput, find, remove, setInput } from "../helpers/recording";
import { evaluate, expectNoViolationOf, expectNoViolations, expectPolicies, expectViolation } from "../helpers/violations";

const POLICY = "dlq-consumer-can-start-gpu";

type Doc = { Statement: Record<string, unknown>[] };
const editDoc = (rs: RecordedResource[], urn: string, edit: (d: Doc) => void) => editInput<Doc>(rs, urn, "policy", edit);
/** Launch grants stay tag-conditioned so that only the rule under test is exercised. */
const onGpuTag = { StringEquals: { "aws:ResourceTag/Name": "encache-gpu-worker" } };

describe(POLICY, () => {
  it("passes the good ingest recording", async () => {
    // Prepare
    const rs = ingestRecording();
    // Act
    const violations = await evaluate(rs);
    // Assess
    expectNoViolations(violations);
  });

  describe("fails", () => {
    const cases: { title: string; message?: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
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
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: U.dlqFn, message: c.message, also: c.also });
      });
    }
  });

  describe("passes when the grant comes from", () => {
    const grants: { title: string; alsoFires?: string; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "ec2:* in the attached policy (which no-wildcard-iam-actions then rejects on its own)",
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
        expectPolicies(violations, g.alsoFires ? [g.alsoFires] : []);
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
