import { expect } from "chai";
import { parseOpsArgs, UsageError } from "../../ops/cli";
import { confirm } from "../../ops/confirm";
import { describeMessage } from "../../ops/dlq";
import { GpuRefusal, holdValue } from "../../ops/gpu";
import { OutputsError, parseOutputs, queueNamed } from "../../ops/outputs";
import { groupByReason, type QuarantinedMessage, selectForRelease } from "../../ops/quarantine";

const OUTPUTS = {
  opsQueues: {
    worker: {
      url: "https://sqs.us-east-1.amazonaws.com/123456789012/worker-1",
      arn: "arn:aws:sqs:us-east-1:123456789012:worker-1",
      kind: "source",
      dlq: "worker-dlq",
    },
    "worker-dlq": {
      url: "https://sqs.us-east-1.amazonaws.com/123456789012/worker-dlq-1",
      arn: "arn:aws:sqs:us-east-1:123456789012:worker-dlq-1",
      kind: "dlq",
      source: "worker",
    },
  },
  clusterName: "platform-cluster-1",
  gpuInstanceId: "i-0123",
  opsGpu: { mode: "instance", holdTag: "encache:gpu-hold", idleStopMinutes: 30 },
  operatorPolicyArn: "arn:aws:iam::123456789012:policy/encache-operator-dev",
};

describe("ops: arguments", () => {
  it("parses each command with its own flags", () => {
    // Act
    const peek = parseOpsArgs(["dlq", "peek", "worker-dlq", "-n", "3", "--stack", "dev"]);
    const redrive = parseOpsArgs(["dlq", "redrive", "worker-dlq", "--rate", "50", "--stack", "prod", "--yes"]);
    const release = parseOpsArgs(["quarantine", "release", "--reason", "bad json", "--stack", "dev"]);
    const hold = parseOpsArgs(["gpu", "hold", "--until", "2030-01-01T00:00:00Z", "--stack", "dev"]);
    const size = parseOpsArgs(["gpu", "size", "2", "--stack", "prod", "--yes"]);
    // Assess
    expect(peek).to.deep.include({ stack: "dev", command: { kind: "dlq-peek", queue: "worker-dlq", n: 3 } });
    expect(redrive).to.deep.include({ stack: "prod", yes: true, command: { kind: "dlq-redrive", queue: "worker-dlq", rate: 50, cancel: false } });
    expect(release).to.deep.include({ command: { kind: "quarantine-release", reason: "bad json" } });
    expect(hold).to.deep.include({ command: { kind: "gpu", action: "hold", until: "2030-01-01T00:00:00Z" } });
    expect(size).to.deep.include({ stack: "prod", yes: true, command: { kind: "gpu-size", size: 2 } });
  });

  it("refuses what does not apply, with the reason", () => {
    // Prepare
    const cases: Array<[string[], RegExp]> = [
      [["status"], /--stack <name> is required/],
      [["status", "--stack", "dev", "--rate", "5"], /--rate does not apply/],
      [["dlq", "redrive", "q", "--stack", "dev", "--rate", "501"], /1 to 500/],
      [["dlq", "redrive", "q", "--stack", "dev", "--rate", "5", "--cancel"], /one or the other/],
      [["dlq", "peek", "--stack", "dev"], /name the queue/],
      [["quarantine", "release", "id", "--reason", "r", "--stack", "dev"], /one of the two/],
      [["gpu", "reboot", "--stack", "dev"], /unknown command gpu reboot/],
      [["gpu", "size", "--stack", "dev"], /gpu size <N>: give the number of instances/],
      [["gpu", "size", "two", "--stack", "dev"], /gpu size two: a whole number of instances/],
      [["gpu", "size", "1.5", "--stack", "dev"], /gpu size 1.5: a whole number/],
      [["gpu", "size", "2", "3", "--stack", "dev"], /unexpected 3/],
      [["gpu", "size", "2", "--until", "2030-01-01T00:00:00Z", "--stack", "dev"], /--until does not apply/],
      [["status", "--stack", "dev", "--local", "--outputs", "f"], /--local reads the outputs/],
    ];
    for (const [argv, message] of cases) {
      // Act / Assess
      expect(() => parseOpsArgs(argv), argv.join(" ")).to.throw(UsageError, message);
    }
  });
});

describe("ops: confirmation", () => {
  const ask = (answer: string) => async () => answer;

  it("acts with --yes, or on a terminal with a yes; a prod stack wants its name typed", async () => {
    // Act
    const yes = await confirm({ action: "x", stack: "prod", yes: true, tty: false, ask: ask("") });
    const y = await confirm({ action: "x", stack: "dev", yes: false, tty: true, ask: ask("y") });
    const prodY = await confirm({ action: "x", stack: "prod", yes: false, tty: true, ask: ask("y") });
    const prodName = await confirm({ action: "x", stack: "prod", yes: false, tty: true, ask: ask("prod") });
    // Assess
    expect([yes.go, y.go, prodY.go, prodName.go]).to.deep.equal([true, true, false, true]);
  });

  it("never acts off a terminal without --yes, and defaults to no on one", async () => {
    // Act
    const script = await confirm({ action: "x", stack: "prod", yes: false, tty: false, ask: ask("y") });
    const enter = await confirm({ action: "x", stack: "dev", yes: false, tty: true, ask: ask("") });
    // Assess
    expect(script).to.deep.equal({ go: false, why: "not a terminal: x needs --yes (prod never defaults to acting)" });
    expect(enter.go).to.equal(false);
  });
});

describe("ops: outputs", () => {
  it("reads pulumi stack output --json, and names the queue it does not know", () => {
    // Act
    const outputs = parseOutputs(JSON.stringify(OUTPUTS), "out.json");
    // Assess
    expect(queueNamed(outputs, "worker-dlq", ["dlq"]).source).to.equal("worker");
    expect(() => queueNamed(outputs, "nope", ["dlq"])).to.throw(OutputsError, "unknown dlq nope (this stack has: worker-dlq)");
  });

  it("refuses outputs without what ops needs, naming it", () => {
    // Prepare
    const { opsQueues: _q, ...noQueues } = OUTPUTS;
    const fleetWithoutGroup = { ...OUTPUTS, opsGpu: { ...OUTPUTS.opsGpu, mode: "fleet" } };
    // Act / Assess
    expect(() => parseOutputs("{", "f.json")).to.throw(OutputsError, "f.json: not JSON");
    expect(() => parseOutputs(JSON.stringify(noQueues), "f.json")).to.throw(OutputsError, "opsQueues");
    expect(() => parseOutputs(JSON.stringify(fleetWithoutGroup), "f.json")).to.throw(OutputsError, "fleet mode, but no gpuFleetGroupName");
  });
});

describe("ops: what a peek and the quarantine show", () => {
  const queues = [{ name: "worker", url: "u", arn: "arn:aws:sqs:us-east-1:123456789012:worker-1", kind: "source" as const }];

  it("gives the stamped reason first, else the source SQS moved the message from, else says it has none", () => {
    // Prepare
    const base = { MessageId: "m", Body: "b", Attributes: { ApproximateReceiveCount: "4", ApproximateFirstReceiveTimestamp: "0", SentTimestamp: "0" } };
    // Act
    const stamped = describeMessage({ ...base, MessageAttributes: { "quarantine-reason": { DataType: "String", StringValue: "bad json" } } }, queues);
    const moved = describeMessage({ ...base, Attributes: { ...base.Attributes, DeadLetterQueueSourceArn: queues[0]!.arn } }, queues);
    const sent = describeMessage(base, queues);
    // Assess
    expect(stamped.why).to.equal("quarantine-reason: bad json");
    expect(moved.why).to.equal("failed its receives on worker");
    expect(sent.why).to.match(/^sent here directly/);
    expect(moved).to.deep.include({ receiveCount: 4, firstReceivedAt: "1970-01-01T00:00:00.000Z" });
  });

  it("groups quarantined messages by reason, most frequent first, and selects a release by id or reason", () => {
    // Prepare
    const m = (id: string, reason: string): QuarantinedMessage => ({ messageId: id, queue: "q", reason, sourceQueueArn: null, body: id, message: {} });
    const all = [m("1", "a"), m("2", "b"), m("3", "b")];
    // Act
    const groups = groupByReason(all);
    // Assess
    expect(groups.map((g) => [g.reason, g.count, g.example.messageId])).to.deep.equal([
      ["b", 2, "2"],
      ["a", 1, "1"],
    ]);
    expect(selectForRelease(all, { reason: "b" }).map((x) => x.messageId)).to.deep.equal(["2", "3"]);
    expect(() => selectForRelease(all, { id: "9" })).to.throw("no quarantined message 9");
  });
});

describe("ops: the hold tag's value", () => {
  it("is true without --until, and the ISO time with it; a past or unreadable time is refused", () => {
    // Act / Assess
    expect(holdValue(undefined, 0)).to.equal("true");
    expect(holdValue("2030-01-01T08:00:00+01:00", 0)).to.equal("2030-01-01T07:00:00.000Z");
    expect(() => holdValue("2020-01-01T00:00:00Z", Date.now())).to.throw(GpuRefusal, "already past");
    expect(() => holdValue("tomorrow", 0)).to.throw(GpuRefusal, "not a time");
  });
});
