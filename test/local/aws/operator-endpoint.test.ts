/**
 * The local operator endpoint judges each call's resource as IAM does, so a grant that AWS would
 * deny is denied here too. ListTasks: its one resource type is the container instance; a call that
 * names none (`ops status` lists by service) is authorised on `*`, which a grant on
 * `container-instance/<cluster>/*` never matches. Every call here is answered by the endpoint itself
 * (a denial, or the worker's local tasks), so nothing reaches its target.
 */
import { AutoScalingClient } from "@aws-sdk/client-auto-scaling";
import { EC2Client } from "@aws-sdk/client-ec2";
import { ECSClient, ListTasksCommand } from "@aws-sdk/client-ecs";
import { SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { operatorStatements } from "../../../infra/parts/operator";
import { OperatorEndpoint } from "../../../local/aws/operator-endpoint";
import type { PolicyStatement } from "../../../local/aws/operator-iam";
import { DirectSends, MessageMoveTasks } from "../../../local/aws/sqs-move-tasks";

const ACCOUNT = "123456789012";
const CLUSTER = "platform-cluster";
const CLUSTER_ARN = `arn:aws:ecs:us-east-1:${ACCOUNT}:cluster/${CLUSTER}`;
const TASK = `arn:aws:ecs:us-east-1:${ACCOUNT}:task/${CLUSTER}/t1`;
/** Nothing listens here: a call the endpoint passed on would fail, not pass. */
const NOWHERE = "http://127.0.0.1:9";

/** The operator policy as the program binds it (instance mode, every input a plain string). */
const programPolicy = (): PolicyStatement[] =>
  operatorStatements({
    region: "us-east-1",
    accountId: ACCOUNT,
    environment: "dev",
    sourceQueueArns: [],
    dlqArns: [],
    terminalQueueArns: [],
    quarantineQueueArns: [],
    quarantineSourceArns: [],
    worker: { clusterName: CLUSTER, clusterArn: CLUSTER_ARN, serviceName: "worker" },
    gpu: { mode: "instance", nameTag: "gpu-dev", holdTag: "encache:gpu-hold" },
  }) as PolicyStatement[];

/** The grant as it stood before issue 36: on the cluster's container instances. */
const onContainerInstances: PolicyStatement[] = [
  {
    Sid: "ListWorkerTasks",
    Effect: "Allow",
    Action: ["ecs:ListTasks"],
    Resource: `arn:aws:ecs:us-east-1:${ACCOUNT}:container-instance/${CLUSTER}/*`,
    Condition: { ArnEquals: { "ecs:cluster": CLUSTER_ARN } },
  },
];

describe("the local operator endpoint: ListTasks judged on the resource IAM authorises it on", function () {
  this.timeout(20_000);
  let statements: PolicyStatement[] = [];
  let endpoint: OperatorEndpoint;
  let ecs: ECSClient;

  before(async () => {
    const sqs = new SQSClient({ region: "us-east-1", endpoint: NOWHERE });
    endpoint = new OperatorEndpoint({
      target: NOWHERE,
      region: "us-east-1",
      account: ACCOUNT,
      statements: () => statements,
      moveTasks: new MessageMoveTasks({ sqs, queues: [], direct: new DirectSends() }),
      direct: new DirectSends(),
      queues: [],
      worker: { clusterName: CLUSTER, serviceName: "worker", tasks: () => [{ taskArn: TASK, protectionEnabled: false, expiresAtMs: null }] },
      oldestAgeSeconds: () => null,
      ec2: new EC2Client({ region: "us-east-1", endpoint: NOWHERE }),
      autoscaling: new AutoScalingClient({ region: "us-east-1", endpoint: NOWHERE }),
    });
    const url = await endpoint.start();
    ecs = new ECSClient({ region: "us-east-1", endpoint: url, credentials: { accessKeyId: "ops-local", secretAccessKey: "ops-local" }, maxAttempts: 1 });
  });

  after(async () => {
    ecs?.destroy();
    await endpoint?.stop();
  });

  const cases: Array<{ case: string; policy: () => PolicyStatement[]; cluster: string; answer: RegExp | "listed" }> = [
    { case: "the program's grant (`*` with ecs:cluster), by service on the platform cluster", policy: programPolicy, cluster: CLUSTER, answer: "listed" },
    {
      case: "the program's grant, on another cluster",
      policy: programPolicy,
      cluster: "other-cluster",
      answer: /not authorized to perform: ecs:ListTasks on resource: \*/,
    },
    {
      case: "a grant on container-instance/<cluster>/* (AWS denies it: the call names no container instance)",
      policy: () => onContainerInstances,
      cluster: CLUSTER,
      answer: /not authorized to perform: ecs:ListTasks on resource: \* because/,
    },
  ];
  for (const c of cases) {
    it(c.case, async () => {
      // Prepare
      statements = c.policy();
      // Act
      const answer = await ecs.send(new ListTasksCommand({ cluster: c.cluster, serviceName: "worker" })).then(
        (out) => ({ listed: out.taskArns ?? [] }),
        (err: Error) => ({ error: err.message }),
      );
      // Assess
      if (c.answer === "listed") expect(answer).to.deep.equal({ listed: [TASK] });
      else expect(answer).to.have.property("error").that.matches(c.answer);
    });
  }
});
