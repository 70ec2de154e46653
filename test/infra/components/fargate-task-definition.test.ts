import { expect } from "chai";
import { hardenedContainerFields } from "../../../infra/lib/container-hardening";
import { ecrRepositoryArn, executionRoleStatements, resolveFargateTaskDefinitionArgs } from "../../../infra/components/fargate-task-definition";
import { fargateSizeProblem } from "../../../infra/aws-rules";
import { allowedActions } from "../../../infra/iam/document";

describe("FargateTaskDefinition validators", () => {
  const sizes: Array<[number, number, boolean]> = [
    [256, 512, true],
    [256, 4096, false],
    [1024, 2048, true],
    [1024, 2500, false],
    [2048, 8192, true],
    [8192, 20_480, true],
    [8192, 18_432, false],
    [300, 1024, false],
  ];
  for (const [cpu, memory, ok] of sizes) {
    it(`${cpu} CPU / ${memory} MiB is ${ok ? "" : "not "}a Fargate size`, () => {
      expect(fargateSizeProblem(cpu, memory) === undefined).to.equal(ok);
    });
  }

  it("fills defaults and refuses names, sizes and stop timeouts ECS would refuse", () => {
    expect(resolveFargateTaskDefinitionArgs({ family: "f", containerName: "c" })).to.deep.equal({
      cpu: 1024,
      memoryMb: 2048,
      cpuArchitecture: "X86_64",
      stopTimeoutSeconds: 120,
      logRetentionDays: 14,
    });
    expect(() => resolveFargateTaskDefinitionArgs({ family: "bad family", containerName: "c", memoryMb: 3000, stopTimeoutSeconds: 300 })).to.throw(
      /family "bad family".*memory 3000 MiB.*stopTimeoutSeconds must be 2..120/,
    );
  });

  it("scopes image pulls to the ECR repository, and grants none for other registries", () => {
    expect(ecrRepositoryArn("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/strategy:dev")).to.equal(
      "arn:aws:ecr:us-east-1:123456789012:repository/team/strategy",
    );
    expect(ecrRepositoryArn("public.ecr.aws/x/y:1")).to.equal(undefined);
    expect(allowedActions(executionRoleStatements({ image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/strategy", logGroupArn: "arn:lg" }))).to.deep.equal([
      "ecr:BatchCheckLayerAvailability",
      "ecr:BatchGetImage",
      "ecr:GetAuthorizationToken",
      "ecr:GetDownloadUrlForLayer",
      "logs:CreateLogStream",
      "logs:PutLogEvents",
    ]);
    expect(allowedActions(executionRoleStatements({ image: "ghcr.io/x/strategy:1", logGroupArn: "arn:lg" }))).to.deep.equal([
      "logs:CreateLogStream",
      "logs:PutLogEvents",
    ]);
  });
});

describe("hardenedContainerFields (pure)", () => {
  const load = async () => ({ hardenedContainerFields });

  it("hardens by default: read-only root with a /tmp scratch mount, uid 1000, no capabilities, no waiver", async () => {
    const { hardenedContainerFields } = await load();
    expect(hardenedContainerFields()).to.deep.equal({
      readonlyRootFilesystem: true,
      user: "1000:1000",
      linuxParameters: { capabilities: { add: [], drop: ["ALL"] } },
      mountPoints: [{ sourceVolume: "scratch", containerPath: "/tmp", readOnly: false }],
    });
  });

  it("adds an init process beside the dropped capabilities when asked (the queue worker)", async () => {
    const { hardenedContainerFields } = await load();
    expect(hardenedContainerFields({ scratchPath: "/scratch", initProcess: true })).to.deep.include({
      linuxParameters: { initProcessEnabled: true, capabilities: { add: [], drop: ["ALL"] } },
      mountPoints: [{ sourceVolume: "scratch", containerPath: "/scratch", readOnly: false }],
    });
  });

  const waivers: Array<[string, Record<string, unknown>, string]> = [
    ["a writable root", { readOnlyRootFilesystem: false }, "readonlyRootFilesystem"],
    ["the image's own user", { user: null }, "user"],
    ["root", { user: "0:0" }, "user"],
    ["capabilities kept", { dropAllCapabilities: false }, "capabilities"],
    ["all three", { readOnlyRootFilesystem: false, user: "root", dropAllCapabilities: false }, "readonlyRootFilesystem,user,capabilities"],
  ];
  for (const [title, hardening, label] of waivers) {
    it(`names ${title} in the encache.hardening-waived label`, async () => {
      const { hardenedContainerFields } = await load();
      expect((hardenedContainerFields(hardening) as { dockerLabels?: Record<string, string> }).dockerLabels).to.deep.equal({
        "encache.hardening-waived": label,
      });
    });
  }
});
