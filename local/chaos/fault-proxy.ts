/**
 * The chaos run's fault proxy: an HTTP proxy in front of moto (and in front of the local run's own
 * SQS, EC2 and ECS proxies, so simulated time and ECS's clientToken still hold) for the calls the code under test makes: each
 * Lambda and the worker service get their own listening port (`front(caller, …)`), so every fault
 * is logged with the caller it hit. The runtime's own clients (event-source polls and deletes,
 * scenario sends and reads, provisioning) never come through here.
 *
 * Per call, with probability `rate`, one fault:
 * - `not-applied`: the connection drops before anything is forwarded; the call never reached AWS.
 * - `response-lost`: forwarded, moto's answer read in full (the call took effect), then the
 *   connection is destroyed, as a timeout or a dropped connection would; the SDK retries.
 * - `throttled` / `server-error`: an error in the service's own protocol (protocols.ts), not forwarded.
 * - `latency`: forwarded after a delay.
 *
 * Crashes (`crash.rate`): a unit of work (a Lambda invocation, a worker's job, a gateway's window:
 * `unitOf`) is doomed with that probability, drawn from the seed when the unit is first seen. After
 * each call of a doomed unit that reached AWS (forwarded, its answer read in full), with probability
 * KILL_POINT, the process that made the call is killed (SIGKILL: `crash.kill`) before the answer
 * reaches it, so it dies between two side effects, at a random point of its work (a unit that ends
 * first survives). Calls of no unit (polls) are never chosen. Each kill is journalled (`onCrash`)
 * with the process, the call after which it died and when; a unit that comes back after its kill
 * (a redelivery) is drawn again.
 *
 * Like the clock proxies, it forwards the Host header unchanged, so moto builds queue URLs on this
 * proxy's origin, and it checks no signature: never put it in front of AWS.
 */
import { randomUUID } from "node:crypto";
import type * as http from "node:http";
import { InterceptingProxy, isObject, type Json, parseJson, readBody, sendReply } from "../aws/intercepting-proxy";
import { errorResponse, operationOf, serviceOf } from "./protocols";
import { keyedStreams } from "./rng";

export const FAULT_KINDS = ["not-applied", "response-lost", "throttled", "server-error", "latency"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Where a caller's calls would have gone without the proxy (the platform's CodeEndpoints). */
export interface Upstreams {
  /** moto: every service without an endpoint of its own below. */
  aws: string;
  /** A service's own endpoint (the SQS, EC2 and ECS proxies of the local run), by SigV4 service name. */
  byService: Record<string, string>;
}

/** Enough of a faulted call to tie it to the message it was made for. */
export interface FaultRecord {
  seq: number;
  atMs: number;
  caller: string;
  service: string;
  operation: string;
  kind: FaultKind;
  latencyMs?: number;
  /** moto's status, for a forwarded call whose response was lost. */
  upstreamStatus?: number;
  queueUrl?: string;
  receiptHandles: string[];
  /** Message ids named by the request, or (for a lost response) created or received by it. */
  messageIds: string[];
  /** DynamoDB's Key (or an Item's hash key), as JSON. */
  key?: string;
  /** The request body, cut at REQUEST_CHARS: the ledger looks for a message's own ids in it. */
  request: string;
}

/** A call that reached moto (possibly with its response lost afterwards): its request, cut at REQUEST_CHARS. */
export interface ForwardedCall {
  service: string;
  operation: string;
  status: number;
  request: string;
}

/** One call through the proxy: who made it, what it asks, and whether its caller dies after it. */
interface Call {
  caller: string;
  service: string;
  operation: string;
  text: string;
  crash?: boolean;
}

/** One process the chaos run killed: which, after which call, when, and the work it held. */
export interface CrashRecord {
  kind: "crash";
  seq: number;
  atMs: number;
  caller: string;
  /** The process: a Lambda sandbox's log stream, a worker task's or gateway's pid. */
  process: string;
  /** The call it died after (it reached AWS; its answer never came back): `<service> <operation>`. */
  point: string;
  /** The proxy's count of calls so far: where in the run it died. */
  callSeq: number;
  /** What it was working on: message ids (a Lambda's batch), job ids (a worker task), window keys (a gateway). */
  work: string[];
  /**
   * A killed invocation's deadline (epoch ms, real): what it wrote naming its deadline (the fleet's
   * report claim) looks alive until then, so receives of its messages until then are the kill's doing.
   */
  untilMs?: number;
}

/** What `crash.kill` reports of the process it killed. */
export type Killed = Pick<CrashRecord, "process" | "work" | "untilMs">;

export interface CrashOptions {
  /** Probability that a unit of work is killed at a random point of it. */
  rate: number;
  /** The unit of work a call belongs to (undefined: none, never a crash point). @default unitOfWork */
  unitOf?: (caller: string, call: { service: string; operation: string; text: string }, req: http.IncomingMessage) => string | undefined;
  /**
   * Kills the process of `caller` that made this call (the request's socket or headers tell which),
   * and resolves once it is dead; undefined when there is none to kill (the call is then answered).
   */
  kill: (caller: string, req: http.IncomingMessage) => Promise<Killed | undefined>;
}

export interface FaultProxyOptions {
  seed: number;
  /** Probability that a call is faulted, 0–1. */
  rate: number;
  /** Which kinds to draw from, evenly. @default FAULT_KINDS */
  kinds?: readonly FaultKind[];
  /** @default [20, 800] */
  latencyMs?: [number, number];
  /** Every call that reached moto; the ledger counts RunTask calls through it. */
  onForwarded?: (call: ForwardedCall) => void;
  /** Every fault, as it is injected (e.g. to a JSON-lines file). */
  onFault?: (fault: FaultRecord) => void;
  /** Callers whose calls are never faulted (crashes still apply). */
  faultFreeCallers?: readonly string[];
  crash?: CrashOptions;
  /** Every kill, once the process is dead. */
  onCrash?: (crash: CrashRecord) => void;
}

/** Calls that are a process waiting for work, not doing it: never a crash point. */
const POLLS = new Set(["ReceiveMessage"]);
/** After each call of a doomed unit, the chance that this is where its process dies. */
export const KILL_POINT = 0.35;

/**
 * Pure-ish: the unit of work of a call, by what it carries: a Lambda's invocation (the sandbox's
 * `x-local-invocation` header), else a DynamoDB item's key (a worker's `job_key`, a gateway's
 * `window_key`), else an SQS receipt handle's message, by the job id its body carried when it was
 * received (`jobOfHandle`). A poll is no unit.
 */
export function unitOfWork(
  call: { operation: string; text: string },
  invocation: string | undefined,
  jobOfHandle: ReadonlyMap<string, string>,
): string | undefined {
  if (POLLS.has(call.operation)) return undefined;
  if (invocation !== undefined) return `invocation ${invocation}`;
  const ids = idsOf(call.text);
  if (ids.key !== undefined) {
    const key = parseJson(ids.key);
    const first = key ? Object.values(key)[0] : undefined;
    const value = isObject(first) && typeof first.S === "string" ? first.S : typeof first === "string" ? first : undefined;
    if (value !== undefined) return `item ${value}`;
  }
  for (const handle of ids.receiptHandles) {
    const job = jobOfHandle.get(handle);
    if (job !== undefined) return `item ${job}`;
  }
  return undefined;
}

const REQUEST_CHARS = 4000;

export class FaultProxy extends InterceptingProxy {
  private readonly streams: ReturnType<typeof keyedStreams>;
  private readonly log: FaultRecord[] = [];
  private readonly kinds: readonly FaultKind[];
  private rate: number;
  private crashRate: number;
  private calls = 0;
  private readonly crashes: CrashRecord[] = [];
  /** Each unit of work seen, by caller: doomed or not (drawn once; drawn again after its kill). */
  private readonly units = new Map<string, boolean>();
  /** Receipt handle → the job id its message's body names, from the answers to ReceiveMessage. */
  private readonly jobOfHandle = new Map<string, string>();

  constructor(private readonly o: FaultProxyOptions) {
    super("FaultProxy");
    if (!(o.rate >= 0 && o.rate <= 1)) throw new Error(`FaultProxy: rate must be from 0 to 1, got ${o.rate}`);
    this.rate = o.rate;
    this.crashRate = o.crash?.rate ?? 0;
    if (!(this.crashRate >= 0 && this.crashRate <= 1)) throw new Error(`FaultProxy: crash rate must be from 0 to 1, got ${this.crashRate}`);
    this.kinds = o.kinds ?? FAULT_KINDS;
    if (this.kinds.length === 0) throw new Error("FaultProxy: no fault kinds to draw from");
    this.streams = keyedStreams(o.seed);
  }

  /** A port for `caller`'s calls, routed by service to `upstream`; resolves to its base URL. */
  front(caller: string, upstream: Upstreams): Promise<string> {
    return this.listen((req, res) => {
      readBody(req).then(
        (body) => this.intercept(caller, upstream, req, body, res),
        () => res.destroy(),
      );
    });
  }

  /** Faults injected so far, oldest first. */
  faults(): readonly FaultRecord[] {
    return this.log;
  }

  stats(): { calls: number; injected: number; byKind: Record<FaultKind, number> } {
    const byKind = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    for (const f of this.log) byKind[f.kind] += 1;
    return { calls: this.calls, injected: this.log.length, byKind };
  }

  /** Kills so far, oldest first. */
  kills(): readonly CrashRecord[] {
    return this.crashes;
  }

  /** 0 turns faults off (the run's final accounting), without restarting anything. */
  setRate(rate: number): void {
    this.rate = rate;
  }

  /** 0 turns crashes off (before the runtime stops), without restarting anything. */
  setCrashRate(rate: number): void {
    this.crashRate = rate;
  }

  private intercept(caller: string, upstream: Upstreams, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
    const text = body.toString("utf8");
    const service = serviceOf(req.headers);
    const operation = operationOf(req.headers, req.method ?? "POST", req.url ?? "/", text);
    this.calls += 1;
    const drawn = this.draw(caller, service, operation);
    const kind = this.o.faultFreeCallers?.includes(caller) ? undefined : drawn;
    const target = upstream.byService[service] ?? upstream.aws;
    const call = { caller, service, operation, text, crash: this.drawCrash(caller, { service, operation, text }, req) };
    if (kind === undefined) return this.relay(call, target, req, body, res, false);
    if (kind === "not-applied") {
      this.record(call, kind);
      req.socket.destroy();
      return;
    }
    if (kind === "throttled" || kind === "server-error") {
      this.record(call, kind);
      const error = errorResponse(service, kind === "throttled" ? "throttling" : "serverError", `injected by the chaos run (${kind})`, randomUUID());
      sendReply(res, error.status, error.headers, error.body);
      return;
    }
    if (kind === "latency") {
      const [min, max] = this.o.latencyMs ?? [20, 800];
      const latencyMs = Math.round(min + this.streams(caller, service, operation, "latency").float() * (max - min));
      this.record(call, kind, { latencyMs });
      setTimeout(() => this.relay(call, target, req, body, res, false), latencyMs);
      return;
    }
    this.relay(call, target, req, body, res, true);
  }

  /** Whether the caller dies after this call: its unit is doomed, and this call is the point. */
  private drawCrash(caller: string, call: Omit<Call, "caller">, req: http.IncomingMessage): boolean {
    const crash = this.o.crash;
    if (crash === undefined || POLLS.has(call.operation)) return false;
    const header = req.headers["x-local-invocation"];
    const unit = crash.unitOf ? crash.unitOf(caller, call, req) : unitOfWork(call, typeof header === "string" ? header : undefined, this.jobOfHandle);
    if (unit === undefined) return false;
    const id = `${caller}\u0000${unit}`;
    let doomed = this.units.get(id);
    if (doomed === undefined) {
      doomed = this.streams(caller, "unit").float() < this.crashRate;
      this.units.set(id, doomed);
    }
    // Drawn for every call of a unit, so the points stay in step whatever the rate.
    const point = this.streams(caller, call.service, call.operation, "crash").float() < KILL_POINT;
    if (!(doomed && point && this.crashRate > 0)) return false;
    // Its kill ends this run of the unit; a redelivery of it is drawn again.
    this.units.delete(id);
    return true;
  }

  /** Learns which job each received message names (the worker's SQS calls carry only its handle). */
  private learnHandles(text: string): void {
    const answer = parseJson(text);
    const messages = answer && Array.isArray(answer.Messages) ? answer.Messages : [];
    for (const m of messages) {
      if (!isObject(m) || typeof m.ReceiptHandle !== "string" || typeof m.Body !== "string") continue;
      const body = parseJson(m.Body);
      if (typeof body?.job_id === "string" && body.job_id !== "") this.jobOfHandle.set(m.ReceiptHandle, body.job_id);
    }
  }

  /** Kills the caller after a forwarded call; true when it died (its answer is then never sent). */
  private async crashCaller(call: Call, req: http.IncomingMessage): Promise<boolean> {
    const crash = this.o.crash;
    if (crash === undefined || this.crashRate === 0) return false;
    const killed = await crash.kill(call.caller, req).catch(() => undefined);
    if (killed === undefined) return false;
    const record: CrashRecord = {
      kind: "crash",
      seq: this.crashes.length + 1,
      atMs: Date.now(),
      caller: call.caller,
      process: killed.process,
      point: `${call.service} ${call.operation}`,
      callSeq: this.calls,
      work: killed.work,
      ...(killed.untilMs !== undefined ? { untilMs: killed.untilMs } : {}),
    };
    this.crashes.push(record);
    this.o.onCrash?.(record);
    return true;
  }

  /** Undefined: no fault for this call. */
  private draw(caller: string, service: string, operation: string): FaultKind | undefined {
    const rng = this.streams(caller, service, operation);
    // Both draws happen for every call, so turning the rate down keeps later calls' fates in step.
    const roll = rng.float();
    const kind = this.kinds[Math.floor(rng.float() * this.kinds.length)];
    return roll < this.rate ? kind : undefined;
  }

  private relay(call: Call, target: string, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse, loseResponse: boolean): void {
    const url = new URL(target);
    this.exchange(url, req, body, { abortWith: res }).then(
      (reply) => {
        if (this.o.crash !== undefined && call.operation === "ReceiveMessage") this.learnHandles(reply.body.toString("utf8"));
        this.o.onForwarded?.({ service: call.service, operation: call.operation, status: reply.status, request: call.text.slice(0, REQUEST_CHARS) });
        if (loseResponse) {
          this.record(call, "response-lost", { upstreamStatus: reply.status, response: reply.body.toString("utf8") });
          res.destroy();
          if (call.crash) void this.crashCaller(call, req);
          return;
        }
        if (!call.crash) return sendReply(res, reply.status, reply.headers, reply.body, reply.statusMessage);
        // The call took effect; its caller dies before it hears so.
        void this.crashCaller(call, req).then((died) => (died ? res.destroy() : sendReply(res, reply.status, reply.headers, reply.body, reply.statusMessage)));
      },
      (err: Error) => this.fail(res, url, err),
    );
  }

  private record(call: Call, kind: FaultKind, extra: { latencyMs?: number; upstreamStatus?: number; response?: string } = {}): void {
    const ids = idsOf(call.text, extra.response);
    const fault: FaultRecord = {
      seq: this.log.length + 1,
      atMs: Date.now(),
      caller: call.caller,
      service: call.service,
      operation: call.operation,
      kind,
      ...(extra.latencyMs !== undefined ? { latencyMs: extra.latencyMs } : {}),
      ...(extra.upstreamStatus !== undefined ? { upstreamStatus: extra.upstreamStatus } : {}),
      ...ids,
      request: call.text.slice(0, REQUEST_CHARS),
    };
    this.log.push(fault);
    this.o.onFault?.(fault);
  }
}

/**
 * Pure: the identifiers of a JSON-protocol request (and of its response, when that was lost):
 * QueueUrl, receipt handles, message ids (including those a lost SendMessage created or a lost
 * ReceiveMessage handed out), and a DynamoDB key.
 */
export function idsOf(request: string, response?: string): Pick<FaultRecord, "queueUrl" | "receiptHandles" | "messageIds" | "key"> {
  const body = parseJson(request);
  const receiptHandles = new Set<string>();
  const messageIds = new Set<string>();
  const entries = (b: Json | undefined, field: string): Json[] => (b && Array.isArray(b[field]) ? (b[field] as unknown[]).filter(isObject) : []);
  if (body) {
    if (typeof body.ReceiptHandle === "string") receiptHandles.add(body.ReceiptHandle);
    for (const e of entries(body, "Entries")) if (typeof e.ReceiptHandle === "string") receiptHandles.add(e.ReceiptHandle);
  }
  const answer = parseJson(response);
  if (answer) {
    if (typeof answer.MessageId === "string") messageIds.add(answer.MessageId);
    for (const m of [...entries(answer, "Messages"), ...entries(answer, "Successful")]) {
      if (typeof m.MessageId === "string") messageIds.add(m.MessageId);
      if (typeof m.ReceiptHandle === "string") receiptHandles.add(m.ReceiptHandle);
    }
  }
  const keySource = body?.Key ?? (isObject(body?.Item) ? body.Item : undefined);
  return {
    ...(typeof body?.QueueUrl === "string" ? { queueUrl: body.QueueUrl } : {}),
    receiptHandles: [...receiptHandles],
    messageIds: [...messageIds],
    ...(keySource !== undefined ? { key: JSON.stringify(keySource) } : {}),
  };
}
