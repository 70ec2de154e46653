/**
 * A faster clock for SQS. moto keeps visibility timeouts and delays in real seconds, so a local
 * run at `--speed 60` would still wait a real 30 s for a message to come back. This HTTP proxy
 * sits in front of moto (clients reach it as AWS_ENDPOINT_URL_SQS) and divides the SQS
 * durations in SDK v3 JSON-protocol requests by `speed`.
 *
 * Scaled: VisibilityTimeout and DelaySeconds (queue attributes on CreateQueue and
 * SetQueueAttributes, and the per-call values on ReceiveMessage, ChangeMessageVisibility[Batch]
 * and SendMessage[Batch]). Not scaled: WaitTimeSeconds (a long poll returns as soon as a message
 * arrives, so it never slows a run down), MessageRetentionPeriod and the RedrivePolicy (counts
 * and retention, not waits).
 *
 * Everything else is passed through byte for byte, streamed both ways, with the response's status
 * and headers as moto sent them. The Host header is forwarded unchanged, so moto builds queue URLs
 * on the proxy's origin: SDK v3 SQS sends each call to its QueueUrl's origin
 * (`useQueueUrlAsEndpoint`), so queues must be created (or their URLs looked up) through the
 * proxy for later calls to come back through it.
 *
 * SQS durations are whole seconds, so at speed 60 a 20 s park would last a real second, 60
 * simulated seconds. For ChangeMessageVisibility (how the platform parks and retries messages) the
 * proxy keeps the simulated duration exact: it forwards the rounded-up second, then makes the
 * message visible again (VisibilityTimeout 0 on the same receipt handle) when the exact simulated
 * time is up. Nobody else can hold that receipt handle meanwhile, since the message is invisible.
 *
 * It also keeps SQS's receipt-handle rule, which moto does not (sqs-receipts.ts): a DeleteMessage
 * with a handle superseded by a later receive succeeds without deleting, a ChangeMessageVisibility
 * with one is refused (ReceiptHandleIsInvalid), per entry in the batch forms. To learn the handles
 * it reads every ReceiveMessage answer it passes on. At speed 1 it does only that: the local run
 * puts such a proxy in front of the worker service, which keeps real time.
 *
 * Rewriting a body invalidates the SDK's SigV4 signature. That is fine here: moto does not verify
 * signatures. Do not put this proxy in front of real AWS.
 */
import { randomUUID } from "node:crypto";
import * as http from "node:http";
import { InterceptingProxy, readBody } from "./intercepting-proxy";
import {
  answerWithStale,
  DELETE_MESSAGE,
  DELETE_MESSAGE_BATCH,
  deletedHandles,
  HANDLE_OPERATIONS,
  type LocalAnswer,
  RECEIVE_MESSAGE,
  ReceiptHandles,
  splitStale,
} from "./sqs-receipts";

/** 0 stays 0 (no delay, or "visible now"); anything else becomes at least one second. */
export function scaleSeconds(seconds: number, speed: number): number {
  if (seconds <= 0) return seconds;
  return Math.max(1, Math.round(seconds / speed));
}

type Json = Record<string, unknown>;
type Rewrite = (body: Json, scale: (value: unknown) => unknown) => void;

const scaleAttributes: Rewrite = (body, scale) => {
  const attributes = body.Attributes;
  if (!isObject(attributes)) return;
  for (const key of ["VisibilityTimeout", "DelaySeconds"]) if (key in attributes) attributes[key] = scale(attributes[key]);
};
const scaleField =
  (key: string): Rewrite =>
  (body, scale) => {
    if (key in body) body[key] = scale(body[key]);
  };
const scaleEntries =
  (key: string): Rewrite =>
  (body, scale) => {
    if (!Array.isArray(body.Entries)) return;
    for (const entry of body.Entries) if (isObject(entry) && key in entry) entry[key] = scale(entry[key]);
  };

/** The JSON-protocol operations that carry an SQS duration, keyed by `x-amz-target`. */
const REWRITES: Record<string, Rewrite> = {
  "AmazonSQS.CreateQueue": scaleAttributes,
  "AmazonSQS.SetQueueAttributes": scaleAttributes,
  "AmazonSQS.ReceiveMessage": scaleField("VisibilityTimeout"),
  "AmazonSQS.ChangeMessageVisibility": scaleField("VisibilityTimeout"),
  "AmazonSQS.ChangeMessageVisibilityBatch": scaleEntries("VisibilityTimeout"),
  "AmazonSQS.SendMessage": scaleField("DelaySeconds"),
  "AmazonSQS.SendMessageBatch": scaleEntries("DelaySeconds"),
};

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class SqsClockProxy extends InterceptingProxy {
  private readonly target: URL;
  private readonly speed: number;
  private counts = { requests: 0, rewritten: 0 };
  /** Pending "visible again" calls by receipt handle: a later change to the same handle replaces it. */
  private readonly reveals = new Map<string, NodeJS.Timeout>();

  /** The receipt-handle rule's memory (sqs-receipts.ts); undefined when the rule is off. */
  readonly receipts: ReceiptHandles | undefined;

  /**
   * `receipts`: share one ReceiptHandles between the proxies that hand out the same queues' messages;
   * `false` turns the receipt-handle rule off (moto's behaviour). @default a ReceiptHandles of its own
   */
  /** Told of every message sent through this proxy (local/aws/sqs-move-tasks.ts keeps which reached a DLQ by a plain send). */
  private readonly onSent: ((queueUrl: string, messageIds: string[]) => void) | undefined;

  constructor(opts: { target: string; speed: number; receipts?: ReceiptHandles | false; onSent?: (queueUrl: string, messageIds: string[]) => void }) {
    super("SqsClockProxy");
    this.onSent = opts.onSent;
    if (!(opts.speed > 0) || !Number.isFinite(opts.speed)) throw new Error(`SqsClockProxy: speed must be a positive number, got ${opts.speed}`);
    this.target = new URL(opts.target);
    if (this.target.protocol !== "http:") throw new Error(`SqsClockProxy: target must be an http:// URL (moto), got ${opts.target}`);
    this.speed = opts.speed;
    this.receipts = opts.receipts === false ? undefined : (opts.receipts ?? new ReceiptHandles());
  }

  /** Listens on a free loopback port; resolves to the proxy's base URL. */
  async start(): Promise<string> {
    if (this.listening) throw new Error("SqsClockProxy already started");
    return this.listen((req, res) => this.handle(req, res));
  }

  /** Pending reveals die with the proxy. */
  protected override onStop(): void {
    for (const t of this.reveals.values()) clearTimeout(t);
    this.reveals.clear();
  }

  stats(): { requests: number; rewritten: number } {
    return { ...this.counts };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.counts.requests++;
    const rewrite = this.rewriteFor(req);
    const target = this.receipts ? jsonTarget(req) : undefined;
    const handles = target !== undefined && (HANDLE_OPERATIONS.has(target) || target === RECEIVE_MESSAGE) ? target : undefined;
    const send = this.onSent ? sendTarget(req) : undefined;
    if (!rewrite && handles === undefined && send === undefined) {
      this.stream(this.target, req, res);
      return;
    }
    // Only the few operations that carry a duration or a receipt handle are buffered; their bodies are small.
    readBody(req).then(
      (body) => this.intercept(req, res, body, rewrite, handles, send),
      () => res.destroy(),
    );
  }

  private intercept(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    received: Buffer,
    rewrite: Rewrite | undefined,
    handles: string | undefined,
    send?: string,
  ): void {
    let original: Buffer = received;
    const receipt = handles !== undefined ? this.receiptRule(handles, original) : undefined;
    if (receipt?.answer) {
      respond(res, receipt.answer);
      return;
    }
    if (receipt?.forward) original = receipt.forward;
    const body = rewrite ? this.rewriteBody(original, rewrite) : original;
    if (body !== original) this.counts.rewritten++;
    const target = req.headers["x-amz-target"];
    const reveal =
      rewrite && (target === "AmazonSQS.ChangeMessageVisibility" || target === "AmazonSQS.ChangeMessageVisibilityBatch")
        ? this.exactReveal(original, req.rawHeaders)
        : undefined;
    const onReply = send !== undefined ? this.sentListener(original) : receipt?.onReply;
    this.relay(req, res, withContentLength(req.rawHeaders, body.length), body, reveal, onReply);
  }

  /** Reads a SendMessage[Batch] answer for the ids it gave, and tells `onSent`; the answer goes on unchanged. */
  private sentListener(request: Buffer): (status: number, reply: Buffer) => Buffer {
    return (status, reply) => {
      if (status !== 200 || !this.onSent) return reply;
      try {
        const queueUrl = (JSON.parse(request.toString("utf8")) as { QueueUrl?: unknown }).QueueUrl;
        const parsed = JSON.parse(reply.toString("utf8")) as { MessageId?: unknown; Successful?: Array<{ MessageId?: unknown }> };
        const ids = [parsed.MessageId, ...(parsed.Successful ?? []).map((e) => e.MessageId)].filter((x): x is string => typeof x === "string");
        if (typeof queueUrl === "string" && ids.length > 0) this.onSent(queueUrl, ids);
      } catch {
        // Not JSON: moto's error page; nothing was sent.
      }
      return reply;
    };
  }

  /**
   * The receipt-handle rule (sqs-receipts.ts) for one buffered call: an answer given here (every
   * entry stale), or the body to forward (stale entries taken out) and what to do with moto's reply
   * (learn a receive's handles, forget deleted messages, add the stale entries to a batch's answer).
   */
  private receiptRule(
    target: string,
    original: Buffer,
  ): { answer?: LocalAnswer; forward?: Buffer; onReply?: (status: number, reply: Buffer) => Buffer } | undefined {
    const receipts = this.receipts;
    if (!receipts) return undefined;
    let request: unknown;
    try {
      request = JSON.parse(original.toString("utf8"));
    } catch {
      return undefined;
    }
    if (!isObject(request)) return undefined;
    const parseReply = (reply: Buffer): Json | undefined => {
      try {
        const parsed: unknown = JSON.parse(reply.toString("utf8"));
        return isObject(parsed) ? parsed : undefined;
      } catch {
        return undefined;
      }
    };
    if (target === RECEIVE_MESSAGE) {
      return {
        onReply: (status, reply) => {
          const parsed = status === 200 ? parseReply(reply) : undefined;
          const messages = parsed && Array.isArray(parsed.Messages) ? (parsed.Messages as Array<{ MessageId?: unknown; ReceiptHandle?: unknown }>) : [];
          // A pending reveal on a handle this receive superseded would act on the new receive's message (moto takes old handles).
          for (const old of receipts.received(messages)) this.cancelReveal(old);
          return reply;
        },
      };
    }
    const { forward, stale } = splitStale(target, request, (h) => receipts.isStale(h));
    const isDelete = target === DELETE_MESSAGE || target === DELETE_MESSAGE_BATCH;
    if (stale.length > 0) {
      if (isDelete) receipts.counts.deletesIgnored += stale.length;
      else receipts.counts.visibilityChangesRefused += stale.length;
    }
    if (forward === undefined) return { answer: answerWithStale(target, stale) };
    const onReply = (status: number, reply: Buffer): Buffer => {
      const parsed = parseReply(reply);
      if (isDelete && status === 200) for (const h of deletedHandles(target, forward, parsed ?? {})) receipts.deleted(h);
      if (stale.length === 0 || parsed === undefined) return reply;
      const merged = answerWithStale(target, stale, { status, body: parsed });
      return merged ? Buffer.from(merged.body, "utf8") : reply;
    };
    return { forward: stale.length > 0 ? Buffer.from(JSON.stringify(forward), "utf8") : undefined, onReply };
  }

  private cancelReveal(handle: string): void {
    const pending = this.reveals.get(handle);
    if (pending) clearTimeout(pending);
    this.reveals.delete(handle);
  }

  private rewriteFor(req: http.IncomingMessage): Rewrite | undefined {
    if (this.speed === 1 || req.method !== "POST") return undefined;
    const target = req.headers["x-amz-target"];
    const contentType = req.headers["content-type"] ?? "";
    if (typeof target !== "string" || !contentType.startsWith("application/x-amz-json-1.0")) return undefined;
    return REWRITES[target];
  }

  /** The rewritten body, or `original` itself when nothing changed (or it is not JSON: moto will say why). */
  private rewriteBody(original: Buffer, rewrite: Rewrite): Buffer {
    let body: unknown;
    try {
      body = JSON.parse(original.toString("utf8"));
    } catch {
      return original;
    }
    if (!isObject(body)) return original;
    let changed = false;
    rewrite(body, (value) => {
      // Queue attributes are strings in the JSON protocol ("120"); per-call values are numbers.
      const seconds = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
      if (typeof seconds !== "number" || !Number.isFinite(seconds)) return value;
      const scaled = scaleSeconds(seconds, this.speed);
      if (scaled === seconds) return value;
      changed = true;
      return typeof value === "string" ? String(scaled) : scaled;
    });
    return changed ? Buffer.from(JSON.stringify(body), "utf8") : original;
  }

  /**
   * For a ChangeMessageVisibility (or each entry of a batch) whose simulated duration is not a whole
   * real second: what to do once moto accepted the call (schedule the exact reveals), else undefined.
   */
  private exactReveal(original: Buffer, rawHeaders: string[]): ((status: number) => void) | undefined {
    let body: unknown;
    try {
      body = JSON.parse(original.toString("utf8"));
    } catch {
      return undefined;
    }
    if (!isObject(body) || typeof body.QueueUrl !== "string") return undefined;
    const queueUrl = body.QueueUrl;
    const changes = (Array.isArray(body.Entries) ? body.Entries : [body]).filter(
      (c): c is { ReceiptHandle: string; VisibilityTimeout: number } =>
        isObject(c) && typeof c.ReceiptHandle === "string" && typeof c.VisibilityTimeout === "number",
    );
    const timed: Array<{ handle: string; exactMs: number }> = [];
    for (const c of changes) {
      // A later change to the same handle replaces the pending reveal, whatever it asks.
      const previous = this.reveals.get(c.ReceiptHandle);
      if (previous) clearTimeout(previous);
      this.reveals.delete(c.ReceiptHandle);
      const exactMs = (c.VisibilityTimeout * 1000) / this.speed;
      if (c.VisibilityTimeout > 0 && exactMs < scaleSeconds(c.VisibilityTimeout, this.speed) * 1000 - 1) timed.push({ handle: c.ReceiptHandle, exactMs });
    }
    if (timed.length === 0) return undefined;
    // The reveal is a single ChangeMessageVisibility, whatever the original call was.
    const headers = withTarget(rawHeaders, "AmazonSQS.ChangeMessageVisibility");
    return (status) => {
      if (status !== 200) return;
      for (const { handle, exactMs } of timed) {
        const revealBody = Buffer.from(JSON.stringify({ QueueUrl: queueUrl, ReceiptHandle: handle, VisibilityTimeout: 0 }), "utf8");
        const timer = setTimeout(() => {
          this.reveals.delete(handle);
          const upstream = http.request({
            host: this.target.hostname,
            port: this.target.port,
            method: "POST",
            path: "/",
            headers: withContentLength(headers, revealBody.length),
            agent: this.agent,
          });
          // A handle that is gone (deleted, expired, refused in the batch) only means there is nothing to reveal.
          upstream.on("response", (reply) => reply.resume());
          upstream.on("error", () => undefined);
          upstream.end(revealBody);
        }, exactMs);
        timer.unref();
        this.reveals.set(handle, timer);
      }
    };
  }

  /** A buffered call on to moto; `onReply`, when given, reads (and may amend) moto's answer before it is sent on. */
  private relay(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    headers: string[],
    body: Buffer,
    onStatus?: (status: number) => void,
    onReply?: (status: number, reply: Buffer) => Buffer,
  ): void {
    this.forward(this.target, req, body, { headers, abortWith: res }).then(
      (reply) => {
        const status = reply.statusCode ?? 502;
        onStatus?.(status);
        reply.on("error", () => res.destroy());
        if (!onReply) {
          res.writeHead(status, reply.statusMessage, reply.rawHeaders);
          reply.pipe(res);
          return;
        }
        // The receipt-handle rule reads (and may amend) the answer: buffered, then sent with its own length.
        readBody(reply).then(
          (replyBody) => {
            const amended = onReply(status, replyBody);
            res.writeHead(status, reply.statusMessage, withContentLength(reply.rawHeaders, amended.length));
            res.end(amended);
          },
          () => res.destroy(),
        );
      },
      (err: Error) => this.fail(res, this.target, err),
    );
  }
}

/** SendMessage or SendMessageBatch, by its JSON-protocol target; undefined for anything else. */
function sendTarget(req: http.IncomingMessage): string | undefined {
  const target = jsonTarget(req);
  return target === "AmazonSQS.SendMessage" || target === "AmazonSQS.SendMessageBatch" ? target : undefined;
}

/** The JSON-protocol operation of a POST (`x-amz-target`), or undefined for anything else. */
function jsonTarget(req: http.IncomingMessage): string | undefined {
  const target = req.headers["x-amz-target"];
  const contentType = req.headers["content-type"] ?? "";
  if (req.method !== "POST" || typeof target !== "string" || !contentType.startsWith("application/x-amz-json-1.0")) return undefined;
  return target;
}

/** Sends an answer made here (the receipt-handle rule's), never reaching moto. */
function respond(res: http.ServerResponse, answer: LocalAnswer): void {
  const body = Buffer.from(answer.body, "utf8");
  res.writeHead(answer.status, { ...answer.headers, "content-length": String(body.length), "x-amzn-requestid": randomUUID() });
  res.end(body);
}

/** `rawHeaders` with its X-Amz-Target replaced: the operation the proxy sends on its own. */
function withTarget(rawHeaders: string[], target: string): string[] {
  const headers: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() !== "x-amz-target") headers.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  headers.push("X-Amz-Target", target);
  return headers;
}

/** `rawHeaders` with its length headers replaced, for a body the proxy rewrote. */
function withContentLength(rawHeaders: string[], length: number): string[] {
  const headers: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (name === "content-length" || name === "transfer-encoding") continue;
    headers.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  headers.push("Content-Length", String(length));
  return headers;
}
