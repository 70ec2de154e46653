/**
 * policy/rules/dlq-consumer-can-start-gpu.ts, against the ingest recording (its DLQ consumer and the gpu-ec2 grant: the
 * instance form) and ingest in fleet mode (the consumer raises the GPU group's desired capacity: the fleet form, issue 27).
 */
import type { RecordedResource } from "../../../policy/testing/types";
import { U, ingestRecording } from "../helpers/ingest";
import { F, FLEET_CAPACITY_STATEMENTS, FT, ingestFleetRecording } from "../helpers/ingest-fleet";
import { T, doc, editInput, find, fn, mapping, queue, queueArn, remove, resource, role, setInput, urnOf } from "../helpers/recording";
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
        message:
          /^DLQ consumer 'drain' \(reads jobs-dlq\) cannot start the GPU: role 'drain' passes neither form\. Instance form \(ec2:StartInstances, ec2:DescribeInstances\): not allowed ec2:StartInstances\. Fleet form \(autoscaling:SetDesiredCapacity, autoscaling:DescribeAutoScalingGroups\): not allowed autoscaling:SetDesiredCapacity, autoscaling:DescribeAutoScalingGroups, and the stack declares no aws:autoscaling\/group:Group\.$/,
        also: [["dlq-has-depth-alarm", jobsDlq]],
      });
    });
  });

  describe("fails", () => {
    const cases: { title: string; urn?: string; message?: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "when the DLQ consumer's gpu-ec2 attachment is removed",
        message: /'ingest-dlq-consumer'.* Instance form \([^)]*\): not allowed ec2:StartInstances, ec2:DescribeInstances\. Fleet form/,
        mutate: (rs) => remove(rs, U.gpuAttachment),
      },
      {
        title: "when a Deny on ec2:StartInstances in the inline policy overrides the attached grant",
        message: /Instance form \([^)]*\): not allowed ec2:StartInstances\. Fleet form/,
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Deny", Action: "ec2:StartInstances", Resource: "*" })),
      },
      {
        title: "when a Deny via a wildcard (ec2:Start*) overrides",
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Deny", Action: ["EC2:start*"], Resource: "*" })),
      },
      {
        title: "when only StartInstances is granted: DescribeInstances is named as missing",
        message: /Instance form \([^)]*\): not allowed ec2:DescribeInstances\. Fleet form/,
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
  describe("the fleet form (issue 27): autoscaling:SetDesiredCapacity and autoscaling:DescribeAutoScalingGroups, with a group in the stack", () => {
    const raiseGroup = {
      Effect: "Allow",
      Action: ["autoscaling:SetDesiredCapacity"],
      Resource: "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpu",
    };
    const describeGroups = { Effect: "Allow", Action: "autoscaling:DescribeAutoScalingGroups", Resource: "*" };
    const gpuGroup = resource(FT.group, "gpu", { minSize: 0, maxSize: 1, launchTemplate: { id: "lt-1" } });

    it("passes the good ingest fleet-mode recording (no EC2 grant at all)", async () => {
      // Prepare
      const rs = ingestFleetRecording();
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolations(violations);
    });

    it("built in one line: passes a consumer allowed the fleet form when the stack declares a group", async () => {
      // Prepare
      const rs = [...drainedDlq(raiseGroup, describeGroups), gpuGroup];
      // Act
      const violations = await evaluate(rs);
      // Assess: the group's template is not in the stack, which is gpu-group-template-hardened's concern.
      expectNoViolationOf(violations, POLICY);
    });

    it("built in one line: fails the same consumer when the stack declares no group", async () => {
      // Prepare
      const rs = drainedDlq(raiseGroup, describeGroups);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: drainFn,
        message:
          /Instance form \(ec2:StartInstances, ec2:DescribeInstances\): not allowed ec2:StartInstances, ec2:DescribeInstances\. Fleet form \(autoscaling:SetDesiredCapacity, autoscaling:DescribeAutoScalingGroups\): granted, but the stack declares no aws:autoscaling\/group:Group to raise\.$/,
        also: [["dlq-has-depth-alarm", jobsDlq]],
      });
    });

    const cases: { title: string; message: RegExp; also?: [string, string][]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "fails the fleet form when the stack declares no Auto Scaling group",
        message: /passes neither form\..*Fleet form \([^)]*\): granted, but the stack declares no aws:autoscaling\/group:Group to raise\.$/,
        // The scaler, left without a group to read its instances from, cannot be verified either.
        also: [["gpu-paths-admitted", F.scalerFn]],
        mutate: (rs) => remove(rs, F.group),
      },
      {
        title: "fails a consumer allowed neither form (the capacity grants dropped), naming both",
        message:
          /Instance form \(ec2:StartInstances, ec2:DescribeInstances\): not allowed ec2:StartInstances, ec2:DescribeInstances\. Fleet form \(autoscaling:SetDesiredCapacity, autoscaling:DescribeAutoScalingGroups\): not allowed autoscaling:SetDesiredCapacity, autoscaling:DescribeAutoScalingGroups\.$/,
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => (d.Statement = d.Statement.filter((x) => !FLEET_CAPACITY_STATEMENTS.some((f) => f.Sid === x.Sid)))),
      },
      {
        title: "fails half of the fleet form (no DescribeAutoScalingGroups)",
        message: /Fleet form \([^)]*\): not allowed autoscaling:DescribeAutoScalingGroups\.$/,
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => (d.Statement = d.Statement.filter((x) => x.Sid !== "DescribeGpuGroup"))),
      },
      {
        title: "fails the fleet form overridden by a Deny on autoscaling:SetDesiredCapacity",
        message: /Fleet form \([^)]*\): not allowed autoscaling:SetDesiredCapacity\.$/,
        mutate: (rs) => editDoc(rs, U.dlqPolicy, (d) => d.Statement.push({ Effect: "Deny", Action: "autoscaling:SetDesiredCapacity", Resource: "*" })),
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        // Prepare
        const rs = ingestFleetRecording();
        c.mutate(rs);
        // Act
        const violations = await evaluate(rs);
        // Assess
        expectViolation(violations, { policy: POLICY, level: "mandatory", urn: U.dlqFn, message: c.message, also: c.also });
      });
    }

    it("passes the instance form alone in a stack that also declares a group", async () => {
      // Prepare: ingest in instance mode, plus a group and only half of the fleet form.
      const rs = ingestRecording();
      editDoc(rs, U.dlqPolicy, (d) => d.Statement.push(describeGroups));
      rs.push(gpuGroup);
      // Act
      const violations = await evaluate(rs);
      // Assess
      expectNoViolationOf(violations, POLICY);
    });
  });

  describe("config", () => {
    it("takes the fleet form's actions from fleetRequiredActions", async () => {
      // Prepare
      const rs = ingestFleetRecording();
      const config = {
        [POLICY]: { enforcementLevel: "mandatory" as const, fleetRequiredActions: ["autoscaling:SetDesiredCapacity", "autoscaling:UpdateAutoScalingGroup"] },
      };
      // Act
      const violations = await evaluate(rs, { config });
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: U.dlqFn,
        message: /Fleet form \(autoscaling:SetDesiredCapacity, autoscaling:UpdateAutoScalingGroup\): not allowed autoscaling:UpdateAutoScalingGroup\.$/,
      });
    });

    it("keeps taking the instance form's actions from requiredActions", async () => {
      // Prepare: the instance recording, asked for an action its role lacks.
      const rs = ingestRecording();
      const config = { [POLICY]: { enforcementLevel: "mandatory" as const, requiredActions: ["ec2:StartInstances", "ec2:RebootInstances"] } };
      // Act
      const violations = await evaluate(rs, { config });
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: U.dlqFn,
        message: /Instance form \(ec2:StartInstances, ec2:RebootInstances\): not allowed ec2:RebootInstances\. Fleet form/,
      });
    });
  });
});
