/**
 * What every GPU instance boots with (issue 35), in both stacks' own plans: dev's single instance
 * and prod's fleet. The key table, the gateway's image and repository, the log groups, the user
 * data (parsed, and its gateway environment read back with the gateway's own codec), the instance
 * role's grants, the network path of the scheduled checks, and the fleet's drain hook and rollout.
 * Expected values come from each stack's parsed config (parseStackConfig), not restated.
 */
import { expect } from "chai";
import { parse } from "yaml";
import { GATEWAY_ENV, GATEWAY_ENV_FILE } from "../../../functions/gpu/env";
import { FLEET_GATEWAY_GRANTS, GATEWAY_GRANTS } from "../../../functions/gpu/iam";
import { calledActions } from "../../../functions/shared/grants";
import { parseStackConfig } from "../../../infra/config";
import { GATEWAY_UNIT, MODEL_UNIT } from "../../../infra/lib/gpu-user-data";
import { modelRepositoryArn } from "../../../infra/parts/ingest.config";
import type { PlanDocument } from "../../../plan/render";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";
import { gpuBoot } from "../helpers/gpu-user-data";
import { STACKS, useStackPlans } from "../helpers/run-plan";
import { scopedStackConfig } from "../helpers/stack-config";

type Statement = { Sid?: string; Effect: string; Action: string[]; Resource: string | string[]; Condition?: unknown };
type CloudConfig = { write_files: Array<{ path: string; content: string; permissions: string }>; runcmd: string[][] };

const config = (stack: string) => parseStackConfig(scopedStackConfig(stack));
const isFleet = (stack: string) => config(stack).gpu.capacity.mode === "fleet";

/** The GPU's user data and host policy, checked against the stack's mode. */
function gpuOf(doc: PlanDocument, stack: string): { userData: string; hostPolicy: Res } {
  const boot = gpuBoot(doc);
  expect(boot.mode).to.equal(isFleet(stack) ? "fleet" : "instance");
  return boot;
}

/** The `KEY=value` lines of an env file, as Docker's --env-file and systemd read them. */
function envFile(content: string): Record<string, string> {
  return Object.fromEntries(
    content
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

describe("the GPU host under Pulumi mocks (both stacks' own plans)", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();

  for (const stack of STACKS) {
    describe(stack, () => {
      const doc = () => stacks[stack]!;

      it("declares the key table: window_key (S), TTL on expires_at, point-in-time recovery and encryption", () => {
        const table = named(doc(), "aws:dynamodb/table:Table", "ingest-gpu-keys");
        expect(table.inputs).to.deep.include({
          hashKey: "window_key",
          attributes: [{ name: "window_key", type: "S" }],
          ttl: { attributeName: "expires_at", enabled: true },
          pointInTimeRecovery: { enabled: true },
          serverSideEncryption: { enabled: true },
          billingMode: "PAY_PER_REQUEST",
        });
        expect(table.protect).to.equal(config(stack).deletionProtection);
      });

      it("builds the gateway's image into its own immutable repository, from the pinned base", () => {
        const repo = named(doc(), "aws:ecr/repository:Repository", "ingest-gpu-gateway-images");
        expect(repo.inputs).to.deep.include({ imageTagMutability: "IMMUTABLE", imageScanningConfiguration: { scanOnPush: true } });
        const image = named(doc(), "awsx:ecr:Image", "ingest-gpu-gateway-image");
        expect(image.inputs).to.deep.include({ dockerfile: "functions/gpu/Dockerfile", context: "dist/gpu-gateway-image", platform: "linux/amd64" });
        expect(image.inputs.args).to.deep.equal({ BASE_IMAGE: config(stack).gpu.gatewayBaseImage });
        expect(String(image.inputs.imageTag)).to.match(/^sha-[0-9a-f]{32}$/);
      });

      it("declares the gateway's and the model's log groups with the stack's retention", () => {
        const env = config(stack).environment;
        for (const which of ["gateway", "model"]) {
          const lg = named(doc(), "aws:cloudwatch/logGroup:LogGroup", `ingest-gpu-${which}-logs`);
          expect(lg.inputs).to.deep.include({ name: `/encache/${env}/gpu-${which}`, retentionInDays: config(stack).logRetentionDays });
        }
      });

      it("boots with #cloud-config: the gateway's env file (0600) read back by the gateway's own codec, and both units enabled", () => {
        // Act
        const { userData } = gpuOf(doc(), stack);
        const cloud = parse(userData) as CloudConfig;
        // Assess
        expect(userData.startsWith("#cloud-config\n")).to.equal(true);
        const file = cloud.write_files.find((f) => f.path === GATEWAY_ENV_FILE);
        expect(file?.permissions).to.equal("0600");
        const vars = envFile(file!.content);
        const gateway = GATEWAY_ENV.parse(vars);
        const gpu = config(stack).gpu;
        expect(vars.AWS_REGION).to.equal("us-east-1");
        expect(gateway).to.deep.include({
          servicePort: gpu.servicePort,
          servicePath: gpu.servicePath,
          statusPath: gpu.statusPath,
          modelUrl: `http://127.0.0.1:${gpu.model.port}`,
          modelPath: gpu.model.path,
          modelHealthPath: gpu.model.healthPath,
          modelConcurrency: gpu.model.concurrency,
          modelTimeoutMs: gpu.model.timeoutMs,
        });
        expect(gateway.keysTable).to.match(/^ingest-gpu-keys-[0-9a-f]{7}$/);
        // Fleet mode only: the group and the hook the gateway completes.
        if (isFleet(stack)) expect(gateway).to.deep.include({ groupName: `encache-gpu-fleet-${config(stack).environment}`, drainHookName: "drain" });
        else expect(gateway.groupName ?? gateway.drainHookName).to.equal(undefined);
        expect(cloud.write_files.map((f) => f.path)).to.include.members([`/etc/systemd/system/${GATEWAY_UNIT}`, `/etc/systemd/system/${MODEL_UNIT}`]);
        expect(cloud.runcmd).to.deep.include(["systemctl", "enable", "--now", "--no-block", MODEL_UNIT, GATEWAY_UNIT]);
      });

      it("grants the instance role the gateway's calls, ECR pull on the two repositories only, and the two log groups", () => {
        // Prepare
        const statements = (gpuOf(doc(), stack).hostPolicy.inputs.policy as { Statement: Statement[] }).Statement;
        const bySid = (sid: string) => statements.find((s) => s.Sid === sid)!;
        const gpu = config(stack).gpu;
        // Assess: the gateway's grants, bound (functions/gpu/iam.ts)
        const grants = isFleet(stack) ? FLEET_GATEWAY_GRANTS : GATEWAY_GRANTS;
        expect(
          statements
            .slice(0, grants.length)
            .flatMap((s) => s.Action)
            .sort(),
        ).to.deep.equal([...calledActions(grants)].sort());
        expect(bySid("GpuKeyClaims").Resource).to.match(/^arn:aws:dynamodb:us-east-1:123456789012:table\/ingest-gpu-keys-/);
        if (isFleet(stack)) {
          expect(bySid("CompleteOwnDrain")).to.deep.include({
            Resource: `arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/encache-gpu-fleet-${config(stack).environment}`,
            Condition: { StringEquals: { "aws:ResourceTag/encache:environment": config(stack).environment } },
          });
        }
        // The image pulls and the log driver: named resources only, the login token on `*` (it has no resource type).
        expect(bySid("EcrLogin")).to.deep.include({ Action: ["ecr:GetAuthorizationToken"], Resource: "*" });
        expect(gpu.model.source).to.equal("image");
        const model = gpu.model as { image: string };
        const pulls = [bySid("EcrPullGpuImages").Resource].flat();
        expect(pulls).to.have.length(2);
        expect(pulls[0]).to.match(/^arn:aws:ecr:us-east-1:123456789012:repository\/ingest-gpu-gateway-images-[0-9a-f]{7}$/);
        expect(pulls[1]).to.equal(modelRepositoryArn(model.image));
        expect(bySid("GpuContainerLogs")).to.deep.include({
          Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
          Resource: ["gateway", "model"].map((w) => `arn:aws:logs:us-east-1:123456789012:log-group:/encache/${config(stack).environment}/gpu-${w}:*`),
        });
        // Session Manager stays, as its own policy.
        const sessionManager = of(doc(), "aws:iam/rolePolicy:RolePolicy").filter((p) => p.name.endsWith("-session-manager") && p.name.startsWith("ingest-gpu"));
        expect(sessionManager).to.have.length(1);
      });

      it("admits the scheduled check's security group to the GPUs' service port (it GETs each instance's status)", () => {
        // Prepare: the check that GETs the status (scaler in fleet mode, idle check otherwise) and the GPUs' group.
        const check = named(doc(), "aws:lambda/function:Function", isFleet(stack) ? "ingest-gpu-scaler" : "ingest-gpu-idle");
        const checkGroups = (check.inputs.vpcConfig as { securityGroupIds: string[] }).securityGroupIds;
        const gpuSg = named(doc(), "aws:ec2/securityGroup:SecurityGroup", "ingest-gpu-sg");
        const port = config(stack).gpu.servicePort;
        // Act
        const admitted = (gpuSg.inputs.ingress as Array<{ fromPort: number; toPort: number; securityGroups?: string[] }>)
          .filter((i) => i.fromPort <= port && port <= i.toPort)
          .flatMap((i) => i.securityGroups ?? []);
        // Assess
        expect(checkGroups.length).to.be.above(0);
        for (const sg of checkGroups) expect(admitted, `${check.name}'s group ${sg}`).to.include(sg);
      });
    });
  }

  describe("prod's fleet: the drain hook and the rollout", () => {
    const doc = () => stacks.prod!;

    it("declares the drain hook as its own resource: the group's inputs hold no hook, so a new drainSeconds changes the hook in place", () => {
      const group = named(doc(), "aws:autoscaling/group:Group", "ingest-gpu-fleet");
      const hook = named(doc(), "aws:autoscaling/lifecycleHook:LifecycleHook", "ingest-gpu-fleet-drain");
      expect(group.inputs).to.not.have.property("initialLifecycleHooks");
      expect(JSON.stringify(group.inputs)).to.not.contain("EC2_INSTANCE_TERMINATING");
      expect(hook.inputs.heartbeatTimeout).to.equal(config("prod").gpu.capacity.fleet!.drainSeconds);
      expect(hook.parent).to.equal(group.parent);
    });

    it("launches the template's explicit latest version, with an instance refresh that rolls back", () => {
      const group = named(doc(), "aws:autoscaling/group:Group", "ingest-gpu-fleet");
      const spec = (group.inputs.mixedInstancesPolicy as { launchTemplate: { launchTemplateSpecification: { version: string } } }).launchTemplate
        .launchTemplateSpecification;
      expect(spec.version).to.equal("1");
      expect(JSON.stringify(group.inputs)).to.not.contain("$Latest");
      expect(group.inputs.instanceRefresh).to.deep.equal({
        strategy: "Rolling",
        preferences: { autoRollback: true, minHealthyPercentage: 100, maxHealthyPercentage: 200, scaleInProtectedInstances: "Wait", skipMatching: true },
      });
      const lt = named(doc(), "aws:ec2/launchTemplate:LaunchTemplate", "ingest-gpu-fleet-lt");
      expect(String(lt.inputs.imageId)).to.match(/^ami-/);
    });
  });
});
