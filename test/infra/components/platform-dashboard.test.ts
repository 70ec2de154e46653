import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../../infra/bundle";
import {
  DASHBOARD_LIMITS,
  type DashboardBody,
  dashboardBody,
  dashboardLimitProblems,
  dashboardNameProblem,
  type DashboardSpec,
  type DashboardWidget,
  defaultDashboardName,
  type MetricOptions,
  type MetricRow,
  type MetricWidget,
} from "../../../infra/components/platform-dashboard";
import { backlogPerTaskMetrics } from "../../../infra/components/queue-worker-service";

function spec(overrides: Partial<DashboardSpec> = {}): DashboardSpec {
  return {
    region: "eu-west-1",
    environment: "dev",
    queues: [
      { label: "ingest", name: "ingest-1111111" },
      { label: "worker", name: "worker-2222222" },
    ],
    deadLetterQueues: [
      { label: "ingest-dlq", name: "ingest-dlq-3333333" },
      { label: "ingest-quarantine", name: "ingest-quarantine-4444444" },
    ],
    ingest: {
      gpuInstanceId: "i-0123456789abcdef0",
      windowService: "ingest-window-dev",
      dlqService: "ingest-dlq-consumer-dev",
      gpuIdleService: "ingest-gpu-idle-dev",
    },
    worker: {
      queueName: "worker-2222222",
      clusterName: "platform-cluster-5555555",
      serviceName: "worker-6666666",
      metricsService: "worker-dev",
      backlogPerTaskTarget: 10,
    },
    pool: {
      classes: [
        { name: "cpu-small", queueName: "pool-cpu-small-7777777", size: 2 },
        { name: "gpu-small", queueName: "pool-gpu-small-8888888", size: 1 },
      ],
      refillService: "pool-refill-dev",
      refillLogGroup: "pool-refill-logs-9999999",
    },
    ...overrides,
  };
}

/** A metric row read back: namespace, name, dimensions, options; undefined for an expression. */
interface ReadMetric {
  namespace: string;
  name: string;
  dimensions: Record<string, string>;
  options: MetricOptions;
}

function readRow(row: MetricRow): ReadMetric | undefined {
  const last = row[row.length - 1];
  const options = typeof last === "object" ? last : {};
  const parts = row.filter((p): p is string => typeof p === "string");
  if (parts.length === 0) return undefined;
  const [namespace, name, ...dims] = parts;
  expect(dims.length % 2, `dimension pairs of ${JSON.stringify(row)}`).to.equal(0);
  const dimensions: Record<string, string> = {};
  for (let i = 0; i < dims.length; i += 2) dimensions[dims[i]!] = dims[i + 1]!;
  return { namespace: namespace!, name: name!, dimensions, options };
}

const metricWidgets = (body: DashboardBody) => body.widgets.filter((w): w is MetricWidget => w.type === "metric");
const widget = (body: DashboardBody, title: string): DashboardWidget => {
  const w = body.widgets.find((x) => x.properties.title === title);
  if (!w) throw new Error(`no widget "${title}" (have: ${body.widgets.map((x) => x.properties.title).join(", ")})`);
  return w;
};
const metricsOf = (body: DashboardBody, title: string): ReadMetric[] => {
  const w = widget(body, title);
  if (w.type !== "metric") throw new Error(`"${title}" is not a metric widget`);
  return w.properties.metrics.flatMap((r) => readRow(r) ?? []);
};
const allMetrics = (body: DashboardBody) => metricWidgets(body).flatMap((w) => w.properties.metrics.flatMap((r) => readRow(r) ?? []));

/** Every string literal in the functions' code: an EMF metric the dashboard reads must be one of them. */
function functionStringLiterals(): Set<string> {
  const literals = new Set<string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts")) for (const m of fs.readFileSync(p, "utf8").matchAll(/"([A-Za-z]+)"/g)) literals.add(m[1]!);
    }
  };
  walk(path.join(REPO_ROOT, "functions"));
  return literals;
}

describe("PlatformDashboard body (pure, no mocks)", () => {
  const body = dashboardBody(spec());

  it("has the views of issue 15: queues, DLQs, the GPU's state and CPU, deliveries, parks, starts and stops, retraining, worker backlog, pool sizes", () => {
    expect(body.widgets.map((w) => w.properties.title)).to.include.members([
      "Queue depth (visible)",
      "Messages in flight",
      "DLQ and quarantine depth",
      "GPU running (1) or stopped (0)",
      "GPU CPU (%)",
      "Windows delivered to the GPU",
      "DLQ parks and quarantines",
      "GPU starts and stops",
      "Retraining tasks",
      "Worker backlog per task",
      "Pool size per class (refill's latest count)",
      "Pool adverts waiting per class",
    ]);
  });

  it("gives every widget the stack's region, and every metric widget a period and a statistic", () => {
    for (const w of body.widgets) {
      expect(w.properties.region, w.properties.title).to.equal("eu-west-1");
      if (w.type === "metric") {
        expect(w.properties.period, w.properties.title).to.be.oneOf([60, 300]);
        expect(w.properties.stat, w.properties.title).to.be.a("string");
        expect(w.properties.metrics.length, w.properties.title).to.be.greaterThan(0);
      }
    }
  });

  it("reads every queue's depth, in-flight count and age by QueueName, and every DLQ's depth", () => {
    for (const [title, metricName] of [
      ["Queue depth (visible)", "ApproximateNumberOfMessagesVisible"],
      ["Messages in flight", "ApproximateNumberOfMessagesNotVisible"],
      ["Oldest message (seconds)", "ApproximateAgeOfOldestMessage"],
    ] as const) {
      expect(metricsOf(body, title)).to.deep.equal(
        spec().queues.map((q) => ({ namespace: "AWS/SQS", name: metricName, dimensions: { QueueName: q.name }, options: { label: q.label } })),
      );
    }
    expect(metricsOf(body, "DLQ and quarantine depth").map((m) => [m.namespace, m.name, m.dimensions.QueueName])).to.deep.equal(
      spec().deadLetterQueues.map((q) => ["AWS/SQS", "ApproximateNumberOfMessagesVisible", q.name]),
    );
  });

  it("reads the GPU's CPU from AWS/EC2 by InstanceId, and its run state from the idle checker's EMF gauge", () => {
    expect(metricsOf(body, "GPU CPU (%)")).to.deep.equal([
      { namespace: "AWS/EC2", name: "CPUUtilization", dimensions: { InstanceId: "i-0123456789abcdef0" }, options: { label: "CPUUtilization" } },
    ]);
    const state = widget(body, "GPU running (1) or stopped (0)") as MetricWidget;
    expect(state.properties.stat).to.equal("Maximum");
    expect(metricsOf(body, "GPU running (1) or stopped (0)").map((m) => [m.namespace, m.name, m.dimensions])).to.deep.equal([
      ["Encache/Ingest", "GpuRunning", { service: "ingest-gpu-idle-dev" }],
    ]);
  });

  it("keys each ingest EMF metric on the service of the function that emits it", () => {
    const emitter: Record<string, string> = {
      WindowsProcessed: "ingest-window-dev",
      WindowsFailed: "ingest-window-dev",
      DlqMessagesParked: "ingest-dlq-consumer-dev",
      GpuAutostartAttempted: "ingest-dlq-consumer-dev",
      GpuStartInsufficientCapacity: "ingest-dlq-consumer-dev",
      GpuRunning: "ingest-gpu-idle-dev",
      GpuStopped: "ingest-gpu-idle-dev",
      GpuIdleMinutes: "ingest-gpu-idle-dev",
    };
    const ingest = allMetrics(body).filter((m) => m.namespace === "Encache/Ingest");
    for (const [name, service] of Object.entries(emitter)) {
      const found = ingest.filter((m) => m.name === name);
      expect(found.length, name).to.be.greaterThan(0);
      for (const m of found) expect(m.dimensions, name).to.deep.equal({ service });
    }
    // MessagesQuarantined comes from both consumers, one line each.
    expect(ingest.filter((m) => m.name === "MessagesQuarantined").map((m) => m.dimensions.service)).to.have.members([
      "ingest-dlq-consumer-dev",
      "ingest-window-dev",
    ]);
  });

  it("reads the retraining metrics by Environment alone (the launcher clears the service dimension)", () => {
    const retraining = metricsOf(body, "Retraining tasks");
    expect(retraining.map((m) => m.name)).to.include("ECSTasksLaunched");
    for (const m of retraining) expect([m.namespace, m.dimensions]).to.deep.equal(["Encache/RetrainingPipeline", { Environment: "dev" }]);
  });

  it("computes the worker's backlog per task exactly as its scaling policy does, with the target drawn", () => {
    const w = widget(body, "Worker backlog per task") as MetricWidget;
    const policy = backlogPerTaskMetrics({ queueName: "worker-2222222", clusterName: "platform-cluster-5555555", serviceName: "worker-6666666" });
    const rows = w.properties.metrics;
    for (const query of policy) {
      if ("expression" in query) {
        const expression = rows.map((r) => r[0]).find((r): r is MetricOptions => typeof r === "object" && r.id === query.id);
        expect(expression).to.deep.include({ expression: query.expression, label: query.label });
        continue;
      }
      const m = rows.map(readRow).find((r) => r?.options.id === query.id);
      const { metric, stat } = query.metricStat;
      expect(m, query.id).to.deep.equal({
        namespace: metric.namespace,
        name: metric.metricName,
        dimensions: Object.fromEntries(metric.dimensions.map((d) => [d.name, d.value])),
        options: { id: query.id, stat, visible: false },
      });
    }
    expect(w.properties.annotations?.horizontal).to.deep.equal([{ label: "Scaling target", value: 10 }]);
  });

  it("keys the worker's and the pool's EMF metrics on their services, in their namespaces", () => {
    const emf = allMetrics(body).filter((m) => m.namespace.startsWith("Encache/"));
    for (const m of emf.filter((x) => x.namespace === "Encache/Worker")) expect(m.dimensions).to.deep.equal({ service: "worker-dev" });
    for (const m of emf.filter((x) => x.namespace === "Encache/Pool")) expect(m.dimensions).to.deep.equal({ service: "pool-refill-dev" });
    expect(emf.filter((m) => m.namespace === "Encache/Worker").map((m) => m.name)).to.include.members([
      "JobsSucceeded",
      "JobsFailed",
      "TaskProtectionFailures",
    ]);
    expect(emf.filter((m) => m.namespace === "Encache/Pool").map((m) => m.name)).to.include.members(["PoolInstancesLaunched", "PoolInstancesStarted"]);
  });

  it("reads only EMF metrics some function emits (each name is a literal in functions/)", () => {
    const literals = functionStringLiterals();
    const names = new Set(
      allMetrics(body)
        .filter((m) => m.namespace.startsWith("Encache/"))
        .map((m) => m.name),
    );
    expect([...names].filter((n) => !literals.has(n))).to.deep.equal([]);
  });

  it("shows the pool's sizes: refill's latest count per class from its log group, and the adverts against each class's size", () => {
    const log = widget(body, "Pool size per class (refill's latest count)");
    if (log.type !== "log") throw new Error("the pool sizes are not a log widget");
    const query = log.properties.query;
    expect(log.properties.view).to.equal("table");
    expect(query.startsWith("SOURCE 'pool-refill-logs-9999999' | ")).to.equal(true);
    expect(query).to.include(`filter step = "pool_counted"`).and.include("by resource_class");
    expect(metricsOf(body, "Pool adverts waiting per class").map((m) => m.dimensions.QueueName)).to.deep.equal([
      "pool-cpu-small-7777777",
      "pool-gpu-small-8888888",
    ]);
    expect((widget(body, "Pool adverts waiting per class") as MetricWidget).properties.annotations?.horizontal).to.deep.equal([
      { label: "cpu-small size", value: 2 },
      { label: "gpu-small size", value: 1 },
    ]);
  });

  it("lays the widgets on the 24-column grid without overlaps", () => {
    const cells = new Set<string>();
    for (const w of body.widgets) {
      expect(w.x + w.width, w.properties.title).to.be.at.most(24);
      for (let x = w.x; x < w.x + w.width; x += 1) {
        for (let y = w.y; y < w.y + w.height; y += 1) {
          const cell = `${x},${y}`;
          expect(cells.has(cell), `${w.properties.title} overlaps at ${cell}`).to.equal(false);
          cells.add(cell);
        }
      }
    }
  });

  it("leaves no dimension value empty", () => {
    for (const m of allMetrics(body)) for (const [k, v] of Object.entries(m.dimensions)) expect(v, `${m.name} ${k}`).to.be.a("string").and.not.equal("");
  });

  it("without an idle checker leaves the run-state views out instead of reading a service nobody publishes", () => {
    const s = spec();
    const without = dashboardBody({ ...s, ingest: { ...s.ingest, gpuIdleService: undefined } });
    const titles = without.widgets.map((w) => w.properties.title);
    expect(titles).to.not.include("GPU running (1) or stopped (0)");
    expect(titles).to.include.members(["GPU CPU (%)", "GPU starts"]);
    expect(JSON.stringify(without)).to.not.include("ingest-gpu-idle");
  });

  it("in fleet mode shows instances in service and desired capacity from the group's own metrics, the scaler's backlog, and no single GPU", () => {
    // Prepare
    const s = spec();
    const fleet = dashboardBody({
      ...s,
      ingest: {
        windowService: s.ingest.windowService,
        dlqService: s.ingest.dlqService,
        gpuFleet: { groupName: "encache-gpu-fleet-dev", scalerService: "ingest-gpu-scaler-dev" },
      },
    });
    // Assess: the group's metrics by its name, every minute (the group publishes at 1Minute granularity).
    const capacity = widget(fleet, "GPU fleet: in service and desired") as MetricWidget;
    expect(capacity.properties.period).to.equal(60);
    expect(metricsOf(fleet, "GPU fleet: in service and desired").map((m) => [m.namespace, m.name, m.dimensions])).to.deep.include.members([
      ["AWS/AutoScaling", "GroupInServiceInstances", { AutoScalingGroupName: "encache-gpu-fleet-dev" }],
      ["AWS/AutoScaling", "GroupDesiredCapacity", { AutoScalingGroupName: "encache-gpu-fleet-dev" }],
    ]);
    expect(metricsOf(fleet, "GPU fleet backlog (windows)").map((m) => [m.namespace, m.name, m.dimensions])).to.deep.equal([
      ["Encache/Ingest", "GpuFleetBacklog", { service: "ingest-gpu-scaler-dev" }],
    ]);
    // The queues' depth stays on the queues row, the ingest queue's among them.
    expect(allMetrics(fleet).some((m) => m.namespace === "AWS/SQS" && m.dimensions.QueueName === "ingest-1111111")).to.equal(true);
    const titles = fleet.widgets.map((w) => w.properties.title);
    for (const title of ["GPU CPU (%)", "GPU running (1) or stopped (0)"]) expect(titles).to.not.include(title);
    expect(allMetrics(fleet).filter((m) => m.namespace === "AWS/EC2")).to.deep.equal([]);
    expect(dashboardLimitProblems(fleet)).to.deep.equal([]);
  });

  it("stays within PutDashboard's limits: 500 widgets, 500 metrics a widget, 2,500 a dashboard, 1 MB", () => {
    expect(dashboardLimitProblems(body)).to.deep.equal([]);
    expect(body.widgets.length).to.be.at.most(DASHBOARD_LIMITS.widgets);
    expect(Buffer.byteLength(JSON.stringify(body))).to.be.below(DASHBOARD_LIMITS.bodyBytes);
    // A much larger platform (names at SQS's 80 characters, 40 queues, 20 pool classes) still fits.
    const long = (i: number) => `q${i}-`.padEnd(80, "x");
    const big = dashboardBody(
      spec({
        queues: Array.from({ length: 40 }, (_, i) => ({ label: `queue-${i}`, name: long(i) })),
        deadLetterQueues: Array.from({ length: 60 }, (_, i) => ({ label: `dlq-${i}`, name: long(100 + i) })),
        pool: { ...spec().pool, classes: Array.from({ length: 20 }, (_, i) => ({ name: `class-${i}`, queueName: long(200 + i), size: 3 })) },
      }),
    );
    expect(dashboardLimitProblems(big)).to.deep.equal([]);
  });

  it("reports each limit a body breaks", () => {
    const queues = Array.from({ length: 701 }, (_, i) => ({ label: `q${i}`, name: `q${i}`.padEnd(80, "x") }));
    const problems = dashboardLimitProblems(dashboardBody(spec({ queues, deadLetterQueues: queues })));
    expect(problems.join("\n"))
      .to.match(/widget "Queue depth \(visible\)" has 701 metrics, above 500/)
      .and.match(/metrics, above 2500/);
    const many: DashboardBody = { start: "-PT6H", widgets: Array.from({ length: 501 }, () => body.widgets[0]!) };
    expect(dashboardLimitProblems(many).join("\n")).to.match(/501 widgets, above 500/);
    const huge: DashboardBody = {
      start: "-PT6H",
      widgets: [{ ...(body.widgets[0] as MetricWidget), properties: { ...(body.widgets[0] as MetricWidget).properties, title: "x".repeat(1_000_001) } }],
    };
    expect(dashboardLimitProblems(huge).join("\n")).to.match(/bytes, above 1000000/);
  });

  it("names the dashboard per stack, as PutDashboard allows", () => {
    expect(defaultDashboardName("dev")).to.equal("encache-dev");
    expect(defaultDashboardName("prod")).to.equal("encache-prod");
    expect(dashboardNameProblem("encache-dev")).to.equal(undefined);
    expect(dashboardNameProblem("a".repeat(255))).to.equal(undefined);
    expect(dashboardNameProblem("a".repeat(256))).to.match(/1-255 characters/);
    expect(dashboardNameProblem("")).to.match(/1-255 characters/);
    expect(dashboardNameProblem("encache dev")).to.match(/letters, digits, - and _/);
    expect(dashboardNameProblem("encache/dev")).to.match(/letters, digits, - and _/);
  });
});
