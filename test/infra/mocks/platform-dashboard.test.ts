import { expect } from "chai";
import type { DashboardBody, MetricOptions, MetricRow } from "../../../infra/components/platform-dashboard";
import type { PlanDocument } from "../../../plan/render";
import { named, ofType as of } from "../helpers/plan-queries";
import { STACKS, useStackPlans } from "../helpers/run-plan";
import { gpuMode } from "../helpers/stack-config";

interface Metric {
  namespace: string;
  name: string;
  dimensions: Record<string, string>;
  options: MetricOptions;
}

function metricsOf(body: DashboardBody): Metric[] {
  const out: Metric[] = [];
  for (const w of body.widgets) {
    if (w.type !== "metric") continue;
    for (const row of w.properties.metrics as MetricRow[]) {
      const strings = row.filter((p): p is string => typeof p === "string");
      if (strings.length === 0) continue;
      const last = row[row.length - 1];
      const [namespace, name, ...dims] = strings;
      const dimensions: Record<string, string> = {};
      for (let i = 0; i < dims.length; i += 2) dimensions[dims[i]!] = dims[i + 1]!;
      out.push({ namespace: namespace!, name: name!, dimensions, options: typeof last === "object" ? last : {} });
    }
  }
  return out;
}

const lastSegment = (arn: string | undefined, sep: string) => String(arn).split(sep).pop()!;

/** Every Lambda's and the worker container's Powertools service and namespace, by where they are set. */
function telemetry(doc: PlanDocument): Array<{ where: string; service: string; namespace: string; environment?: string }> {
  const functions = of(doc, "aws:lambda/function:Function").map((f) => {
    const env = (f.inputs.environment as { variables: Record<string, string> }).variables;
    return { where: `function ${f.name}`, service: env.POWERTOOLS_SERVICE_NAME!, namespace: env.POWERTOOLS_METRICS_NAMESPACE!, environment: env.ENVIRONMENT };
  });
  const containers = (
    JSON.parse(String(named(doc, "aws:ecs/taskDefinition:TaskDefinition", "worker").inputs.containerDefinitions)) as Array<{
      environment: Array<{ name: string; value: string }>;
    }>
  ).map((c) => Object.fromEntries(c.environment.map((e) => [e.name, e.value])));
  return [
    ...functions,
    ...containers.map((env) => ({ where: "worker container", service: env.POWERTOOLS_SERVICE_NAME!, namespace: env.POWERTOOLS_METRICS_NAMESPACE! })),
  ];
}

/** The stack's dashboard (issue 15) in both committed plans: per-stack names, and every name in its body the stack's own. */
describe("the platform dashboard under Pulumi mocks (offline plan, both stacks)", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();

  for (const stack of STACKS) {
    describe(`stack ${stack}`, () => {
      const doc = () => stacks[stack]!;
      const dashboard = () => named(doc(), "aws:cloudwatch/dashboard:Dashboard", "platform-dashboard");
      const body = () => JSON.parse(String(dashboard().inputs.dashboardBody)) as DashboardBody;

      it(`declares one dashboard, encache-${stack}, inside a PlatformDashboard component at the root`, () => {
        const [component, ...others] = of(doc(), "encache:observability:PlatformDashboard");
        expect(others).to.deep.equal([]);
        expect(component?.parent).to.equal(null);
        expect(of(doc(), "aws:cloudwatch/dashboard:Dashboard")).to.have.length(1);
        expect(dashboard().parent).to.equal(component!.urn);
        expect(dashboard().inputs.dashboardName).to.equal(`encache-${stack}`);
        expect(body().widgets.length).to.be.within(10, 500);
        expect(doc().violations.filter((v) => v.urn === dashboard().urn)).to.deep.equal([]);
      });

      it("shows every queue the stack declares, and names no other", () => {
        const declared = of(doc(), "aws:sqs/queue:Queue").map((q) => lastSegment(q.arn, ":"));
        const shown = new Set(metricsOf(body()).flatMap((m) => (m.namespace === "AWS/SQS" ? [m.dimensions.QueueName!] : [])));
        expect([...shown].sort()).to.deep.equal([...new Set(declared)].sort());
      });

      it("reads each EMF metric under the namespace and service a function or the worker container of this stack publishes with", () => {
        const publishers = telemetry(doc());
        const emf = metricsOf(body()).filter((m) => m.namespace.startsWith("Encache/"));
        expect(emf.length).to.be.greaterThan(10);
        for (const m of emf) {
          if (m.dimensions.service !== undefined) {
            const match = publishers.filter((p) => p.service === m.dimensions.service && p.namespace === m.namespace);
            expect(match, `${m.namespace} ${m.name} service=${m.dimensions.service}`).to.have.length(1);
          } else {
            // The launcher publishes by Environment alone.
            const launcher = publishers.find((p) => p.where === "function retraining-launcher");
            expect([m.namespace, m.dimensions]).to.deep.equal([launcher!.namespace, { Environment: launcher!.environment }]);
          }
        }
      });

      if (gpuMode(stack) === "instance") {
        it("reads the single GPU by its instance id", () => {
          const gpuId = lastSegment(named(doc(), "aws:ec2/instance:Instance", "ingest-gpu").arn, "/");
          expect(metricsOf(body()).find((m) => m.namespace === "AWS/EC2")?.dimensions).to.deep.equal({ InstanceId: gpuId });
          expect(metricsOf(body()).filter((m) => m.namespace === "AWS/AutoScaling")).to.deep.equal([]);
        });
      } else {
        it("shows the fleet over time: instances in service and desired capacity as the group publishes them, and the backlog", () => {
          // Prepare
          const group = named(doc(), "aws:autoscaling/group:Group", "ingest-gpu-fleet");
          const scaler = named(doc(), "aws:lambda/function:Function", "ingest-gpu-scaler");
          const scalerService = (scaler.inputs.environment as { variables: Record<string, string> }).variables.POWERTOOLS_SERVICE_NAME;
          const metrics = metricsOf(body());
          const shownFor = (name: string) => metrics.filter((m) => m.namespace === "AWS/AutoScaling" && m.name === name);
          // Assess: each group metric on the dashboard is one the group publishes, by its name, every minute.
          for (const name of ["GroupInServiceInstances", "GroupDesiredCapacity"]) {
            expect(
              shownFor(name).map((m) => m.dimensions),
              name,
            ).to.deep.equal([{ AutoScalingGroupName: group.inputs.name }]);
          }
          const enabled = group.inputs.enabledMetrics as string[];
          for (const m of metrics.filter((x) => x.namespace === "AWS/AutoScaling")) expect(enabled, m.name).to.include(m.name);
          expect(group.inputs.metricsGranularity).to.equal("1Minute");
          // The backlog the scaler sizes the group from (the ingest queue and its DLQ), under its own service.
          expect(metrics.filter((m) => m.name === "GpuFleetBacklog").map((m) => [m.namespace, m.dimensions])).to.deep.equal([
            ["Encache/Ingest", { service: scalerService }],
          ]);
          // No single instance to read.
          expect(metrics.filter((m) => m.namespace === "AWS/EC2")).to.deep.equal([]);
        });
      }

      it("reads the worker as its scaling policy does, and the pool's counts from refill's log group", () => {
        const metrics = metricsOf(body());

        const policy = named(doc(), "aws:appautoscaling/policy:Policy", "worker-backlog-per-task");
        type Query = { id: string; metricStat?: { metric: { namespace: string; metricName: string; dimensions: Array<{ name: string; value: string }> } } };
        const queries = (
          policy.inputs.targetTrackingScalingPolicyConfiguration as { customizedMetricSpecification: { metrics: Query[] } }
        ).customizedMetricSpecification.metrics.filter((q) => q.metricStat);
        for (const q of queries) {
          const shown = metrics.find((m) => m.options.id === q.id);
          const { namespace, metricName, dimensions } = q.metricStat!.metric;
          expect(shown, q.id).to.deep.include({ namespace, name: metricName, dimensions: Object.fromEntries(dimensions.map((d) => [d.name, d.value])) });
        }

        const refillLogs = lastSegment(named(doc(), "aws:cloudwatch/logGroup:LogGroup", "pool-refill-logs").arn, ":");
        const log = body().widgets.find((w) => w.type === "log");
        expect(log?.type === "log" && log.properties.query.startsWith(`SOURCE '${refillLogs}' |`)).to.equal(true);
      });

      it("gives every function and the worker container a Powertools service name of this environment", () => {
        for (const p of telemetry(doc())) expect(p.service, p.where).to.match(new RegExp(`-${stack}$`));
      });
    });
  }

  it("gives dev and prod different dashboards and different service dimensions", () => {
    const names = ["dev", "prod"].map((s) => named(stacks[s]!, "aws:cloudwatch/dashboard:Dashboard", "platform-dashboard").inputs.dashboardName);
    expect(names).to.deep.equal(["encache-dev", "encache-prod"]);
    const services = (s: string) => new Set(telemetry(stacks[s]!).map((p) => p.service));
    const dev = services("dev");
    expect([...services("prod")].filter((x) => dev.has(x))).to.deep.equal([]);
  });
});
