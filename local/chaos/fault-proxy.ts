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
 * Like the clock proxies, it forwards the Host header unchanged, so moto builds queue URLs on this
 * proxy's origin, and it checks no signature: never put it in front of AWS.
 */
import { randomUUID } from "node:crypto";
import type * as http from "node:http";
import { InterceptingProxy, readBody, sendReply } from "../aws/intercepting-proxy";
import { errorResponse, operationOf, serviceOf } from "./protocols";
import { KeyedStreams } from "./rng";

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

/** A call that reached moto (possibly with its response lost afterwards). */
export interface ForwardedCall {
  atMs: number;
  caller: string;
  service: string;
  operation: string;
  status: number;
  responseLost: boolean;
  request: string;
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
}

const REQUEST_CHARS = 4000;

export class FaultProxy extends InterceptingProxy {
  private readonly streams: KeyedStreams;
  private readonly log: FaultRecord[] = [];
  private readonly kinds: readonly FaultKind[];
  private rate: number;
  private calls = 0;

  constructor(private readonly o: FaultProxyOptions) {
    super("FaultProxy");
    if (!(o.rate >= 0 && o.rate <= 1)) throw new Error(`FaultProxy: rate must be from 0 to 1, got ${o.rate}`);
    this.rate = o.rate;
    this.kinds = o.kinds ?? FAULT_KINDS;
    if (this.kinds.length === 0) throw new Error("FaultProxy: no fault kinds to draw from");
    this.streams = new KeyedStreams(o.seed);
  }

  /** A port for `caller`'s calls, routed by service to `upstream`; resolves to its base URL. */
  front(caller: string, upstream: Upstreams): Promise<string> {
    return this.listen((req, res) => this.handle(caller, upstream, req, res));
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

  /** 0 turns faults off (the run's final accounting), without restarting anything. */
  setRate(rate: number): void {
    this.rate = rate;
  }

  private handle(caller: string, upstream: Upstreams, req: http.IncomingMessage, res: http.ServerResponse): void {
    readBody(req).then(
      (body) => this.intercept(caller, upstream, req, body, res),
      () => res.destroy(),
    );
  }

  private intercept(caller: string, upstream: Upstreams, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
    const text = body.toString("utf8");
    const service = serviceOf(req.headers);
    const operation = operationOf(req.headers, req.method ?? "POST", req.url ?? "/", text);
    this.calls += 1;
    const kind = this.draw(caller, service, operation);
    const target = upstream.byService[service] ?? upstream.aws;
    const call = { caller, service, operation, text };
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
      const latencyMs = Math.round(min + this.streams.for(caller, service, operation, "latency").float() * (max - min));
      this.record(call, kind, { latencyMs });
      setTimeout(() => this.relay(call, target, req, body, res, false), latencyMs);
      return;
    }
    this.relay(call, target, req, body, res, true);
  }

  /** Undefined: no fault for this call. */
  private draw(caller: string, service: string, operation: string): FaultKind | undefined {
    const rng = this.streams.for(caller, service, operation);
    // Both draws happen for every call, so turning the rate down keeps later calls' fates in step.
    const roll = rng.float();
    const kind = this.kinds[Math.floor(rng.float() * this.kinds.length)];
    return roll < this.rate ? kind : undefined;
  }

  private relay(
    call: { caller: string; service: string; operation: string; text: string },
    target: string,
    req: http.IncomingMessage,
    body: Buffer,
    res: http.ServerResponse,
    loseResponse: boolean,
  ): void {
    const url = new URL(target);
    this.exchange(url, req, body, { abortWith: res }).then(
      (reply) => {
        this.o.onForwarded?.({
          atMs: Date.now(),
          caller: call.caller,
          service: call.service,
          operation: call.operation,
          status: reply.status,
          responseLost: loseResponse,
          request: call.text.slice(0, REQUEST_CHARS),
        });
        if (loseResponse) {
          this.record(call, "response-lost", { upstreamStatus: reply.status, response: reply.body.toString("utf8") });
          res.destroy();
          return;
        }
        sendReply(res, reply.status, reply.headers, reply.body, reply.statusMessage);
      },
      (err: Error) => this.fail(res, url, err),
    );
  }

  private record(
    call: { caller: string; service: string; operation: string; text: string },
    kind: FaultKind,
    extra: { latencyMs?: number; upstreamStatus?: number; response?: string } = {},
  ): void {
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

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function parseJson(text: string | undefined): Json | undefined {
  if (!text || !text.startsWith("{")) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
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
