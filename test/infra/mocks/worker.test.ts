import { expect } from "chai";
import { parse } from "yaml";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../../../infra/bundle";
import { imageContentTag } from "../../../infra/parts/worker.image";
import type { PlanDocument } from "../../../plan/render";
import { WORKER_IAM_ACTIONS } from "../../../functions/worker/iam";
import { useStackPlans } from "../helpers/run-plan";
import { named, ofType as of, type PlanResource as Res } from "../helpers/plan-queries";

type Doc = { Statement: Array<{ Effect: string; Action: string | string[]; Resource: unknown }> };
type Container = Record<string, unknown> & { environment: Array<{ name: string; value: string }> };

function roleActions(doc: PlanDocument, role: Res): string[] {
  const docs = of(doc, "aws:iam/rolePolicy:RolePolicy")
    .filter((rp) => rp.dependencies.includes(role.urn))
    .map((rp) => rp.inputs.policy as Doc);
  const attached = of(doc, "aws:iam/rolePolicyAttachment:RolePolicyAttachment").filter((a) => a.dependencies.includes(role.urn));
  expect(attached, "no managed policies on worker roles").to.deep.equal([]);
  return [...new Set(docs.flatMap((d) => d.Statement.filter((s) => s.Effect === "Allow").flatMap((s) => [s.Action].flat())))].sort();
}
function stackWorkerConfig(stack: string): Record<string, number> {
  const file = parse(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as { config: Record<string, Record<string, number>> };
  return file.config["encache:worker"]!;
}

describe("the worker part under Pulumi mocks (offline plan, both stacks)", function () {
  this.timeout(180_000);

  const stacks = useStackPlans();

  for (const stack of ["dev", "prod"]) {
    describe(`stack ${stack}`, () => {
      const doc = () => stacks[stack]!;
      const cfg = () => stackWorkerConfig(stack);
      const taskDefinition = () => named(doc(), "aws:ecs/taskDefinition:TaskDefinition", "worker");
      const container = () => (JSON.parse(String(taskDefinition().inputs.containerDefinitions)) as Container[])[0]!;
      const env = () => Object.fromEntries(container().environment.map((e) => [e.name, e.value]));

      it("has no mandatory violation, and none from the worker's rules", () => {
        expect(doc().summary.mandatory, JSON.stringify(doc().violations)).to.equal(0);
        expect(doc().violations.filter((v) => v.policy.startsWith("ecs-task-"))).to.deep.equal([]);
      });

      it("runs the service on FARGATE_SPOT (plus the configured FARGATE base), no launch type, no public IP, in the platform cluster", () => {
        const service = named(doc(), "aws:ecs/service:Service", "worker");
        const strategies = service.inputs.capacityProviderStrategies as Array<{ capacityProvider: string; base: number; weight: number }>;
        expect(strategies[0]).to.deep.equal({ capacityProvider: "FARGATE_SPOT", base: 0, weight: 1 });
        const base = cfg().fargateBase ?? 0;
        expect(strategies.slice(1)).to.deep.equal(base > 0 ? [{ capacityProvider: "FARGATE", base, weight: 0 }] : []);
        expect(service.inputs).to.not.have.property("launchType");
        expect(service.inputs.networkConfiguration).to.deep.include({ assignPublicIp: false });
        const clusters = of(doc(), "aws:ecs/cluster:Cluster");
        expect(clusters).to.have.length(1);
        expect(service.dependencies).to.include(clusters[0]!.urn);
        expect(service.dependencies).to.include(named(doc(), "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders", "platform-cluster-capacity").urn);
        expect(service.dependencies).to.include(taskDefinition().urn);
      });

      it("scales by target tracking on visible messages ÷ RunningTaskCount, with min, max and target from config", () => {
        const target = named(doc(), "aws:appautoscaling/target:Target", "worker-scaling");
        expect(target.inputs).to.deep.include({
          serviceNamespace: "ecs",
          scalableDimension: "ecs:service:DesiredCount",
          minCapacity: cfg().minTasks,
          maxCapacity: cfg().maxTasks,
        });
        const policy = named(doc(), "aws:appautoscaling/policy:Policy", "worker-backlog-per-task");
        expect(policy.inputs.policyType).to.equal("TargetTrackingScaling");
        const tt = policy.inputs.targetTrackingScalingPolicyConfiguration as {
          targetValue: number;
          customizedMetricSpecification: { metrics: Array<Record<string, unknown>> };
        };
        expect(tt.targetValue).to.equal(cfg().backlogPerTaskTarget);
        const metrics = tt.customizedMetricSpecification.metrics;
        expect(metrics.map((m) => m.id)).to.deep.equal(["visible", "running", "backlog_per_task"]);
        expect(JSON.stringify(metrics[1])).to.contain('"namespace":"ECS/ContainerInsights"').and.contain('"metricName":"RunningTaskCount"');
        expect(metrics[2]).to.deep.include({ expression: "visible / running", returnData: true });
        const queueUrn = named(doc(), "aws:sqs/queue:Queue", "worker").urn;
        expect(policy.dependencies).to.include(queueUrn);
      });

      it("gives the task role exactly the worker's calls (protection, the work queue, quarantine to its DLQ), and the execution role only pull + logs", () => {
        const taskRole = named(doc(), "aws:iam/role:Role", "worker-task");
        expect(roleActions(doc(), taskRole)).to.deep.equal([...WORKER_IAM_ACTIONS].sort());
        expect(taskDefinition().dependencies).to.include(taskRole.urn);
        const protection = (of(doc(), "aws:iam/rolePolicy:RolePolicy").find((rp) => rp.name === "worker-task-policy")!.inputs.policy as Doc).Statement.find(
          (s) => [s.Action].flat().includes("ecs:UpdateTaskProtection"),
        );
        expect(String(protection?.Resource)).to.match(/^arn:aws:ecs:us-east-1:123456789012:task\/platform-cluster-[0-9a-f]+\/\*$/);
        expect(roleActions(doc(), named(doc(), "aws:iam/role:Role", "worker-execution"))).to.deep.equal(
          [
            "ecr:BatchCheckLayerAvailability",
            "ecr:BatchGetImage",
            "ecr:GetAuthorizationToken",
            "ecr:GetDownloadUrlForLayer",
            "logs:CreateLogStream",
            "logs:PutLogEvents",
          ].sort(),
        );
      });

      it("hardens the task definition: Fargate, stopTimeout 120, non-root, read-only root with /scratch, logs, container memory, the marker", () => {
        const td = taskDefinition();
        expect(td.inputs).to.deep.include({
          requiresCompatibilities: ["FARGATE"],
          networkMode: "awsvpc",
          cpu: String(cfg().cpu),
          memory: String(cfg().memoryMb),
        });
        expect(td.inputs.volumes).to.deep.equal([{ name: "scratch" }]);
        expect((td.inputs.tags as Record<string, string>)["encache:task-protection"]).to.equal("agent-endpoint");
        const c = container();
        expect(c).to.deep.include({ user: "1000:1000", privileged: false, readonlyRootFilesystem: true, memory: cfg().memoryMb, stopTimeout: 120 });
        expect(c.mountPoints).to.deep.equal([{ sourceVolume: "scratch", containerPath: "/scratch", readOnly: false }]);
        // The shape AWS stores: an absent `add` comes back as [], and the provider would then see a
        // difference and register a new revision on every `pulumi up`.
        expect(c.linuxParameters).to.deep.equal({ initProcessEnabled: true, capabilities: { add: [], drop: ["ALL"] } });
        expect((c.logConfiguration as { logDriver: string }).logDriver).to.equal("awslogs");
        expect(env()).to.include({ ENCACHE_TASK_PROTECTION: "agent-endpoint", WORKER_SCRATCH_DIR: "/scratch", WORKER_CONCURRENCY: String(cfg().concurrency) });
        expect(JSON.parse(env().WORKER_EXECUTABLES!)).to.deep.equal(cfg().executables);
      });

      it("runs the image built from the worker's Dockerfile and pushed to its own ECR repository, pinned by digest", () => {
        const image = named(doc(), "awsx:ecr:Image", "worker-image");
        expect(image.inputs).to.deep.include({ context: "dist/worker-image", dockerfile: "functions/worker/Dockerfile", platform: "linux/amd64" });
        const repo = named(doc(), "aws:ecr/repository:Repository", "worker-images");
        expect(repo.inputs).to.deep.include({ imageTagMutability: "IMMUTABLE" });
        expect(String(container().image)).to.match(/^123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com\/worker-images-[0-9a-f]+@sha256:[0-9a-f]{64}$/);
        expect(fs.existsSync(path.join(REPO_ROOT, "dist/worker-image/worker.js"))).to.equal(true);
      });

      it("builds FROM the stack's digest-pinned base image, under a tag that hashes it with the context, the Dockerfile and the platform", () => {
        const image = named(doc(), "awsx:ecr:Image", "worker-image");
        const baseImage = (cfg() as unknown as { baseImage: string }).baseImage;
        expect(image.inputs.args).to.deep.equal({ BASE_IMAGE: baseImage });
        const context = Object.fromEntries(
          [".dockerignore", "worker.js"].map((f) => [f, fs.readFileSync(path.join(REPO_ROOT, "dist/worker-image", f), "utf8")]),
        );
        const dockerfile = fs.readFileSync(path.join(REPO_ROOT, "functions/worker/Dockerfile"), "utf8");
        expect(image.inputs.imageTag).to.equal(imageContentTag({ context, dockerfile, platform: "linux/amd64", buildArgs: { BASE_IMAGE: baseImage } }));
        expect(image.inputs.imageTag).to.not.equal(
          imageContentTag({
            context,
            dockerfile,
            platform: "linux/amd64",
            buildArgs: { BASE_IMAGE: baseImage.replace(/@sha256:.*/, `@sha256:${"0".repeat(64)}`) },
          }),
        );
      });

      it("wires the work queue (visibility = 3 heartbeats, redrive to its 14-day DLQ) into the container", () => {
        const queue = named(doc(), "aws:sqs/queue:Queue", "worker");
        const dlq = named(doc(), "aws:sqs/queue:Queue", "worker-dlq");
        expect(queue.inputs.visibilityTimeoutSeconds).to.equal(3 * cfg().heartbeatSeconds);
        expect(JSON.parse(String(queue.inputs.redrivePolicy))).to.deep.include({ maxReceiveCount: 3 });
        expect(dlq.inputs.messageRetentionSeconds).to.equal(1_209_600);
        expect(env().WORK_QUEUE_URL).to.match(/\/worker-[0-9a-f]+$/);
        expect(env().QUARANTINE_QUEUE_URL).to.match(/\/worker-dlq-[0-9a-f]+$/);
      });
    });
  }

  it("differs between dev and prod where real stacks do", () => {
    const pick = (stack: string) => {
      const d = stacks[stack]!;
      const target = named(d, "aws:appautoscaling/target:Target", "worker-scaling").inputs;
      const service = named(d, "aws:ecs/service:Service", "worker").inputs;
      return {
        max: target.maxCapacity,
        strategies: (service.capacityProviderStrategies as unknown[]).length,
        cpu: named(d, "aws:ecs/taskDefinition:TaskDefinition", "worker").inputs.cpu,
      };
    };
    expect(pick("dev")).to.deep.equal({ max: 3, strategies: 1, cpu: "512" });
    expect(pick("prod")).to.deep.equal({ max: 20, strategies: 2, cpu: "2048" });
  });
});
