/**
 * The local AWS must refuse what AWS refuses. moto applies a conditional write in two steps on a
 * request thread; local/aws/moto-server.py runs each DynamoDB and SSM request under a lock so that
 * concurrent writers cannot both pass one condition. MOTO_SWITCH_INTERVAL makes the interleaving
 * that is rare at Python's default likely: without the lock, rounds here see two winners.
 *
 * The same for SQS's one write that moto applies in two steps: DeleteMessage rebuilds the queue's
 * list and assigns it back, so a message sent between the two steps vanished (a chaos run lost 5
 * windows that way). moto-server.py deletes under the queue's lock, in place.
 */
import { CreateTableCommand, DynamoDBClient, PutItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { expect } from "chai";
import { MotoServer, motoClientEnv } from "../../local/aws/moto";

const ROUNDS = 60;
const WRITERS = 4;

interface Race {
  name: string;
  /** Prepares round `round`; returns one conditional write per writer, resolving true when it won. */
  prepare(round: number): Promise<Array<() => Promise<boolean>>>;
}

const lostCondition = (names: string[]) => (error: unknown) => {
  if (error instanceof Error && names.includes(error.name)) return false;
  throw error;
};

describe("local AWS (moto-server.py): one winner per conditional write, as on AWS", function () {
  this.timeout(120_000);
  const moto = new MotoServer();
  let dynamodb: DynamoDBClient;
  let ssm: SSMClient;
  let sqs: SQSClient;

  before(async () => {
    const endpoint = await moto.start({ env: { MOTO_SWITCH_INTERVAL: "0.000001" } });
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY } = motoClientEnv(endpoint, "us-east-1");
    const config = { endpoint, region: "us-east-1", credentials: { accessKeyId: AWS_ACCESS_KEY_ID!, secretAccessKey: AWS_SECRET_ACCESS_KEY! }, maxAttempts: 1 };
    dynamodb = new DynamoDBClient(config);
    ssm = new SSMClient(config);
    sqs = new SQSClient(config);
    await dynamodb.send(
      new CreateTableCommand({
        TableName: "jobs",
        KeySchema: [{ AttributeName: "job_id", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "job_id", AttributeType: "S" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
  });

  after(async () => {
    dynamodb?.destroy();
    ssm?.destroy();
    sqs?.destroy();
    await moto.stop();
  });

  const races: Race[] = [
    {
      name: "DynamoDB UpdateItem with a ConditionExpression",
      async prepare(round) {
        const Key = { job_id: { S: `job-${round}` } };
        await dynamodb.send(new PutItemCommand({ TableName: "jobs", Item: { ...Key, status: { S: "running" } } }));
        return Array.from(
          { length: WRITERS },
          (_, writer) => () =>
            dynamodb
              .send(
                new UpdateItemCommand({
                  TableName: "jobs",
                  Key,
                  UpdateExpression: "SET #status = :done, #by = :by",
                  ConditionExpression: "#status = :running",
                  ExpressionAttributeNames: { "#status": "status", "#by": "completed_by" },
                  ExpressionAttributeValues: { ":done": { S: "completed" }, ":running": { S: "running" }, ":by": { N: String(writer) } },
                }),
              )
              .then(() => true, lostCondition(["ConditionalCheckFailedException"])),
        );
      },
    },
    {
      name: "DynamoDB PutItem with attribute_not_exists",
      async prepare(round) {
        return Array.from(
          { length: WRITERS },
          (_, writer) => () =>
            dynamodb
              .send(
                new PutItemCommand({
                  TableName: "jobs",
                  Item: { job_id: { S: `lease-${round}` }, owner: { N: String(writer) } },
                  ConditionExpression: "attribute_not_exists(job_id)",
                }),
              )
              .then(() => true, lostCondition(["ConditionalCheckFailedException"])),
        );
      },
    },
    {
      name: "SSM PutParameter without Overwrite",
      async prepare(round) {
        return Array.from(
          { length: WRITERS },
          (_, writer) => () =>
            ssm
              .send(new PutParameterCommand({ Name: `/race/${round}`, Value: String(writer), Type: "String" }))
              .then(() => true, lostCondition(["ParameterAlreadyExists"])),
        );
      },
    },
  ];

  for (const race of races) {
    it(`${race.name}: ${ROUNDS} rounds of ${WRITERS} concurrent writers`, async () => {
      // Prepare
      const winnersPerRound: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const writers = await race.prepare(round);
        // Act
        const won = await Promise.all(writers.map((write) => write()));
        winnersPerRound.push(won.filter(Boolean).length);
      }
      // Assess
      expect(
        winnersPerRound.filter((n) => n !== 1),
        "rounds without exactly one winner",
      ).to.deep.equal([]);
    });
  }

  it(`SQS SendMessage beside DeleteMessage: ${ROUNDS} rounds, no sent message lost`, async () => {
    // Prepare
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "race-sends", Attributes: { VisibilityTimeout: "600" } }));
    const leftPerRound: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const olds = await Promise.all(
        Array.from({ length: WRITERS }, (_, i) => sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `old-${round}-${i}` }))),
      );
      const handles: string[] = [];
      while (handles.length < olds.length) {
        const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
        handles.push(...(out.Messages ?? []).map((m) => m.ReceiptHandle ?? ""));
      }
      // Act: every old message deleted while as many new ones are sent
      await Promise.all([
        ...handles.map((ReceiptHandle) => sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle }))),
        ...Array.from({ length: WRITERS }, (_, i) => sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `new-${round}-${i}` }))),
      ]);
      const attributes = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
      );
      const left = Number(attributes.Attributes?.ApproximateNumberOfMessages) + Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible);
      leftPerRound.push(left);
      // Take this round's new messages out of the way of the next round's receive.
      let taken = 0;
      while (taken < Number(attributes.Attributes?.ApproximateNumberOfMessages)) {
        const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
        for (const m of out.Messages ?? []) await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle }));
        taken += out.Messages?.length ?? 0;
      }
    }
    // Assess
    expect(
      leftPerRound.filter((n) => n !== WRITERS),
      "rounds where a sent message vanished",
    ).to.deep.equal([]);
  });
});
