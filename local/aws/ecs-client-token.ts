/**
 * RunTask's `clientToken`, as ECS documents it, in front of moto (which ignores it). Within 24
 * hours of a RunTask, the same token with the same parameters returns that call's tasks and starts
 * nothing; the same token with other parameters is refused with ConflictException (botocore's ECS
 * model: `{message, resourceIds}`, resourceIds being the tasks already tied to the token). Past
 * the window the token is forgotten and starts a task again, as on AWS. A token binds within its
 * cluster ("Ensuring idempotency", ECS API reference): the same token in another cluster is another
 * request. Without this, every retried or duplicated RunTask in the local run is an extra task, so
 * the local evidence would show duplicates that AWS absorbs, and hide the ones it does not (a retry
 * past 24 hours).
 *
 * Fargate Spot capacity is played here too (`refuseSpot`): while it is off, a RunTask whose
 * capacity provider strategy asks for FARGATE_SPOT is answered as ECS answers it, 200 with no task
 * and the failure reason "Capacity is unavailable at this time…", and starts nothing. The proxy
 * remembers which tasks started on Spot (`spotTasks`), the only ones a Spot interruption may take.
 *
 * The window runs on the clock given (the local run's simulated clock). Concurrent calls with one
 * token wait for the first's answer. Only RunTask is looked at; everything else passes through.
 * moto checks no signatures; never put this in front of AWS.
 */
import type * as http from "node:http";
import { isDeepStrictEqual } from "node:util";
import { InterceptingProxy, isObject, type Json, parseJson, type Reply } from "./intercepting-proxy";

/** ECS's RunTask failure reason when Fargate (Spot) has no capacity (AWS re:Post, "ecs-fargate-runtask-capacity"). */
const CAPACITY_UNAVAILABLE = "Capacity is unavailable at this time. Please try again later or in a different availability zone";
const JSON_1_1 = { "content-type": "application/x-amz-json-1.1" };

/** ECS's answer to a RunTask it has no capacity for: 200, no task, one failure. */
const capacityRefusal: Reply = { status: 200, headers: JSON_1_1, body: JSON.stringify({ tasks: [], failures: [{ reason: CAPACITY_UNAVAILABLE }] }) };

/** Pure: whether a RunTask body asks for FARGATE_SPOT. */
function asksForSpot(body: Json): boolean {
  const strategy = Array.isArray(body.capacityProviderStrategy) ? body.capacityProviderStrategy : [];
  return strategy.some((s) => isObject(s) && s.capacityProvider === "FARGATE_SPOT");
}

/** ECS's documented idempotency window for RunTask's clientToken. */
export const CLIENT_TOKEN_WINDOW_MS = 24 * 3_600_000;
const RUN_TASK_TARGET = "AmazonEC2ContainerServiceV20141113.RunTask";

/** Pure: the key a RunTask's token binds under, its cluster's (by name or ARN, `default` when none) and its own. */
export function tokenKey(request: Json, token: string): string {
  const cluster = typeof request.cluster === "string" && request.cluster !== "" ? request.cluster : "default";
  return `${cluster.split("/").at(-1)}/${token}`;
}

/** Pure: whether two RunTask requests have the same parameters, their tokens aside, whatever their key order. */
export function sameParameters(a: Json, b: Json): boolean {
  const { clientToken: _a, ...restA } = a;
  const { clientToken: _b, ...restB } = b;
  return isDeepStrictEqual(restA, restB);
}

/** Pure: ECS's refusal of a token reused with other parameters, in its JSON protocol's shape. */
export function conflictError(token: string, taskArns: readonly string[]): Reply & { headers: Record<string, string>; body: string } {
  const body = JSON.stringify({
    __type: "ConflictException",
    message: `The clientToken ${token} was already used by a RunTask with different parameters.`,
    resourceIds: [...taskArns],
  });
  return { status: 400, headers: { ...JSON_1_1, "x-amzn-errortype": "ConflictException" }, body };
}

interface Remembered {
  request: Json;
  atMs: number;
  taskArns: string[];
  answer: Reply;
}

export class EcsClientTokenProxy extends InterceptingProxy {
  private readonly target: URL;
  private readonly tokens = new Map<string, Remembered>();
  /** Calls under way per token: a second call with the token waits for the first's outcome. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly now: () => number;
  readonly counts = { runTasks: 0, replayed: 0, conflicts: 0, spotRefused: 0 };
  /** Tasks that started on FARGATE_SPOT. */
  readonly spotTasks = new Set<string>();
  private spotAvailable = true;

  /** From now on Fargate Spot has no capacity (`true`), or has it again (`false`). */
  refuseSpot(refuse: boolean): void {
    this.spotAvailable = !refuse;
  }

  /** `target`: moto's base URL; `now`: epoch ms, the local run passes its simulated clock (@default Date.now). */
  constructor(opts: { target: string; now?: () => number }) {
    super("EcsClientTokenProxy");
    this.target = new URL(opts.target);
    this.now = opts.now ?? Date.now;
  }

  /** Listens on a free loopback port; resolves to the proxy's base URL. */
  start(): Promise<string> {
    return this.listen((req, res) => this.answerBuffered(this.target, req, res, (body) => this.answer(req, body)));
  }

  private async answer(req: http.IncomingMessage, body: Buffer): Promise<Reply> {
    const request = req.headers["x-amz-target"] === RUN_TASK_TARGET ? parseJson(body) : undefined;
    const token = typeof request?.clientToken === "string" ? request.clientToken : undefined;
    // Not aborted when the client goes away: a RunTask that reached moto still binds its token.
    if (request === undefined || token === undefined) return this.exchange(this.target, req, body);
    this.counts.runTasks += 1;
    const key = tokenKey(request, token);
    for (let pending = this.inFlight.get(key); pending; pending = this.inFlight.get(key)) await pending;
    const known = this.tokens.get(key);
    if (known && this.now() - known.atMs < CLIENT_TOKEN_WINDOW_MS) {
      if (!sameParameters(known.request, request)) {
        this.counts.conflicts += 1;
        return conflictError(token, known.taskArns);
      }
      this.counts.replayed += 1;
      return known.answer;
    }
    if (!this.spotAvailable && asksForSpot(request)) {
      this.counts.spotRefused += 1;
      return capacityRefusal;
    }
    let done!: () => void;
    this.inFlight.set(key, new Promise<void>((resolve) => (done = resolve)));
    try {
      const answer = await this.exchange(this.target, req, body);
      const taskArns = taskArnsOf(answer.body);
      if (answer.status < 300 && asksForSpot(request)) for (const arn of taskArns) this.spotTasks.add(arn);
      // Only a call that started tasks binds the token; a refusal leaves it free for the retry.
      if (answer.status < 300 && taskArns.length > 0) this.tokens.set(key, { request, atMs: this.now(), taskArns, answer });
      return answer;
    } finally {
      this.inFlight.delete(key);
      done();
    }
  }
}

function taskArnsOf(body: Buffer): string[] {
  const tasks = parseJson(body)?.tasks;
  return (Array.isArray(tasks) ? tasks : []).flatMap((t) => (isObject(t) && typeof t.taskArn === "string" ? [t.taskArn] : []));
}
