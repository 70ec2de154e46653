import { RunInstancesCommand } from "@aws-sdk/client-ec2";
import { expect } from "chai";
import { claimInstance } from "../../../functions/pool/claim";
import { CLAIM_IAM_ACTIONS, REFILL_GRANTS, REFILL_IAM_ACTIONS } from "../../../functions/pool/iam";
import { createRefillHandler } from "../../../functions/pool/refill-handler";
import { sqsEvent, sqsRecord } from "../helpers/sqs-events";
import { advert, FakeClaimTable, FakeClock, FakeEc2, FakePoolQueue, GPU_SMALL, POOL_TAG, poolTags, QUEUE_URL, TABLE, telemetry } from "../helpers/pool-fakes";

/** Just what is read from a client stub: the command objects it received. */
interface AnyStub {
  calls(): ReadonlyArray<{ args: readonly unknown[] }>;
}

/** Batch APIs that IAM authorises with the single-message action. */
const AUTHORISED_AS: Record<string, string> = { "sqs:SendMessageBatch": "sqs:SendMessage" };

/** "ec2:StartInstances" for every command sent through the mocked clients. */
function actionsSent(stubs: Array<[string, AnyStub]>): string[] {
  const actions = new Set<string>();
  for (const [service, stub] of stubs) {
    for (const call of stub.calls()) {
      const action = `${service}:${(call.args[0] as object).constructor.name.replace(/Command$/, "")}`;
      actions.add(AUTHORISED_AS[action] ?? action);
    }
  }
  return [...actions].sort();
}

describe("pool IAM action lists match what the code calls", () => {
  it("claim API: every path together sends exactly CLAIM_IAM_ACTIONS", async () => {
    const clock = new FakeClock();
    const queue = new FakePoolQueue(clock);
    const gone = advert();
    const stopped = advert();
    const ec2 = new FakeEc2([{ id: stopped.instance_id, state: "stopped", tags: poolTags() }]);
    const table = new FakeClaimTable();
    queue.push(advert({ instance_type: "g6.xlarge" })); // unsuitable → SendMessage
    queue.push(gone); // missing → DeleteItem
    queue.push(stopped); // stopped → StartInstances
    const deps = { sqs: queue.sqs, ec2: ec2.ec2, dynamodb: table.dynamodb, clock: clock.read, ...telemetry() };

    const result = await claimInstance(deps, {
      workflowId: "wf",
      queueUrl: QUEUE_URL,
      resourceClass: GPU_SMALL,
      requirements: { allowedInstanceTypes: ["g5.xlarge"] },
      claimTableName: TABLE,
      poolTag: POOL_TAG,
      lockTtlSeconds: 60,
      requeueDelaySeconds: 0,
      deadline: clock.now + 1000,
    });

    expect(result.outcome).to.equal("claimed");
    expect(
      actionsSent([
        ["sqs", queue.mock],
        ["ec2", ec2.mock],
        ["dynamodb", table.mock],
      ]),
    ).to.deep.equal([...CLAIM_IAM_ACTIONS].sort());
  });

  it("refill handler: every path together sends exactly REFILL_IAM_ACTIONS", async () => {
    const clock = new FakeClock();
    const queue = new FakePoolQueue(clock);
    const ec2 = new FakeEc2([{ id: "i-0000000000000aaaa", state: "stopped", tags: poolTags() }]);
    const table = new FakeClaimTable();
    const deps = {
      sqs: queue.sqs,
      ec2: ec2.ec2,
      dynamodb: table.dynamodb,
      clock: clock.read,
      config: {
        classes: [
          {
            name: "gpu-small",
            queueUrl: QUEUE_URL,
            launchTemplateId: "lt-1",
            size: 2,
            instanceTypes: ["g5.xlarge"],
            cpu: 4,
            memoryMib: 16384,
            usageClass: "on-demand" as const,
          },
        ],
        claimTableName: TABLE,
        poolTag: POOL_TAG,
        poolTagKey: "encache:pool",
        poolClassTagKey: "encache:pool-class",
        leaseSeconds: 60,
        quarantineQueueUrl: "https://sqs.us-east-1.amazonaws.com/123456789012/pool-refill-dlq",
      },
      ...telemetry(),
    };

    await createRefillHandler(deps)(sqsEvent(sqsRecord({ resource_class: "gpu-small", scheduled_time: "t" }), sqsRecord("not json")));

    expect(ec2.mock.commandCalls(RunInstancesCommand)).to.have.length(1);
    expect(
      actionsSent([
        ["sqs", queue.mock],
        ["ec2", ec2.mock],
        ["dynamodb", table.mock],
      ]),
    ).to.deep.equal([...REFILL_IAM_ACTIONS].sort());
    // Implied by RunInstances (tag-on-create, the template's instance profile, its resolve:ssm: AMI), never sent by the code.
    const implied = REFILL_GRANTS.filter((g) => "implied" in g && g.implied).flatMap((g) => g.actions);
    expect(implied).to.have.members(["ec2:CreateTags", "iam:PassRole", "ssm:GetParameters"]);
    expect(implied.filter((a) => REFILL_IAM_ACTIONS.includes(a))).to.deep.equal([]);
  });
});
