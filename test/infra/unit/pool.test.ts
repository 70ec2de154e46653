import { expect } from "chai";
import { CLAIM_IAM_ACTIONS, REFILL_ROLE_ACTIONS } from "../../../functions/pool/iam";
import { poolLaunchTemplateDefaults, resolvePoolLaunchTemplateArgs } from "../../../infra/components/pool-launch-template";
import { parseStackConfig, StackConfigError } from "../../../infra/config";
import { allowedActions, type Statement } from "../../../infra/iam/document";
import { claimStatements, refillStatements } from "../../../infra/iam/pool";
import { poolCrossFieldIssues } from "../../../infra/parts/pool.config";
import { allowStatements, unscopedLaunchGrant } from "../../../policy/rules/ec2-launch-grants-scoped";
import { devConfig, withValue } from "../helpers/stack-config";

function keysOf(raw: Record<string, unknown>): string[] {
  try {
    parseStackConfig(raw);
  } catch (e) {
    if (e instanceof StackConfigError) return e.issues.map((i) => `${i.key}: ${i.reason}`);
    throw e;
  }
  return [];
}

describe("pool config (encache:pool)", () => {
  it("accepts the dev stack and fills the defaults", () => {
    const pool = parseStackConfig(devConfig()).pool;
    expect(Object.keys(pool.classes)).to.deep.equal(["cpu-small", "gpu-small"]);
    expect(pool.classes["cpu-small"]).to.deep.include({ amiParameter: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", rootDeviceName: "/dev/xvda" });
    expect(pool).to.deep.include({ tolerance: 5, requeueDelaySeconds: 5 });
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ["pool.classes.gpu-small.size", 51, /^encache:pool\.classes\.gpu-small\.size: /],
    ["pool.classes.gpu-small.instanceTypes", ["gpu"], /^encache:pool\.classes\.gpu-small\.instanceTypes\[0\]: must be an EC2 instance type/],
    ["pool.classes.gpu-small.instanceTypes", [], /^encache:pool\.classes\.gpu-small\.instanceTypes: /],
    ["pool.classes.gpu-small.usageClass", "reserved", /^encache:pool\.classes\.gpu-small\.usageClass: /],
    ["pool.classes.gpu-small.rootDeviceName", "sda1", /^encache:pool\.classes\.gpu-small\.rootDeviceName: must be a device name/],
    ["pool.classes", {}, /^encache:pool\.classes: must declare at least one resource class/],
    ["pool.requeueDelaySeconds", 901, /^encache:pool\.requeueDelaySeconds: /],
    ["pool.tolerance", 0, /^encache:pool\.tolerance: /],
    ["pool.refill.queueVisibilityTimeoutSeconds", 100, /^encache:pool\.refill\.queueVisibilityTimeoutSeconds: must be at least 6 × refill\.timeoutSeconds = 360/],
    ["pool.advertRetentionSeconds", 120, /^encache:pool\.advertRetentionSeconds: must be at least one refill period/],
    ["pool.advertRetentionSeconds", 3600, /^encache:pool\.advertRetentionSeconds: must be at most two refill periods/],
    ["pool.refill.everyMinutes", undefined, /^encache:pool\.refill\.everyMinutes: is required/],
  ];
  for (const [path, value, message] of bad) {
    it(`names the key for ${path} = ${JSON.stringify(value)}`, () => {
      const issues = keysOf(withValue(devConfig(), path, value));
      expect(issues.some((i) => message.test(i)), issues.join("\n")).to.equal(true);
    });
  }

  it("rejects a class name that cannot be part of resource names", () => {
    const config = devConfig();
    const pool = structuredClone(config.pool) as { classes: Record<string, unknown> };
    pool.classes["GPU_Big"] = pool.classes["gpu-small"];
    expect(keysOf({ ...config, pool }).join("\n")).to.match(/encache:pool\.classes\.GPU_Big: /);
  });

  it("cross-field checks are pure and relative to encache:pool", () => {
    expect(poolCrossFieldIssues({ advertRetentionSeconds: 300, refill: { everyMinutes: 5, timeoutSeconds: 60, memoryMb: 256, maxConcurrency: 2, queueVisibilityTimeoutSeconds: 360 } })).to.deep.equal([]);
  });
});

describe("PoolLaunchTemplate args", () => {
  it("fills the defaults", () => {
    expect(resolvePoolLaunchTemplateArgs({ instanceType: "m7i.large", membershipTags: { "encache:pool": "p" } })).to.deep.equal({
      ...poolLaunchTemplateDefaults,
      instanceType: "m7i.large",
      membershipTags: { "encache:pool": "p" },
    });
  });
  const invalid: Array<[string, Parameters<typeof resolvePoolLaunchTemplateArgs>[0], RegExp]> = [
    ["a malformed type", { instanceType: "big", membershipTags: { a: "b" } }, /instanceType "big"/],
    ["a private AMI parameter", { instanceType: "m7i.large", amiParameter: "/my/ami", membershipTags: { a: "b" } }, /amiParameter/],
    ["a tiny root volume", { instanceType: "m7i.large", rootVolumeGiB: 4, membershipTags: { a: "b" } }, /rootVolumeGiB/],
    ["no membership tags", { instanceType: "m7i.large", membershipTags: {} }, /membershipTags/],
  ];
  for (const [title, args, message] of invalid) {
    it(`rejects ${title}`, () => expect(() => resolvePoolLaunchTemplateArgs(args)).to.throw(message));
  }
});

describe("pool IAM statements", () => {
  const args = {
    region: "us-east-1",
    poolTag: "encache-warm-pool-dev",
    tableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/pool-claims",
    poolQueueArns: ["arn:aws:sqs:us-east-1:123456789012:pool-gpu-small"],
    refillDlqArn: "arn:aws:sqs:us-east-1:123456789012:pool-refill-dlq",
    launchTemplateArns: ["arn:aws:ec2:us-east-1:123456789012:launch-template/lt-1"],
    subnetId: "subnet-1",
    securityGroupArn: "arn:aws:ec2:us-east-1:123456789012:security-group/sg-1",
    instanceRoleArn: "arn:aws:iam::123456789012:role/pool-instance-role",
  };
  const bySid = (statements: Statement[], sid: string) => statements.find((s) => s.Sid === sid);

  it("the refill role grants exactly the refill code's actions plus those RunInstances implies", () => {
    expect(allowedActions(refillStatements(args))).to.deep.equal([...REFILL_ROLE_ACTIONS].sort());
  });

  it("the claim policy grants exactly the claim API's actions", () => {
    expect(allowedActions(claimStatements(args))).to.deep.equal([...CLAIM_IAM_ACTIONS].sort());
  });

  it("conditions StartInstances and the created resources of RunInstances on the pool tag", () => {
    const s = refillStatements(args);
    expect(bySid(s, "StartPoolInstances")?.Condition).to.deep.equal({ StringEquals: { "aws:ResourceTag/encache:pool": "encache-warm-pool-dev" } });
    expect(bySid(s, "RunTaggedPoolInstances")?.Condition).to.deep.equal({ StringEquals: { "aws:RequestTag/encache:pool": "encache-warm-pool-dev" } });
    expect(bySid(s, "TagOnLaunch")?.Condition).to.deep.equal({ StringEquals: { "ec2:CreateAction": "RunInstances" } });
  });

  it("passes only the instance role, and only to EC2", () => {
    const pass = bySid(refillStatements(args), "PassInstanceRole");
    expect(pass).to.deep.include({ Resource: args.instanceRoleArn, Condition: { StringEquals: { "iam:PassedToService": "ec2.amazonaws.com" } } });
  });

  it("every launch grant passes the ec2-launch-grants-scoped rule's own check", () => {
    for (const statements of [refillStatements(args), claimStatements(args)]) {
      const problems = allowStatements({ Statement: statements }).map(unscopedLaunchGrant).filter((p) => p !== null);
      expect(problems).to.deep.equal([]);
    }
  });
});
