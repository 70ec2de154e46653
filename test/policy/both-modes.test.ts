/**
 * Every rule that a stack's pack config makes mandatory catches its mutation on a preview of an
 * existing stack AND on a first preview, under that stack's config, with the inputs in the shape
 * the engine hands the pack (policy/testing/engine.ts): after the provider's Check, and on a first
 * preview every IAM document and container definition built from an output one unknown string.
 * The rules then decide from the DeclaredDocuments the program puts beside those resources.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { DECLARED_DOCUMENT_TYPE } from "../../policy/contract";
import { REPO_ROOT } from "../../infra/bundle";
import type { PolicyPackConfig, RecordedResource, Violation } from "../../policy/testing/types";
import { FU, editStatement, fleetRecording } from "./helpers/fleet";
import { U, ingestRecording } from "./helpers/ingest";
import { F, ingestFleetRecording } from "./helpers/ingest-fleet";
import { X, platformRecording, setTarget } from "./helpers/platform";
import { P, poolRecording } from "./helpers/pool";
import { T, add, attachment, doc, editInput, find, mapping, queue, remove, role, rolePolicy, setInput, urnOf } from "./helpers/recording";
import { R, retrainingRecording } from "./helpers/retraining";
import { W, setContainer, workerRecording } from "./helpers/worker";
import { evaluate, type Mode } from "./helpers/violations";

type Doc = { Statement: Array<Record<string, unknown>> };
const statementWith = (d: Doc, action: string) => {
  const s = d.Statement.find((x) => [x.Action].flat().includes(action));
  if (!s) throw new Error(`no statement grants ${action}`);
  return s;
};

interface Case {
  rule: string;
  recording: () => RecordedResource[];
  mutate: (rs: RecordedResource[]) => void;
}

/** One mutation per rule: the good recording, then the edit that breaks exactly that rule. */
const CASES: Case[] = [
  {
    rule: "ecs-task-protection-granted",
    recording: workerRecording,
    mutate: (rs) =>
      editInput<Doc>(rs, W.taskPolicy, "policy", (d) => d.Statement.push({ Effect: "Deny", Action: ["ecs:UpdateTaskProtection"], Resource: "*" })),
  },
  { rule: "ecs-task-definition-hardened", recording: workerRecording, mutate: (rs) => setContainer(rs, (c) => (c.privileged = true)) },
  { rule: "dlq-consumer-can-start-gpu", recording: ingestRecording, mutate: (rs) => remove(rs, U.gpuAttachment) },
  { rule: "queue-has-dlq", recording: ingestRecording, mutate: (rs) => add(rs, queue("ingest-extra", { visibilityTimeoutSeconds: 60 }, { state: {} })) },
  { rule: "dlq-retention-exceeds-source", recording: ingestRecording, mutate: (rs) => setInput(rs, U.dlq, "messageRetentionSeconds", 345600) },
  { rule: "visibility-timeout-covers-consumer", recording: ingestRecording, mutate: (rs) => setInput(rs, U.ingest, "visibilityTimeoutSeconds", 100) },
  {
    rule: "sqs-mapping-reports-batch-item-failures",
    recording: ingestRecording,
    mutate: (rs) => setInput(rs, U.windowMapping, "functionResponseTypes", undefined),
  },
  {
    rule: "no-wildcard-iam-actions",
    recording: ingestRecording,
    mutate: (rs) => editInput<Doc>(rs, U.windowPolicy, "policy", (d) => (d.Statement[0]!.Action = ["sqs:*"])),
  },
  { rule: "ec2-instance-hardened", recording: ingestRecording, mutate: (rs) => setInput(rs, U.gpu, "metadataOptions", { httpTokens: "optional" }) },
  { rule: "dlq-has-depth-alarm", recording: ingestRecording, mutate: (rs) => remove(rs, U.dlqAlarm) },
  { rule: "dynamodb-table-pitr", recording: platformRecording, mutate: (rs) => setInput(rs, X.table, "pointInTimeRecovery", { enabled: false }) },
  { rule: "dynamodb-table-encryption-enabled", recording: platformRecording, mutate: (rs) => setInput(rs, X.table, "serverSideEncryption", undefined) },
  { rule: "ec2-instance-detailed-monitoring-enabled", recording: ingestRecording, mutate: (rs) => setInput(rs, U.gpu, "monitoring", false) },
  { rule: "scheduled-target-retry-and-dlq", recording: platformRecording, mutate: (rs) => setTarget(rs, (t) => delete t.retryPolicy) },
  {
    rule: "ecs-no-public-ip",
    recording: retrainingRecording,
    mutate: (rs) => editInput(rs, R.service, "networkConfiguration", (n) => (n.assignPublicIp = true)),
  },
  { rule: "ecs-capacity-provider-no-launch-type", recording: retrainingRecording, mutate: (rs) => setInput(rs, R.service, "launchType", "FARGATE") },
  {
    rule: "iam-passrole-scoped",
    recording: retrainingRecording,
    mutate: (rs) => editInput<Doc>(rs, R.launcherPolicy, "policy", (d) => (statementWith(d, "iam:PassRole").Resource = "*")),
  },
  {
    rule: "ec2-terminate-tag-condition",
    recording: fleetRecording,
    mutate: (rs) => editStatement(rs, FU.housekeepingPolicy, "TerminateManagedInstances", (s) => delete s.Condition),
  },
  { rule: "job-table-ttl", recording: fleetRecording, mutate: (rs) => setInput(rs, FU.jobs, "ttl", undefined) },
  { rule: "job-table-tagged", recording: fleetRecording, mutate: (rs) => setInput(rs, FU.jobs, "tags", { "encache:part": "fleet" }) },
  {
    rule: "terminal-queue-unconsumed",
    recording: ingestRecording,
    mutate: (rs) =>
      add(
        rs,
        mapping(
          "ingest-quarantine-reader",
          { batchSize: 1, functionResponseTypes: ["ReportBatchItemFailures"] },
          { deps: { eventSourceArn: [U.quarantine], functionName: [U.windowFn] }, state: {} },
        ),
      ),
  },
  {
    rule: "declared-documents-have-inputs",
    recording: ingestRecording,
    // What PULUMI_NODEJS_SKIP_COMPONENT_INPUTS does to a local component: `{}` as its inputs.
    mutate: (rs) =>
      add(rs, {
        urn: urnOf(DECLARED_DOCUMENT_TYPE, "probe-declared"),
        type: DECLARED_DOCUMENT_TYPE,
        name: "probe-declared",
        parent: U.part,
        custom: false,
        inputs: {},
        outputs: {},
        dependencies: [],
        propertyDependencies: {},
      }),
  },
  {
    rule: "launch-template-hardened",
    recording: poolRecording,
    mutate: (rs) => editInput(rs, P.launchTemplate, "metadataOptions", (m) => (m.httpTokens = "optional")),
  },
  {
    rule: "ec2-launch-grants-scoped",
    recording: poolRecording,
    mutate: (rs) =>
      editInput<Doc>(rs, P.claimPolicy, "policy", (d) => {
        const start = statementWith(d, "ec2:StartInstances");
        delete start.Condition;
        start.Resource = "*";
      }),
  },
  {
    rule: "trust-policy-confused-deputy",
    recording: workerRecording,
    mutate: (rs) => editInput<Doc>(rs, W.taskRole, "assumeRolePolicy", (d) => delete d.Statement[0]!.Condition),
  },
  {
    rule: "ec2-run-instances-via-launch-template",
    recording: poolRecording,
    mutate: (rs) =>
      editInput<Doc>(rs, P.refillPolicy, "policy", (d) => delete (statementWith(d, "ec2:RunInstances").Condition as Record<string, unknown>).ArnLike),
  },
  {
    rule: "iam-arns-name-account",
    recording: poolRecording,
    mutate: (rs) =>
      editInput<Doc>(rs, P.claimPolicy, "policy", (d) => (statementWith(d, "ec2:StartInstances").Resource = "arn:aws:ec2:eu-west-1:*:instance/*")),
  },
  {
    rule: "iam-star-resource-unscopable-only",
    recording: ingestRecording,
    mutate: (rs) =>
      editInput<Doc>(rs, U.gpuPolicy, "policy", (d) => (statementWith(d, "ec2:DescribeInstances").Action = ["ec2:DescribeInstances", "ec2:StopInstances"])),
  },
  {
    rule: "ec2-stop-scoped-to-stack",
    recording: ingestRecording,
    mutate: (rs) =>
      editInput<Doc>(rs, U.gpuPolicy, "policy", (d) =>
        d.Statement.push({
          Sid: "StopAnyGpu",
          Effect: "Allow",
          Action: ["ec2:StopInstances"],
          Resource: "arn:aws:ec2:eu-west-1:123456789012:instance/*",
          Condition: { StringEquals: { "aws:ResourceTag/Name": "gpu" } },
        }),
      ),
  },
  {
    rule: "instance-role-no-managed-policies",
    recording: ingestRecording,
    mutate: (rs) => {
      add(rs, role("gpu-role", { assumeRolePolicy: doc({ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }) }));
      add(
        rs,
        attachment(
          "gpu-ssm-core",
          { role: "gpu-role", policyArn: "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore" },
          { deps: { role: [urnOf(T.role, "gpu-role")] } },
        ),
      );
    },
  },
  { rule: "ecs-container-least-privilege", recording: workerRecording, mutate: (rs) => setContainer(rs, (c) => delete c.readonlyRootFilesystem) },
  {
    rule: "sg-egress-restricted",
    recording: platformRecording,
    mutate: (rs) =>
      editInput<Array<Record<string, unknown>>>(rs, X.consumersSg, "egress", (e) =>
        e.push({ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] }),
      ),
  },
  { rule: "vpc-flow-logs", recording: platformRecording, mutate: (rs) => remove(rs, X.flowLog) },
  {
    rule: "vpc-default-sg-closed",
    recording: platformRecording,
    mutate: (rs) => setInput(rs, X.defaultSg, "egress", [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] }]),
  },
  { rule: "alarms-have-actions", recording: ingestRecording, mutate: (rs) => setInput(rs, U.dlqAlarm, "alarmActions", []) },
  {
    rule: "declared-documents-match",
    recording: ingestRecording,
    // A declaration that says less than the policy grants: the rules would judge the wrong grants.
    mutate: (rs) => {
      const granted = doc({ Effect: "Allow", Action: ["ec2:DescribeInstances"], Resource: "*" });
      add(rs, rolePolicy("probe-policy", { policy: granted }));
      const declared = {
        resource: "probe-policy",
        resourceType: T.rolePolicy,
        property: "policy",
        document: doc({ Effect: "Allow", Action: ["ec2:DescribeImages"], Resource: "*" }),
      };
      add(rs, {
        urn: urnOf(DECLARED_DOCUMENT_TYPE, "probe-policy-declared"),
        type: DECLARED_DOCUMENT_TYPE,
        name: "probe-policy-declared",
        parent: U.part,
        custom: false,
        inputs: declared,
        outputs: structuredClone(declared),
        dependencies: [],
        propertyDependencies: {},
      });
    },
  },
  { rule: "lb-internal", recording: ingestFleetRecording, mutate: (rs) => setInput(rs, F.loadBalancer, "internal", false) },
  {
    rule: "lb-sg-admits-consumers-only",
    recording: ingestFleetRecording,
    mutate: (rs) =>
      editInput<Array<Record<string, unknown>>>(rs, F.lbSg, "ingress", (i) => i.push({ protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] })),
  },
  { rule: "spot-group-capacity-rebalance", recording: ingestFleetRecording, mutate: (rs) => setInput(rs, F.group, "capacityRebalance", undefined) },
  {
    rule: "warm-pool-on-demand-only",
    recording: ingestFleetRecording,
    mutate: (rs) => setInput(rs, F.group, "warmPool", { poolState: "Stopped", minSize: 0 }),
  },
  {
    rule: "gpu-group-template-hardened",
    recording: ingestFleetRecording,
    // The template id becomes a literal: a template outside the stack, which launch-template-hardened never sees.
    mutate: (rs) => {
      find(rs, F.group).propertyDependencies.mixedInstancesPolicy = [];
    },
  },
  // The GPUs admit the service port from the load balancer's group only: the scaler's GETs time out (issue 35).
  { rule: "gpu-paths-admitted", recording: ingestFleetRecording, mutate: (rs) => remove(rs, F.gpuFromConsumers) },
];

function packConfig(stack: string): PolicyPackConfig {
  return JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "policy", `config.${stack}.json`), "utf8")) as PolicyPackConfig;
}

function levelIn(config: PolicyPackConfig, rule: string): string | undefined {
  const entry = config[rule];
  return typeof entry === "string" ? entry : entry?.enforcementLevel;
}

const MODES: Mode[] = ["update", "first-preview"];
const fired = (violations: Violation[], rule: string) => violations.filter((v) => v.policy === rule && v.enforcementLevel === "mandatory");

describe("each mandatory rule catches its mutation in both modes, under each stack's pack config", () => {
  for (const stack of ["dev", "prod"]) {
    const config = packConfig(stack);
    // The two fail-closed rules fire only on a first preview, by design; they have tests of their own below.
    const FIRST_PREVIEW_ONLY = ["documents-visible-on-preview", "role-inline-policies-known"];
    const mandatory = Object.keys(config).filter((rule) => levelIn(config, rule) === "mandatory" && !FIRST_PREVIEW_ONLY.includes(rule));

    it(`${stack}: every mandatory rule has a case here`, () => {
      expect(mandatory.filter((rule) => !CASES.some((c) => c.rule === rule))).to.deep.equal([]);
    });

    for (const c of CASES.filter((x) => mandatory.includes(x.rule))) {
      for (const mode of MODES) {
        it(`${stack}, ${mode}: ${c.rule}`, async () => {
          // Prepare
          const good = c.recording();
          const bad = c.recording();
          c.mutate(bad);
          // Act
          const [before, after] = await Promise.all([evaluate(good, { mode, config }), evaluate(bad, { mode, config })]);
          // Assess: the good recording passes, and the mutation is a mandatory violation of this rule.
          expect(
            before.filter((v) => v.enforcementLevel === "mandatory"),
            JSON.stringify(before, null, 2),
          ).to.deep.equal([]);
          expect(fired(after, c.rule).length, JSON.stringify(after, null, 2)).to.be.greaterThan(0);
        });
      }
    }
  }

  describe("documents-visible-on-preview: failing closed where a stack says so", () => {
    // The mutation: the program stops declaring its documents (as a program without DeclaredDocuments would).
    for (const stack of ["dev", "prod"]) {
      it(`${stack}, first preview: an undeclared document is ${stack === "prod" ? "a mandatory" : "an advisory"} violation, and the rules it hides are advisory`, async () => {
        // Prepare
        const rs = ingestRecording();
        // Act
        const violations = await evaluate(rs, { mode: "first-preview", config: packConfig(stack), declare: false });
        // Assess
        const closed = violations.filter((v) => v.policy === "documents-visible-on-preview");
        expect(closed.length).to.be.greaterThan(0);
        expect(new Set(closed.map((v) => v.enforcementLevel))).to.deep.equal(new Set([stack === "prod" ? "mandatory" : "advisory"]));
        const hidden = violations.find((v) => v.policy === "dlq-consumer-can-start-gpu");
        expect(hidden?.enforcementLevel).to.equal("advisory");
        expect(hidden?.message).to.match(/can't run policy 'dlq-consumer-can-start-gpu' from policy pack 'encache-guardrails@v[0-9.]+' during preview/);
      });
    }

    it("on a preview of an existing stack every document is known, so nothing is hidden and nothing fires", async () => {
      const violations = await evaluate(ingestRecording(), { mode: "update", config: packConfig("prod"), declare: false });
      expect(violations).to.deep.equal([]);
    });
  });
});
