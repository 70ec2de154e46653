import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { metricsNamespace, PRODUCT } from "../../policy/contract";

/**
 * PutDashboard's limits (CloudWatch service quotas and the DashboardBody reference): at most 500
 * widgets, 500 metrics per widget and 2,500 per dashboard; a name of 1–255 letters, digits, `-`
 * or `_`. The body's size is held to 1 MB, read as 10^6 bytes (the stricter reading).
 */
export const DASHBOARD_LIMITS = {
  widgets: 500,
  metricsPerWidget: 500,
  metricsPerDashboard: 2_500,
  bodyBytes: 1_000_000,
  nameLength: 255,
} as const;

/** The dashboard grid is 24 columns wide. */
const GRID_COLUMNS = 24;
const WIDGET_HEIGHT = 6;

/** Queue depths move by the minute; the functions' counters are read over five. */
const QUEUE_PERIOD_SECONDS = 60;
const EMF_PERIOD_SECONDS = 300;

/** A queue on the dashboard: a short label and its physical name (the `QueueName` dimension). */
export interface DashboardQueue {
  label: string;
  name: string;
}

/**
 * Everything the dashboard shows, as plain values. Every `…Service` is a function's
 * POWERTOOLS_SERVICE_NAME: Powertools puts it on each EMF metric as the `service` dimension, so
 * it is what tells this stack's metrics from another's in the same namespace.
 */
export interface DashboardSpec {
  /** Region of every metric and log query. */
  region: string;
  /** `dev`, `prod`…: the retraining metrics' `Environment` dimension. */
  environment: string;
  /** Queues that carry work: visible, in flight, age of the oldest message. */
  queues: DashboardQueue[];
  /** DLQs and terminal queues: anything visible there needs a human. */
  deadLetterQueues: DashboardQueue[];
  ingest: {
    /** The single GPU instance (AWS/EC2 CPUUtilization); absent in fleet mode. */
    gpuInstanceId?: string;
    /** Fleet mode: the group (AWS/AutoScaling group metrics) and the scaler's service (backlog, scale-outs and -ins). */
    gpuFleet?: { groupName: string; scalerService: string };
    /** The window consumer's service: deliveries to the GPU. */
    windowService: string;
    /** The DLQ consumer's service: parks and GPU starts. */
    dlqService: string;
    /**
     * The idle checker's service: the GPU's run state, idle minutes and stops. Without an idle
     * checker nothing reports the run state, and those views are left out.
     */
    gpuIdleService?: string;
  };
  worker: {
    /** The work queue whose backlog drives scaling. */
    queueName: string;
    clusterName: string;
    /** The ECS service (Container Insights' ServiceName). */
    serviceName: string;
    /** The container's POWERTOOLS_SERVICE_NAME. */
    metricsService: string;
    /** The scaling policy's target, drawn as a line on the backlog graph. */
    backlogPerTaskTarget: number;
  };
  pool: {
    /** Each resource class: its advert queue and the size refill keeps it at. */
    classes: Array<{ name: string; queueName: string; size: number }>;
    /** The refill function's service. */
    refillService: string;
    /** The refill function's log group: its `pool_counted` step is the only count of the pool. */
    refillLogGroup: string;
  };
}

/** A metric widget's per-metric options (the last element of a metric's array). */
export interface MetricOptions {
  id?: string;
  label?: string;
  stat?: string;
  visible?: boolean;
  yAxis?: "left" | "right";
  expression?: string;
}

/** `[namespace, metricName, dimension, value, …, options?]`, or `[{ expression, … }]`. */
export type MetricRow = Array<string | MetricOptions>;

interface Placement {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface MetricWidget extends Placement {
  type: "metric";
  properties: {
    title: string;
    region: string;
    view: "timeSeries";
    stacked: boolean;
    period: number;
    stat: string;
    metrics: MetricRow[];
    yAxis?: { left?: { min?: number; max?: number; label?: string; showUnits?: boolean } };
    annotations?: { horizontal: Array<{ label: string; value: number }> };
  };
}

export interface LogWidget extends Placement {
  type: "log";
  properties: { title: string; region: string; view: "table"; query: string };
}

export type DashboardWidget = MetricWidget | LogWidget;

export interface DashboardBody {
  start: string;
  widgets: DashboardWidget[];
}

/** `encache-<environment>`: dashboards are per account, not per region, so the name carries the stack. Pure. */
export function defaultDashboardName(environment: string): string {
  return `${PRODUCT}-${environment}`;
}

/** Why PutDashboard would refuse `name`, or undefined. Pure. */
export function dashboardNameProblem(name: string): string | undefined {
  if (name.length < 1 || name.length > DASHBOARD_LIMITS.nameLength) return `dashboard name "${name}" must be 1-${DASHBOARD_LIMITS.nameLength} characters`;
  if (!/^[A-Za-z0-9_-]+$/.test(name)) return `dashboard name "${name}" may hold only letters, digits, - and _`;
  return undefined;
}

/** The metric rows of a widget, expressions included. */
function metricCount(widget: DashboardWidget): number {
  return widget.type === "metric" ? widget.properties.metrics.length : 0;
}

/** Every limit of {@link DASHBOARD_LIMITS} that `body` breaks; empty when PutDashboard would take it. Pure. */
export function dashboardLimitProblems(body: DashboardBody): string[] {
  const problems: string[] = [];
  const bytes = Buffer.byteLength(JSON.stringify(body), "utf8");
  if (bytes > DASHBOARD_LIMITS.bodyBytes) problems.push(`the body is ${bytes} bytes, above ${DASHBOARD_LIMITS.bodyBytes}`);
  if (body.widgets.length > DASHBOARD_LIMITS.widgets) problems.push(`${body.widgets.length} widgets, above ${DASHBOARD_LIMITS.widgets}`);
  for (const w of body.widgets) {
    if (metricCount(w) > DASHBOARD_LIMITS.metricsPerWidget)
      problems.push(`widget "${w.properties.title}" has ${metricCount(w)} metrics, above ${DASHBOARD_LIMITS.metricsPerWidget}`);
  }
  const total = body.widgets.reduce((n, w) => n + metricCount(w), 0);
  if (total > DASHBOARD_LIMITS.metricsPerDashboard) problems.push(`${total} metrics, above ${DASHBOARD_LIMITS.metricsPerDashboard}`);
  return problems;
}

/** A metric row: dimensions in the order given, then its options. */
function metric(namespace: string, name: string, dimensions: Record<string, string>, options: MetricOptions = {}): MetricRow {
  const row: MetricRow = [namespace, name, ...Object.entries(dimensions).flat()];
  return Object.keys(options).length > 0 ? [...row, options] : row;
}

/** An EMF metric of one function: Powertools' only dimension is `service`. */
function emf(part: string, service: string, name: string, options: MetricOptions = {}): MetricRow {
  return metric(metricsNamespace(part), name, { service }, { label: name, ...options });
}

function sqs(name: string, queue: DashboardQueue): MetricRow {
  return metric("AWS/SQS", name, { QueueName: queue.name }, { label: queue.label });
}

/** A widget before layout: its width, and what it shows. */
type WidgetContent = { width: number; content: Omit<MetricWidget, keyof Placement> | Omit<LogWidget, keyof Placement> };

/** Lays widgets out left to right, wrapping at the grid's width; each row starts a section of its own. */
function layout(rows: WidgetContent[][]): DashboardWidget[] {
  const widgets: DashboardWidget[] = [];
  let y = 0;
  for (const row of rows) {
    let x = 0;
    for (const { width, content } of row) {
      if (x + width > GRID_COLUMNS) {
        x = 0;
        y += WIDGET_HEIGHT;
      }
      widgets.push({ ...content, x, y, width, height: WIDGET_HEIGHT });
      x += width;
    }
    y += WIDGET_HEIGHT;
  }
  return widgets;
}

/** A time-series metric widget. */
function graph(
  region: string,
  title: string,
  metrics: MetricRow[],
  options: { stat: string; period: number; width?: number; stacked?: boolean } & Pick<MetricWidget["properties"], "yAxis" | "annotations">,
): WidgetContent {
  const { width = 8, stacked = false, stat, period, yAxis, annotations } = options;
  return {
    width,
    content: {
      type: "metric",
      properties: { title, region, view: "timeSeries", stacked, period, stat, metrics, ...(yAxis ? { yAxis } : {}), ...(annotations ? { annotations } : {}) },
    },
  };
}

/** Queue depth, messages in flight, age of the oldest message; DLQ depth. */
function queueRow(s: DashboardSpec): WidgetContent[] {
  const period = QUEUE_PERIOD_SECONDS;
  return [
    graph(
      s.region,
      "Queue depth (visible)",
      s.queues.map((q) => sqs("ApproximateNumberOfMessagesVisible", q)),
      { stat: "Maximum", period, width: 6 },
    ),
    graph(
      s.region,
      "Messages in flight",
      s.queues.map((q) => sqs("ApproximateNumberOfMessagesNotVisible", q)),
      { stat: "Maximum", period, width: 6 },
    ),
    graph(
      s.region,
      "Oldest message (seconds)",
      s.queues.map((q) => sqs("ApproximateAgeOfOldestMessage", q)),
      { stat: "Maximum", period, width: 6 },
    ),
    graph(
      s.region,
      "DLQ and quarantine depth",
      s.deadLetterQueues.map((q) => sqs("ApproximateNumberOfMessagesVisible", q)),
      { stat: "Maximum", period, width: 6 },
    ),
  ];
}

/**
 * The GPU: its run state (EC2 publishes no metric for an instance's state, so it is the idle
 * checker's GpuRunning gauge, 1 or 0 at each check), CPU, starts and stops, idle minutes.
 */
function gpuRow(s: DashboardSpec): WidgetContent[] {
  const { gpuInstanceId, dlqService, gpuIdleService: idle, gpuFleet } = s.ingest;
  const period = EMF_PERIOD_SECONDS;
  const starts = [emf("Ingest", dlqService, "GpuAutostartAttempted"), emf("Ingest", dlqService, "GpuStartInsufficientCapacity")];
  if (gpuFleet) return fleetRow(s, gpuFleet, starts);
  // Detailed monitoring is on (GpuInstance), so EC2 publishes CPU every minute.
  const cpu = graph(s.region, "GPU CPU (%)", [metric("AWS/EC2", "CPUUtilization", { InstanceId: gpuInstanceId ?? "" }, { label: "CPUUtilization" })], {
    stat: "Average",
    period: 60,
    width: 6,
    yAxis: { left: { min: 0, max: 100 } },
  });
  if (idle === undefined) return [cpu, graph(s.region, "GPU starts", starts, { stat: "Sum", period, width: 6 })];
  return [
    graph(s.region, "GPU running (1) or stopped (0)", [emf("Ingest", idle, "GpuRunning")], {
      stat: "Maximum",
      period,
      width: 6,
      yAxis: { left: { min: 0, max: 1, showUnits: false } },
    }),
    cpu,
    graph(s.region, "GPU starts and stops", [...starts, emf("Ingest", idle, "GpuStopped")], { stat: "Sum", period, width: 6 }),
    graph(s.region, "GPU idle minutes", [emf("Ingest", idle, "GpuIdleMinutes")], { stat: "Maximum", period, width: 6 }),
  ];
}

/**
 * The GPU fleet: instances in service against desired capacity (the group publishes them:
 * `enabledMetrics`), the backlog the scaler sized it from, and its scale-outs and -ins.
 */
function fleetRow(s: DashboardSpec, fleet: { groupName: string; scalerService: string }, starts: MetricRow[]): WidgetContent[] {
  const period = EMF_PERIOD_SECONDS;
  const group = (name: string) => metric("AWS/AutoScaling", name, { AutoScalingGroupName: fleet.groupName }, { label: name });
  return [
    graph(s.region, "GPU fleet: in service and desired", [group("GroupInServiceInstances"), group("GroupDesiredCapacity"), group("GroupPendingInstances")], {
      stat: "Maximum",
      period: 60,
      width: 8,
    }),
    graph(s.region, "GPU fleet backlog (windows)", [emf("Ingest", fleet.scalerService, "GpuFleetBacklog")], { stat: "Maximum", period, width: 8 }),
    graph(
      s.region,
      "GPU fleet scale-outs and scale-ins",
      [...starts, emf("Ingest", fleet.scalerService, "GpuFleetScaledOut"), emf("Ingest", fleet.scalerService, "GpuFleetScaledIn")],
      { stat: "Sum", period, width: 8 },
    ),
  ];
}

/** Ingest deliveries and parks, and the retraining launches. */
function flowRow(s: DashboardSpec): WidgetContent[] {
  const { windowService, dlqService } = s.ingest;
  const period = EMF_PERIOD_SECONDS;
  // The launcher clears Powertools' default `service` dimension: its metrics carry Environment alone.
  const retraining = (name: string) => metric(metricsNamespace("RetrainingPipeline"), name, { Environment: s.environment }, { label: name });
  return [
    graph(s.region, "Windows delivered to the GPU", [emf("Ingest", windowService, "WindowsProcessed"), emf("Ingest", windowService, "WindowsFailed")], {
      stat: "Sum",
      period,
    }),
    graph(
      s.region,
      "DLQ parks and quarantines",
      [
        emf("Ingest", dlqService, "DlqMessagesParked"),
        emf("Ingest", dlqService, "MessagesQuarantined", { label: "MessagesQuarantined (DLQ consumer)" }),
        emf("Ingest", windowService, "MessagesQuarantined", { label: "MessagesQuarantined (window consumer)" }),
      ],
      { stat: "Sum", period },
    ),
    graph(s.region, "Retraining tasks", ["ECSTasksLaunched", "SQSMessagesDeferred", "SQSMessagesFailed"].map(retraining), { stat: "Sum", period }),
  ];
}

/**
 * The worker: backlog per task exactly as its scaling policy computes it (visible messages ÷
 * Container Insights' RunningTaskCount, `backlogPerTaskMetrics`), tasks, jobs and protection.
 */
function workerRow(s: DashboardSpec): WidgetContent[] {
  const w = s.worker;
  const service = { ClusterName: w.clusterName, ServiceName: w.serviceName };
  const period = EMF_PERIOD_SECONDS;
  return [
    graph(
      s.region,
      "Worker backlog per task",
      [
        metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", { QueueName: w.queueName }, { id: "visible", stat: "Sum", visible: false }),
        metric("ECS/ContainerInsights", "RunningTaskCount", service, { id: "running", stat: "Average", visible: false }),
        [{ id: "backlog_per_task", expression: "visible / running", label: "Backlog per task" }],
      ],
      { stat: "Average", period: 60, width: 6, annotations: { horizontal: [{ label: "Scaling target", value: w.backlogPerTaskTarget }] } },
    ),
    graph(
      s.region,
      "Worker tasks",
      [
        metric("ECS/ContainerInsights", "RunningTaskCount", service, { label: "Running" }),
        metric("ECS/ContainerInsights", "DesiredTaskCount", service, { label: "Desired" }),
      ],
      { stat: "Average", period: 60, width: 6 },
    ),
    graph(
      s.region,
      "Worker jobs",
      ["JobsStarted", "JobsSucceeded", "JobsFailed", "JobsReturned"].map((n) => emf("Worker", w.metricsService, n)),
      { stat: "Sum", period, width: 6 },
    ),
    graph(
      s.region,
      "Worker task protection",
      ["TaskProtectionEnabled", "TaskProtectionReleased", "TaskProtectionFailures"].map((n) => emf("Worker", w.metricsService, n)),
      { stat: "Sum", period, width: 6 },
    ),
  ];
}

/**
 * The pool. No function publishes the pool's size as a metric: refill counts it (pool-tagged,
 * live, unclaimed) and logs the count as its `pool_counted` step, so the sizes are a Logs
 * Insights table of each class's latest count. Beside it, the adverts waiting per class (each
 * is an idle instance on offer; refill re-advertises idle ones, so briefly more than the size)
 * and what refill launched and started.
 */
function poolRow(s: DashboardSpec): WidgetContent[] {
  const p = s.pool;
  const query = [
    `SOURCE '${p.refillLogGroup}'`,
    `filter step = "pool_counted"`,
    "stats latest(size) as target, latest(live_unclaimed) as live, latest(stopped_unclaimed) as stopped, latest(claimed) as claimed by resource_class",
    "sort resource_class asc",
  ].join(" | ");
  return [
    { width: 8, content: { type: "log", properties: { title: "Pool size per class (refill's latest count)", region: s.region, view: "table", query } } },
    graph(
      s.region,
      "Pool adverts waiting per class",
      p.classes.map((c) => sqs("ApproximateNumberOfMessagesVisible", { label: c.name, name: c.queueName })),
      { stat: "Maximum", period: QUEUE_PERIOD_SECONDS, annotations: { horizontal: p.classes.map((c) => ({ label: `${c.name} size`, value: c.size })) } },
    ),
    graph(
      s.region,
      "Pool refills",
      ["PoolInstancesLaunched", "PoolInstancesStarted", "AdvertsPublished", "RefillSkipped"].map((n) => emf("Pool", p.refillService, n)),
      { stat: "Sum", period: EMF_PERIOD_SECONDS },
    ),
  ];
}

/**
 * The dashboard body: queues and DLQs, the GPU, ingest and retraining flow, the worker, the pool;
 * each a row (or two) of the 24-column grid. Pure: plain names in, the body's structure out.
 */
export function dashboardBody(spec: DashboardSpec): DashboardBody {
  return { start: "-PT6H", widgets: layout([queueRow(spec), gpuRow(spec), flowRow(spec), workerRow(spec), poolRow(spec)]) };
}

/** `T` with each string an Input: what the component takes where {@link dashboardBody} takes plain values. */
type WithInputs<T> = T extends undefined
  ? T
  : T extends string
    ? pulumi.Input<string>
    : T extends number
      ? number
      : T extends Array<infer U>
        ? Array<WithInputs<U>>
        : { [K in keyof T]: WithInputs<T[K]> };

export interface PlatformDashboardArgs extends WithInputs<Omit<DashboardSpec, "region" | "environment">> {
  /** Region of every metric and log query. */
  region: string;
  /** The stack's environment: the default name and the retraining metrics' dimension. */
  environment: string;
  /**
   * The dashboard's name: 1-255 letters, digits, `-` or `_`. Dashboards are per account, not per
   * region, so two stacks in one account need two names.
   * @default `encache-<environment>`
   */
  dashboardName?: string;
}

/**
 * One CloudWatch dashboard for a stack: queue and DLQ depths, the GPU's state and CPU, ingest
 * deliveries and parks, GPU starts and stops, retraining tasks, the worker's backlog per task and
 * jobs, and the pool, from AWS's own metrics and the functions' EMF metrics. The body is built by
 * {@link dashboardBody} once the names are known and refused when PutDashboard would refuse it.
 */
export class PlatformDashboard extends pulumi.ComponentResource {
  readonly dashboard: aws.cloudwatch.Dashboard;
  /** The name the dashboard is created with (known before deployment). */
  readonly dashboardName: string;

  constructor(name: string, args: PlatformDashboardArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:observability:PlatformDashboard", name, {}, opts);
    this.dashboardName = args.dashboardName ?? defaultDashboardName(args.environment);
    const nameProblem = dashboardNameProblem(this.dashboardName);
    if (nameProblem) throw new Error(`PlatformDashboard: ${nameProblem}`);

    const names = pulumi.output({ queues: args.queues, deadLetterQueues: args.deadLetterQueues, ingest: args.ingest, worker: args.worker, pool: args.pool });
    const body = names.apply((resolved) => {
      const built = dashboardBody({ ...resolved, region: args.region, environment: args.environment });
      const problems = dashboardLimitProblems(built);
      if (problems.length > 0) throw new Error(`PlatformDashboard ${this.dashboardName}: ${problems.join("; ")}`);
      return JSON.stringify(built);
    });

    this.dashboard = new aws.cloudwatch.Dashboard(name, { dashboardName: this.dashboardName, dashboardBody: body }, { parent: this });

    this.registerOutputs({ dashboardName: this.dashboard.dashboardName, dashboardArn: this.dashboard.dashboardArn });
  }
}
