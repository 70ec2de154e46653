/**
 * The one endpoint `ops` reaches in the local run (AWS_ENDPOINT_URL for every service), in front of
 * moto. Every call is first judged against the stack's operator policy (operator-iam.ts); then
 * - SQS's move-task actions are answered by the move-task stand-in (sqs-move-tasks.ts);
 * - ECS's ListTasks, DescribeTasks and GetTaskProtection for the worker service are answered from
 *   its local tasks and their agents' protection (moto neither runs the service's tasks nor knows
 *   task protection), and DescribeServices' runningCount is theirs;
 * - CloudWatch's GetMetricStatistics for SQS's ApproximateAgeOfOldestMessage is answered from the
 *   local run's depth sampler (moto computes no SQS metric);
 * - everything else goes on to moto unchanged.
 * The service of a call is read from its SigV4 credential scope, as AWS routes it; no signature is
 * checked. Never put this in front of AWS.
 */
import { randomUUID } from "node:crypto";
import type * as http from "node:http";
import { type AutoScalingClient, DescribeAutoScalingGroupsCommand } from "@aws-sdk/client-auto-scaling";
import { DescribeInstancesCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { InterceptingProxy, type Json, parseJson, type Reply, xmlText } from "./intercepting-proxy";
import { type Check, denialMessage, firstDenied, type PolicyStatement } from "./operator-iam";
import { type DirectSends, type MessageMoveTasks, SqsError } from "./sqs-move-tasks";

export interface WorkerTaskView {
  taskArn: string;
  protectionEnabled: boolean;
  expiresAtMs: number | null;
}

export interface OperatorEndpointOptions {
  /** moto's base URL. */
  target: string;
  region: string;
  account: string;
  /** The operator policy the calls are judged against (tests swap in a smaller one). */
  statements: () => readonly PolicyStatement[];
  moveTasks: MessageMoveTasks;
  /** Which messages reached a queue by a plain send (they carry no DeadLetterQueueSourceArn). */
  direct: DirectSends;
  /** Every queue of the stack, by physical name, with its ARN and the DLQ its redrive policy names. */
  queues: Array<{ name: string; arn: string; deadLetterTargetArn?: string }>;
  worker?: { clusterName: string; serviceName: string; tasks: () => WorkerTaskView[] };
  /** The age of a queue's oldest message in seconds, by physical name; null when empty. */
  oldestAgeSeconds: (queueName: string) => number | null;
  /** Straight to moto, for the tags a condition reads. */
  ec2: EC2Client;
  autoscaling: AutoScalingClient;
}

/** The last part of a URL or an ARN's path: a queue's name from its URL, a cluster's from its ARN. */
const lastPart = (urlOrArn: unknown): string =>
  String(urlOrArn ?? "")
    .split("/")
    .at(-1) ?? "";

export class OperatorEndpoint extends InterceptingProxy {
  private readonly target: URL;

  constructor(private readonly o: OperatorEndpointOptions) {
    super("OperatorEndpoint");
    this.target = new URL(o.target);
  }

  start(): Promise<string> {
    return this.listen((req, res) =>
      this.answerBuffered(this.target, req, res, async (body) => {
        const local = await this.answer(req, body);
        if (local) return local;
        const up = await this.exchange(this.target, req, body);
        return { ...up, body: this.amend(req, body, up.status, up.body) };
      }),
    );
  }

  /**
   * moto's answers, completed where moto falls short of AWS:
   * - ReceiveMessage on a DLQ: SQS stamps DeadLetterQueueSourceArn on what it moved there; moto does
   *   not, so it is added to every message that did not arrive by a plain send;
   * - DescribeServices: moto knows no running task of the worker service (it runs locally), so its
   *   runningCount is the local tasks'.
   */
  private amend(req: http.IncomingMessage, request: Buffer, status: number, body: Buffer): Buffer | string {
    const target = String(req.headers["x-amz-target"] ?? "");
    const doc = status === 200 && target !== "" ? parseJson(body) : undefined;
    const worker = this.o.worker;
    if (doc && target === "AmazonSQS.ReceiveMessage") {
      const name = lastPart(parseJson(request)?.QueueUrl);
      const dlq = this.o.queues.find((q) => q.name === name);
      const sources = this.o.queues.filter((q) => dlq !== undefined && q.deadLetterTargetArn === dlq.arn);
      if (sources.length !== 1) return body;
      for (const m of (doc.Messages ?? []) as Array<{ MessageId?: string; Attributes?: Record<string, string> }>) {
        if (m.MessageId && !this.o.direct.sentDirectly(name, m.MessageId)) m.Attributes = { ...m.Attributes, DeadLetterQueueSourceArn: sources[0]?.arn ?? "" };
      }
      return JSON.stringify(doc);
    }
    if (!doc || !worker || !target.endsWith(".DescribeServices")) return body;
    for (const s of (doc.services ?? []) as Array<{ serviceName?: string; runningCount?: number }>) {
      if (s.serviceName === worker.serviceName) s.runningCount = worker.tasks().length;
    }
    return JSON.stringify(doc);
  }

  /** A reply made here (a denial, a stand-in's answer), or undefined to pass the call to moto. */
  private async answer(req: http.IncomingMessage, body: Buffer): Promise<Reply | undefined> {
    const service = /Credential=[^/]+\/[^/]+\/[^/]+\/([^/]+)\//.exec(String(req.headers.authorization ?? ""))?.[1] ?? "";
    const target = String(req.headers["x-amz-target"] ?? "");
    const json = target !== "";
    const params: Json = json ? (JSON.parse(body.toString("utf8") || "{}") as Json) : Object.fromEntries(new URLSearchParams(body.toString("utf8")));
    const operation = json ? (target.split(".").at(-1) ?? "") : String(params.Action ?? "");
    const checks = await this.checksFor(service, operation, params);
    if (checks === undefined) return this.denied(service, check(`${service}:${operation}`, "*"), "the local operator stand-in knows no such call");
    const denied = firstDenied(this.o.statements(), checks);
    if (denied) return this.denied(service, denied);
    try {
      return await this.standIn(service, operation, params);
    } catch (err) {
      if (err instanceof SqsError) return jsonError(err.code, err.message, err.status);
      throw err;
    }
  }

  private denied(service: string, check: Check, why?: string): Reply {
    const principal = `arn:aws:sts::${this.o.account}:assumed-role/operator/ops-local`;
    const message = why ? `${check.action}: ${why}` : denialMessage(principal, check);
    if (service === "ec2")
      return xml(
        `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>${xmlText(message)}</Message></Error></Errors><RequestID>${randomUUID()}</RequestID></Response>`,
      );
    if (service === "autoscaling" || service === "sts")
      return xml(
        `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>${xmlText(message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
      );
    return jsonError("AccessDenied", message, 400);
  }
  private queueArn(urlOrName: unknown): string {
    const name = lastPart(urlOrName);
    return this.o.queues.find((q) => q.name === name)?.arn ?? `arn:aws:sqs:${this.o.region}:${this.o.account}:${name}`;
  }

  /** What AWS authorises for the call; undefined for a call this stand-in does not model (denied). */
  private async checksFor(service: string, op: string, p: Json): Promise<Check[] | undefined> {
    const byService = new Map<string, () => Check[] | undefined | Promise<Check[] | undefined>>([
      // GetCallerIdentity needs no permission.
      ["sts", () => (op === "GetCallerIdentity" ? [] : undefined)],
      ["sqs", () => this.sqsChecks(op, p)],
      ["monitoring", () => (op === "GetMetricStatistics" ? [check("cloudwatch:GetMetricStatistics", "*")] : undefined)],
      ["ecs", () => this.ecsChecks(op, p)],
      ["ec2", () => this.ec2Checks(op, p)],
      ["autoscaling", () => this.autoscalingChecks(op, p)],
    ]);
    return byService.get(service)?.();
  }

  private sqsChecks(op: string, p: Json): Check[] | undefined {
    if (op === "StartMessageMoveTask") {
      const dlq = String(p.SourceArn ?? "");
      const destinations = p.DestinationArn ? [String(p.DestinationArn)] : this.o.queues.filter((q) => q.deadLetterTargetArn === dlq).map((q) => q.arn);
      return [
        check("sqs:StartMessageMoveTask", dlq),
        // What SQS checks on the caller's behalf for the task's life.
        ...["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"].map((a) => check(a, dlq)),
        ...destinations.map((d) => check("sqs:SendMessage", d)),
      ];
    }
    if (op === "ListMessageMoveTasks") return [check("sqs:ListMessageMoveTasks", String(p.SourceArn ?? ""))];
    if (op === "CancelMessageMoveTask") return [check("sqs:CancelMessageMoveTask", handleSource(p.TaskHandle))];
    if (["GetQueueAttributes", "ReceiveMessage", "DeleteMessage", "SendMessage", "ChangeMessageVisibility"].includes(op)) {
      return [check(`sqs:${op}`, this.queueArn(p.QueueUrl))];
    }
    return undefined;
  }

  /** ECS authorises on the resource a call names (a task, a service, a container instance) in its cluster. */
  private ecsChecks(op: string, p: Json): Check[] | undefined {
    const { region, account } = this.o;
    const cluster = lastPart(p.cluster ?? "default");
    const inCluster = (kind: string, id: unknown) =>
      String(id).startsWith("arn:") ? String(id) : `arn:aws:ecs:${region}:${account}:${kind}/${cluster}/${String(id)}`;
    const ctx = { "ecs:cluster": `arn:aws:ecs:${region}:${account}:cluster/${cluster}` };
    // As IAM authorises ListTasks: on the container instance it names, else (ops lists by service) on `*`.
    if (op === "ListTasks")
      return [check("ecs:ListTasks", p.containerInstance === undefined ? "*" : inCluster("container-instance", p.containerInstance), ctx)];
    if (op === "DescribeServices") return ((p.services as unknown[]) ?? []).map((s) => check("ecs:DescribeServices", inCluster("service", s), ctx));
    if (op === "DescribeTasks" || op === "GetTaskProtection") return ((p.tasks as unknown[]) ?? []).map((t) => check(`ecs:${op}`, inCluster("task", t), ctx));
    return undefined;
  }

  /** EC2 authorises a stop or a tag change on each instance, its tags and the tag keys in the condition context. */
  private async ec2Checks(op: string, p: Json): Promise<Check[] | undefined> {
    if (op === "DescribeInstances") return [check("ec2:DescribeInstances", "*")];
    if (op !== "StopInstances" && op !== "CreateTags" && op !== "DeleteTags") return undefined;
    const ids = indexed(p, op === "StopInstances" ? "InstanceId" : "ResourceId");
    const described = ids.length === 0 ? undefined : await this.o.ec2.send(new DescribeInstancesCommand({ InstanceIds: ids })).catch(() => undefined);
    const tags = new Map((described?.Reservations ?? []).flatMap((r) => r.Instances ?? []).map((i) => [i.InstanceId, tagRecord(i.Tags)]));
    const arn = (id: string) => `arn:aws:ec2:${this.o.region}:${this.o.account}:instance/${id}`;
    return taggedChecks(`ec2:${op}`, ids, arn, tags, op === "StopInstances" ? undefined : indexed(p, "Tag", "Key"));
  }

  /** Auto Scaling authorises a capacity or tag change on each group, with its tags as EC2 does. */
  private async autoscalingChecks(op: string, p: Json): Promise<Check[] | undefined> {
    if (op === "DescribeAutoScalingGroups") return [check("autoscaling:DescribeAutoScalingGroups", "*")];
    if (op !== "SetDesiredCapacity" && op !== "CreateOrUpdateTags" && op !== "DeleteTags") return undefined;
    const names = [...new Set(op === "SetDesiredCapacity" ? [String(p.AutoScalingGroupName ?? "")] : indexed(p, "Tags.member", "ResourceId"))];
    const described =
      names.length === 0
        ? undefined
        : await this.o.autoscaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: names })).catch(() => undefined);
    const groups = new Map((described?.AutoScalingGroups ?? []).map((g) => [g.AutoScalingGroupName, g]));
    const arn = (n: string) =>
      groups.get(n)?.AutoScalingGroupARN ?? `arn:aws:autoscaling:${this.o.region}:${this.o.account}:autoScalingGroup:*:autoScalingGroupName/${n}`;
    const tags = new Map([...groups].map(([n, g]) => [n, tagRecord(g.Tags)]));
    return taggedChecks(`autoscaling:${op}`, names, arn, tags, op === "SetDesiredCapacity" ? undefined : indexed(p, "Tags.member", "Key"));
  }

  /** The stand-ins' answers; undefined sends the call to moto. */
  private async standIn(service: string, op: string, p: Json): Promise<Reply | undefined> {
    if (service === "sqs" && op === "StartMessageMoveTask") return jsonOk(await this.o.moveTasks.start(p));
    if (service === "sqs" && op === "ListMessageMoveTasks") return jsonOk(this.o.moveTasks.list(p));
    if (service === "sqs" && op === "CancelMessageMoveTask") return jsonOk(this.o.moveTasks.cancel(p));
    if (service === "monitoring" && op === "GetMetricStatistics" && p.Namespace === "AWS/SQS" && p.MetricName === "ApproximateAgeOfOldestMessage") {
      const name = String(((p.Dimensions as Array<{ Name?: unknown; Value?: unknown }>) ?? []).find((d) => d.Name === "QueueName")?.Value ?? "");
      const age = this.o.oldestAgeSeconds(name);
      const now = Math.floor(Date.now() / 1000);
      return jsonOk({ Label: "ApproximateAgeOfOldestMessage", Datapoints: age === null ? [] : [{ Timestamp: now, Maximum: age, Unit: "Seconds" }] });
    }
    const worker = this.o.worker;
    if (service === "ecs" && worker && lastPart(p.cluster) === worker.clusterName) {
      const tasks = worker.tasks();
      if (op === "ListTasks" && p.serviceName === worker.serviceName) return jsonOk({ taskArns: tasks.map((t) => t.taskArn) });
      const asked = ((p.tasks as unknown[]) ?? []).map(String);
      const mine = tasks.filter((t) => asked.includes(t.taskArn));
      if (op === "DescribeTasks" && mine.length > 0) {
        return jsonOk({
          tasks: mine.map((t) => ({ taskArn: t.taskArn, lastStatus: "RUNNING", desiredStatus: "RUNNING", group: `service:${worker.serviceName}` })),
          failures: [],
        });
      }
      if (op === "GetTaskProtection" && mine.length > 0) {
        return jsonOk({
          protectedTasks: mine.map((t) => ({
            taskArn: t.taskArn,
            protectionEnabled: t.protectionEnabled,
            ...(t.expiresAtMs !== null ? { expirationDate: Math.floor(t.expiresAtMs / 1000) } : {}),
          })),
          failures: [],
        });
      }
    }
    return undefined;
  }
}

function check(action: string, resource: string, context: Check["context"] = {}): Check {
  return { action, resource, context };
}

/** A query-protocol list, in order: `Prefix.1`, `Prefix.2`…, or with `field` `Prefix.N.Field` for every N. Pure. */
function indexed(p: Json, prefix: string, field?: string): string[] {
  const re = new RegExp(`^${prefix.replace(/\./g, "\\.")}\\.(\\d+)${field === undefined ? "" : `\\.${field}`}$`);
  return Object.keys(p)
    .filter((k) => re.test(k))
    .sort((a, b) => Number(re.exec(a)?.[1]) - Number(re.exec(b)?.[1]))
    .map((k) => String(p[k]));
}

const tagRecord = (tags: Array<{ Key?: string; Value?: string }> | undefined): Record<string, string> =>
  Object.fromEntries((tags ?? []).map((t) => [t.Key ?? "", t.Value ?? ""]));

/** `action` on each resource, with its tags (`aws:ResourceTag/…`) and, for a tag change, the keys written (`aws:TagKeys`). */
function taggedChecks(
  action: string,
  ids: string[],
  arn: (id: string) => string,
  tags: Map<string | undefined, Record<string, string>>,
  tagKeys: string[] | undefined,
): Check[] {
  return ids.map((id) =>
    check(action, arn(id), {
      ...Object.fromEntries(Object.entries(tags.get(id) ?? {}).map(([k, v]) => [`aws:ResourceTag/${k}`, v])),
      ...(tagKeys ? { "aws:TagKeys": tagKeys } : {}),
    }),
  );
}

/** The source queue a move task's handle names (the stand-in's handles are base64 JSON). */
const handleSource = (handle: unknown): string => String(parseJson(Buffer.from(String(handle), "base64"))?.sourceArn ?? "");

function jsonOk(doc: unknown): Reply {
  return { status: 200, headers: { "content-type": "application/x-amz-json-1.0", "x-amzn-requestid": randomUUID() }, body: JSON.stringify(doc) };
}

/** An error in the JSON protocols (SQS's query-compatible code rides in x-amzn-query-error). */
function jsonError(code: string, message: string, status: number): Reply {
  return {
    status,
    headers: {
      "content-type": "application/x-amz-json-1.0",
      "x-amzn-requestid": randomUUID(),
      "x-amzn-query-error": `${code};Sender`,
      "x-amzn-errortype": code,
    },
    body: JSON.stringify({ __type: code, message }),
  };
}

/** A denial in the query protocols (403). */
function xml(body: string): Reply {
  return { status: 403, headers: { "content-type": "text/xml", "x-amzn-requestid": randomUUID() }, body };
}
