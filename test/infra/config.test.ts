import { expect } from "chai";
import { configKey, parseStackConfig } from "../../infra/config";
import { requiredVisibilityTimeoutSeconds } from "../../policy/contract";
import { configError, devConfig, withValue } from "./helpers/stack-config";

describe("stack config (infra/config.ts)", () => {
  it("accepts the dev stack and fills defaults", () => {
    const cfg = parseStackConfig(devConfig());
    expect(cfg.queues.maxReceiveCount).to.equal(3);
    expect(cfg.gpu.ami).to.match(/^\/aws\/service\//);
    expect(cfg.alarmActions).to.deep.equal([]);
    expect(cfg.network.gatewayEndpoints).to.deep.equal(["s3", "dynamodb"]);
    expect(cfg.network.interfaceEndpoints).to.deep.equal([]);
  });

  it("defaults maxReceiveCount to 3 when the queues key is absent", () => {
    const cfg = parseStackConfig(withValue(devConfig(), "queues", undefined));
    expect(cfg.queues.maxReceiveCount).to.equal(3);
  });

  const rejected: Array<{ case: string; path: string; value: unknown; key: string; reason: RegExp }> = [
    { case: "maxReceiveCount 1", path: "queues.maxReceiveCount", value: 1, key: "encache:queues.maxReceiveCount", reason: /at least 2/ },
    { case: "maxReceiveCount 0", path: "queues.maxReceiveCount", value: 0, key: "encache:queues.maxReceiveCount", reason: /at least 2/ },
    {
      case: "ingest visibility shorter than 6 × timeout + window",
      path: "ingest.queueVisibilityTimeoutSeconds",
      value: 100,
      key: "encache:ingest.queueVisibilityTimeoutSeconds",
      reason: /at least 6 × ingest\.window\.timeoutSeconds .* = 180 \(got 100\)/,
    },
    {
      case: "DLQ visibility shorter than the DLQ consumer needs",
      path: "ingest.dlqVisibilityTimeoutSeconds",
      value: 30,
      key: "encache:ingest.dlqVisibilityTimeoutSeconds",
      reason: /= 180 \(got 30\)/,
    },
    { case: "missing required key", path: "gpu.servicePort", value: undefined, key: "encache:gpu.servicePort", reason: /is required/ },
    { case: "missing section", path: "ingest", value: undefined, key: "encache:ingest", reason: /is required/ },
    { case: "malformed instance type", path: "gpu.instanceType", value: "gpu-large", key: "encache:gpu.instanceType", reason: /EC2 instance type/ },
    {
      case: "DLQ consumer batch size above 10",
      path: "ingest.dlqConsumer.batchSize",
      value: 11,
      key: "encache:ingest.dlqConsumer.batchSize",
      reason: /at most 10/,
    },
    { case: "maxConcurrency below Lambda's 2", path: "ingest.window.maxConcurrency", value: 1, key: "encache:ingest.window.maxConcurrency", reason: /2/ },
    {
      case: "retention of 14 days leaves the DLQ no margin",
      path: "ingest.messageRetentionSeconds",
      value: 1_209_600,
      key: "encache:ingest.messageRetentionSeconds",
      reason: /below 14 days/,
    },
    { case: "bad log retention", path: "logRetentionDays", value: 10, key: "encache:logRetentionDays", reason: /CloudWatch retention/ },
    { case: "bad CIDR", path: "network.cidrBlock", value: "10.0.0.0/8", key: "encache:network.cidrBlock", reason: /CIDR/ },
    {
      case: "a gateway endpoint AWS does not offer",
      path: "network.gatewayEndpoints",
      value: ["sqs"],
      key: "encache:network.gatewayEndpoints[0]",
      reason: /s3|dynamodb/,
    },
    {
      case: "an interface endpoint named twice",
      path: "network.interfaceEndpoints",
      value: ["sqs", "sqs"],
      key: "encache:network.interfaceEndpoints",
      reason: /twice/,
    },
    {
      case: "an interface endpoint given as a full service name",
      path: "network.interfaceEndpoints",
      value: ["com.amazonaws.us-east-1.SQS"],
      key: "encache:network.interfaceEndpoints[0]",
      reason: /endpoint name/,
    },
    { case: "wrong type", path: "gpu.servicePort", value: "8080", key: "encache:gpu.servicePort", reason: /number/ },
    {
      case: "an sqs alert subscription, which could not deliver without overwriting a queue policy the stack does not own",
      path: "alerts.subscriptions",
      value: [{ protocol: "sqs", endpoint: "arn:aws:sqs:us-east-1:123456789012:oncall" }],
      key: "encache:alerts.subscriptions[0].protocol",
      reason: /sqs is not supported: .*queue policy is one document.*subscribe the queue from the stack that owns it/,
    },
    {
      case: "a lambda alert subscription whose endpoint is no function ARN",
      path: "alerts.subscriptions",
      value: [{ protocol: "lambda", endpoint: "oncall-pager" }],
      key: "encache:alerts.subscriptions[0].endpoint",
      reason: /must be a Lambda function ARN/,
    },
    {
      case: "an alert protocol SNS does not have",
      path: "alerts.subscriptions",
      value: [{ protocol: "pager", endpoint: "x@y.z" }],
      key: "encache:alerts.subscriptions[0].protocol",
      reason: /must be one of email, email-json, https, lambda, sms/,
    },
  ];
  const FLEET = { maxSize: 4, windowsPerInstance: 500, spotPercent: 50 };
  rejected.push(
    {
      case: "fleet mode without its fleet block",
      path: "gpu.capacity",
      value: { mode: "fleet" },
      key: "encache:gpu.capacity.fleet",
      reason: /required when mode is fleet/,
    },
    {
      case: "a fleet block in instance mode",
      path: "gpu.capacity",
      value: { mode: "instance", fleet: FLEET },
      key: "encache:gpu.capacity.mode",
      reason: /set mode to fleet, or drop the fleet block/,
    },
    {
      case: "a warm pool with Spot, which AWS refuses (PutWarmPool)",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { ...FLEET, warmPool: { minSize: 1 } } },
      key: "encache:gpu.capacity.fleet.warmPool",
      reason: /AWS refuses a warm pool on a group with a mixed instances policy or Spot/,
    },
    {
      case: "a warm pool beside several instance types, whose mixed instances policy AWS refuses with it (PutWarmPool)",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { maxSize: 4, windowsPerInstance: 500, instanceTypes: ["g5.xlarge", "g6.xlarge"], warmPool: { minSize: 1 } } },
      key: "encache:gpu.capacity.fleet.warmPool",
      reason: /cannot be set with 2 instanceTypes/,
    },
    {
      case: "an on-demand base above maxSize",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { ...FLEET, onDemandBaseCapacity: 5 } },
      key: "encache:gpu.capacity.fleet.onDemandBaseCapacity",
      reason: /at most maxSize \(4\)/,
    },
    {
      case: "a drain longer than a Spot interruption's two minutes",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { ...FLEET, drainSeconds: 120 } },
      key: "encache:gpu.capacity.fleet.drainSeconds",
      reason: /two minutes/,
    },
    {
      case: "a Spot breaker with no cool-down",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { ...FLEET, spotBreaker: { cooldownMinutes: 0 } } },
      key: "encache:gpu.capacity.fleet.spotBreaker.cooldownMinutes",
      reason: /at least 1: a breaker that opens for no time does nothing/,
    },
    {
      case: "a Spot breaker counting a fraction of an interruption",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { ...FLEET, spotBreaker: { interruptions: 1.5 } } },
      key: "encache:gpu.capacity.fleet.spotBreaker.interruptions",
      reason: /expected int/,
    },
    {
      case: "a Spot breaker that would keep more interruption tags than the group has room for",
      path: "gpu.capacity",
      value: { mode: "fleet", fleet: { ...FLEET, spotBreaker: { interruptions: 4, windowMinutes: 5, cooldownMinutes: 60 } } },
      key: "encache:gpu.capacity.fleet.spotBreaker",
      reason: /keeps 40 interruption tags .* more than 20: an Auto Scaling group holds 50 tags/,
    },
  );

  it("defaults the GPU capacity to one instance, and fills the fleet's defaults in fleet mode", () => {
    expect(parseStackConfig(devConfig()).gpu.capacity).to.deep.equal({ mode: "instance" });
    const fleet = parseStackConfig(withValue(devConfig(), "gpu.capacity", { mode: "fleet", fleet: { maxSize: 4, windowsPerInstance: 500, warmPool: {} } })).gpu
      .capacity;
    expect(fleet.fleet).to.deep.include({
      onDemandBaseCapacity: 0,
      spotPercent: 0,
      spotAllocationStrategy: "capacity-optimized",
      scaleInCooldownSeconds: 600,
      scaleCheckMinutes: 1,
      drainSeconds: 90,
      spotBreaker: { interruptions: 2, windowMinutes: 15, cooldownMinutes: 30 },
      warmPool: { minSize: 1 },
    });
  });

  for (const c of rejected) {
    it(`rejects ${c.case}, naming ${c.key}`, () => {
      const err = configError(withValue(devConfig(), c.path, c.value));
      const issue = err.issues.find((i) => i.key === c.key);
      expect(issue, `issues: ${JSON.stringify(err.issues)}`).to.not.equal(undefined);
      expect(issue!.reason).to.match(c.reason);
      expect(err.message).to.contain(c.key);
    });
  }

  it("accepts every alert protocol that delivers: email, email-json, https, sms, and lambda on a function ARN", () => {
    const subscriptions = [
      { protocol: "email", endpoint: "oncall@example.com" },
      { protocol: "email-json", endpoint: "oncall@example.com" },
      { protocol: "https", endpoint: "https://hooks.example.com/alerts" },
      { protocol: "sms", endpoint: "+15555550100" },
      { protocol: "lambda", endpoint: "arn:aws:lambda:us-east-1:123456789012:function:pager" },
      { protocol: "lambda", endpoint: "arn:aws:lambda:us-east-1:123456789012:function:pager:live" },
    ];
    expect(parseStackConfig(withValue(devConfig(), "alerts.subscriptions", subscriptions)).alerts.subscriptions).to.deep.equal(subscriptions);
  });

  it("formats key paths the way Pulumi config keys read", () => {
    expect(configKey(["ingest", "window", "timeoutSeconds"])).to.equal("encache:ingest.window.timeoutSeconds");
    expect(configKey(["alarmActions", 0])).to.equal("encache:alarmActions[0]");
  });

  it("computes the visibility a consumer needs as 6 × timeout + window", () => {
    expect(requiredVisibilityTimeoutSeconds(30, 5)).to.equal(185);
  });
});
