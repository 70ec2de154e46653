import { CreateQueueCommand, GetQueueAttributesCommand, type Message, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import { LocalScheduler, type SchedulerEvent } from "../../../local/hosts/scheduler";
import type { LocalSchedule } from "../../../local/provision/topology-types";
import { motoEndpoint, resetMoto } from "../../integration/helpers/moto";

const ARN_PREFIX = "arn:aws:sqs:us-east-1:123456789012:";
const ALL_CONTEXT =
  '{"at":"<aws.scheduler.scheduled-time>","id":"<aws.scheduler.execution-id>","attempt":"<aws.scheduler.attempt-number>","arn":"<aws.scheduler.schedule-arn>"}';

async function waitFor(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function schedule(overrides: Omit<Partial<LocalSchedule>, "target"> & { target?: Partial<LocalSchedule["target"]> } = {}): LocalSchedule {
  const { target, ...rest } = overrides;
  return {
    urn: "urn:pulumi:dev::p::aws:scheduler/schedule:Schedule::tick",
    logicalName: "tick",
    name: "tick-1a2b3c",
    expression: "rate(7 days)",
    enabled: true,
    ...rest,
    target: {
      arn: `${ARN_PREFIX}target`,
      input: ALL_CONTEXT,
      deadLetterArn: `${ARN_PREFIX}target-dlq`,
      maximumRetryAttempts: 3,
      maximumEventAgeInSeconds: 3600,
      ...target,
    },
  };
}

describe("local runtime: Scheduler", () => {
  let sqs: SQSClient;
  let scheduler: LocalScheduler | undefined;
  let events: SchedulerEvent[];
  const urls = new Map<string, string>();

  async function createQueue(name: string): Promise<string> {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }));
    urls.set(Attributes!.QueueArn!, QueueUrl!);
    return QueueUrl!;
  }
  async function drain(queueUrl: string): Promise<Message[]> {
    const all: Message[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"], VisibilityTimeout: 600 }),
      );
      if (Messages.length === 0) return all;
      all.push(...Messages);
    }
  }
  function make(schedules: LocalSchedule[], opts: { speed: number; now?: () => number; queueUrlForArn?: (arn: string) => string | undefined }): LocalScheduler {
    scheduler = new LocalScheduler(schedules, { sqs, queueUrlForArn: (arn) => urls.get(arn), onEvent: (e) => events.push(e), ...opts });
    return scheduler;
  }
  const bodies = (messages: Message[]) => messages.map((m) => JSON.parse(m.Body!) as Record<string, string>);

  let target: string;
  let dlq: string;

  beforeEach(async () => {
    await resetMoto();
    urls.clear();
    events = [];
    sqs = new SQSClient({});
    target = await createQueue("target");
    dlq = await createQueue("target-dlq");
  });
  afterEach(async () => {
    await scheduler?.stop();
    scheduler = undefined;
    sqs.destroy();
  });

  it("fire() substitutes the context attributes in the input and sends it to the target queue", async () => {
    const s = make([schedule()], { speed: 1, now: () => Date.parse("2026-03-04T05:06:07.890Z") });

    await s.fire("tick");

    const [body] = bodies(await drain(target));
    expect(body).to.deep.include({ at: "2026-03-04T05:06:07Z", attempt: "1", arn: "arn:aws:scheduler:us-east-1:123456789012:schedule/default/tick-1a2b3c" });
    expect(body.id).to.match(/^[0-9a-f]{16}$/);
    expect(s.stats().tick).to.include({ fired: 1, delivered: 1, retries: 0 });
    expect(events.map((e) => e.kind)).to.deep.equal(["delivered"]);
  });

  it("fire() accepts the physical name, and delivers at once even when the rate is days", async () => {
    const s = make([schedule({ expression: "rate(7 days)" })], { speed: 60 });
    s.start();

    await s.fire("tick-1a2b3c");

    expect(await drain(target)).to.have.length(1);
    expect(s.stats().tick).to.include({ fired: 1, delivered: 1 });
  });

  it("at speed 60 a rate(1 minute) schedule fires about once a second, one simulated minute apart", async () => {
    const s = make([schedule({ expression: "rate(1 minute)" })], { speed: 60 });
    const started = Date.now();
    s.start();

    await waitFor("three fires", () => s.stats().tick.delivered >= 3);
    await s.stop();
    const realSeconds = (Date.now() - started) / 1000;

    const times = bodies(await drain(target)).map((b) => Date.parse(b.at));
    // Generous bounds: roughly one fire per real second, never a burst.
    expect(times.length).to.be.within(3, Math.ceil(realSeconds) + 1);
    expect(times.slice(1).map((t, i) => t - times[i])).to.deep.equal(times.slice(1).map(() => 60_000));
  });

  it("fires a cron schedule on whole simulated minutes", async () => {
    const s = make([schedule({ expression: "cron(* * * * ? *)" })], { speed: 120 });
    s.start();

    await waitFor("two fires", () => s.stats().tick.delivered >= 2);
    await s.stop();

    const times = bodies(await drain(target)).map((b) => b.at);
    expect(times.length).to.be.at.least(2);
    for (const t of times) expect(t).to.match(/:00Z$/);
  });

  it("fires an at() schedule once, when the simulated clock reaches it", async () => {
    const at = new Date(Math.ceil((Date.now() + 120_000) / 1000) * 1000).toISOString().replace(/\.000Z$/, "");
    const s = make([schedule({ expression: `at(${at})` })], { speed: 120 });
    s.start();

    await waitFor("the one fire", () => s.stats().tick.delivered === 1);

    expect(bodies(await drain(target)).map((b) => b.at)).to.deep.equal([`${at}Z`]);
    expect(s.stats().tick.nextAtMs).to.equal(null);
  });

  it("a disabled schedule never fires on its own", async () => {
    const s = make([schedule({ expression: "rate(1 minute)", enabled: false })], { speed: 600 });
    s.start();

    await new Promise((r) => setTimeout(r, 1_000)); // ten intervals at this speed

    expect(s.stats().tick).to.include({ fired: 0, nextAtMs: null });
    expect(await drain(target)).to.have.length(0);
  });

  describe("failed deliveries", () => {
    it("retries a queue that does not exist, then sends the event to the DLQ with Scheduler's error attributes", async () => {
      urls.set(`${ARN_PREFIX}missing`, `${motoEndpoint()}/123456789012/missing`);
      const s = make([schedule({ target: { arn: `${ARN_PREFIX}missing`, maximumRetryAttempts: 2 } })], { speed: 60 });

      await s.fire("tick");

      const [dead] = await drain(dlq);
      const attribute = (name: string) => dead.MessageAttributes?.[name]?.StringValue;
      expect(attribute("ERROR_CODE")).to.match(/NonExistentQueue|QueueDoesNotExist/);
      expect(attribute("ERROR_MESSAGE")).to.be.a("string").and.not.equal("");
      expect(attribute("EXHAUSTED_RETRY_CONDITION")).to.equal("MaximumRetryAttempts");
      expect(attribute("RETRY_ATTEMPTS")).to.equal("2");
      expect(attribute("TARGET_ARN")).to.equal(`${ARN_PREFIX}missing`);
      expect(attribute("SCHEDULE_ARN")).to.equal("arn:aws:scheduler:us-east-1:123456789012:schedule/default/tick-1a2b3c");
      const body = JSON.parse(dead.Body!) as Record<string, string>;
      expect(attribute("EXECUTION_ID")).to.equal(body.id);
      expect(attribute("SCHEDULED_TIME")).to.equal(body.at);
      expect(body.attempt).to.equal("3");
      expect(events.map((e) => e.kind)).to.deep.equal(["retry", "retry", "dead-lettered"]);
      expect(s.stats().tick).to.include({ fired: 1, delivered: 0, retries: 2, deadLettered: 1, dropped: 0 });
    });

    it("stops retrying when the next retry would pass maximumEventAgeInSeconds", async () => {
      const s = make([schedule({ target: { arn: `${ARN_PREFIX}unknown`, maximumRetryAttempts: 185, maximumEventAgeInSeconds: 60 } })], { speed: 60 });

      await s.fire("tick");

      const [dead] = await drain(dlq);
      const stats = s.stats().tick;
      expect(dead.MessageAttributes?.EXHAUSTED_RETRY_CONDITION?.StringValue).to.equal("MaximumEventAgeInSeconds");
      expect(dead.MessageAttributes?.ERROR_CODE?.StringValue).to.equal("AWS.SimpleQueueService.NonExistentQueue");
      expect(stats.retries).to.be.within(1, 184);
      expect(dead.MessageAttributes?.RETRY_ATTEMPTS?.StringValue).to.equal(String(stats.retries));
    });

    it("drops and counts the event when there is no DLQ", async () => {
      const s = make([schedule({ target: { arn: `${ARN_PREFIX}unknown`, maximumRetryAttempts: 1, deadLetterArn: undefined } })], { speed: 60 });

      await s.fire("tick");

      expect(s.stats().tick).to.include({ retries: 1, deadLettered: 0, dropped: 1 });
      expect(events.at(-1)).to.deep.include({ kind: "dropped" });
      expect(await drain(dlq)).to.have.length(0);
    });

    it("stop() cuts a retry backoff short, counts the invocation as dropped and resolves", async () => {
      const s = make([schedule({ target: { arn: `${ARN_PREFIX}unknown` } })], { speed: 1 });
      const delivery = s.fire("tick");
      await waitFor("the first retry to be scheduled", () => s.stats().tick.retries === 1);

      await s.stop();
      await delivery;

      expect(s.stats().tick).to.include({ dropped: 1, deadLettered: 0 });
      expect(await drain(dlq)).to.have.length(0);
    });
  });

  describe("set-up errors", () => {
    const cases: Array<[string, LocalSchedule, RegExp]> = [
      ["an expression it cannot evaluate", schedule({ expression: "rate(5 weeks)" }), /schedule tick: unsupported schedule expression "rate\(5 weeks\)"/],
      ["a target that is not a queue", schedule({ target: { arn: "arn:aws:lambda:us-east-1:123456789012:function:f" } }), /only SQS queue targets/],
    ];
    for (const [name, bad, reason] of cases) {
      it(`rejects ${name}, naming the schedule`, () => expect(() => make([bad], { speed: 1 })).to.throw(reason));
    }

    it("fire() of an unknown schedule rejects with the known names", async () => {
      const s = make([schedule()], { speed: 1 });

      const error = await s.fire("nope").then(
        () => undefined,
        (err: Error) => err.message,
      );

      expect(error).to.match(/no schedule named nope \(known: tick\)/);
    });
  });
});
