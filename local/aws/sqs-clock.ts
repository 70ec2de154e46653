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
 * At speed 1 it only tells `onSent` of the messages sent through it: the local run puts such a
 * proxy in front of the worker service, which keeps real time. (SQS's receipt-handle rule is
 * moto's own here: local/aws/moto-server.py, `latest_receipts_only`.)
 *
 * Rewriting a body invalidates the SDK's SigV4 signature. That is fine here: moto does not verify
 * signatures. Do not put this proxy in front of real AWS.
 */
import * as http from "node:http";
import { InterceptingProxy, isObject, type Json, parseJson, type Reply, withLength } from "./intercepting-proxy";

const CHANGE_VISIBILITY = "AmazonSQS.ChangeMessageVisibility";
const CHANGE_VISIBILITY_BATCH = "AmazonSQS.ChangeMessageVisibilityBatch";

/** 0 stays 0 (no delay, or "visible now"); anything else becomes at least one second. */
export function scaleSeconds(seconds: number, speed: number): number {
  if (seconds <= 0) return seconds;
  return Math.max(1, Math.round(seconds / speed));
}

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

const SENDS: ReadonlySet<string> = new Set(["AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch"]);

export class SqsClockProxy extends InterceptingProxy {
  private readonly target: URL;
  private readonly speed: number;
  private counts = { requests: 0, rewritten: 0 };
  /** Pending "visible again" calls by receipt handle: a later change to the same handle replaces it. */
  private readonly reveals = new Map<string, NodeJS.Timeout>();

  /** Told of every message sent through this proxy (local/aws/sqs-move-tasks.ts keeps which reached a DLQ by a plain send). */
  private readonly onSent: ((queueUrl: string, messageIds: string[]) => void) | undefined;

  constructor(opts: { target: string; speed: number; onSent?: (queueUrl: string, messageIds: string[]) => void }) {
    super("SqsClockProxy");
    this.onSent = opts.onSent;
    if (!(opts.speed > 0) || !Number.isFinite(opts.speed)) throw new Error(`SqsClockProxy: speed must be a positive number, got ${opts.speed}`);
    this.target = new URL(opts.target);
    if (this.target.protocol !== "http:") throw new Error(`SqsClockProxy: target must be an http:// URL (moto), got ${opts.target}`);
    this.speed = opts.speed;
  }

  /** Listens on a free loopback port; resolves to the proxy's base URL. */
  async start(): Promise<string> {
    if (this.listening) throw new Error("SqsClockProxy already started");
    return this.listen((req, res) => this.handle(req, res));
  }

  /** Pending reveals die with the proxy. */
  override async stop(): Promise<void> {
    await super.stop();
    for (const t of this.reveals.values()) clearTimeout(t);
    this.reveals.clear();
  }

  stats(): { requests: number; rewritten: number } {
    return { ...this.counts };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.counts.requests++;
    const op = jsonTarget(req);
    if (op === undefined || !this.intercepts(op)) return this.stream(this.target, req, res);
    // Only the few operations that carry a duration or a sent message are buffered; their bodies are small.
    this.answerBuffered(this.target, req, res, (body) => this.answer(req, res, op, body));
  }

  private intercepts(op: string): boolean {
    return (this.speed !== 1 && REWRITES[op] !== undefined) || (this.onSent !== undefined && SENDS.has(op));
  }

  /** One buffered call: the clock's rewrite and exact reveals, and `onSent`, around moto's answer. */
  private async answer(req: http.IncomingMessage, res: http.ServerResponse, op: string, raw: Buffer): Promise<Reply> {
    const request = parseJson(raw);
    // Not JSON: moto will say why.
    if (request === undefined) return this.exchange(this.target, req, raw, { abortWith: res });
    // Read before the rewrite scales the durations it names.
    const reveal = this.exactReveal(op, request, req.headers);
    const rewritten = this.rewrite(op, request);
    if (rewritten) this.counts.rewritten++;
    const up = await this.exchange(this.target, req, rewritten ? Buffer.from(JSON.stringify(request), "utf8") : raw, { abortWith: res });
    if (up.status === 200) reveal?.();
    if (up.status === 200 && SENDS.has(op)) this.noteSent(request, parseJson(up.body));
    return up;
  }

  /** Tells `onSent` the ids a SendMessage[Batch] answer gave. */
  private noteSent(request: Json, reply: Json | undefined): void {
    const batch = Array.isArray(reply?.Successful) ? reply.Successful : [];
    const ids = [reply?.MessageId, ...batch.map((e) => (isObject(e) ? e.MessageId : undefined))].filter((x): x is string => typeof x === "string");
    if (typeof request.QueueUrl === "string" && ids.length > 0) this.onSent?.(request.QueueUrl, ids);
  }

  private cancelReveal(handle: string): void {
    clearTimeout(this.reveals.get(handle));
    this.reveals.delete(handle);
  }

  /** Scales the call's SQS durations in place (the REWRITES table); true when one changed. */
  private rewrite(op: string, body: Json): boolean {
    let changed = false;
    const rewrite = this.speed === 1 ? undefined : REWRITES[op];
    rewrite?.(body, (value) => {
      // Queue attributes are strings in the JSON protocol ("120"); per-call values are numbers.
      const seconds = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
      if (typeof seconds !== "number" || !Number.isFinite(seconds)) return value;
      const scaled = scaleSeconds(seconds, this.speed);
      if (scaled === seconds) return value;
      changed = true;
      return typeof value === "string" ? String(scaled) : scaled;
    });
    return changed;
  }

  /**
   * For a ChangeMessageVisibility (or each entry of a batch) whose simulated duration is not a whole
   * real second: what to do once moto accepted the call (schedule the exact reveals), else undefined.
   * A later change to the same handle replaces its pending reveal, whatever it asks.
   */
  private exactReveal(op: string, body: Json, headers: http.IncomingHttpHeaders): (() => void) | undefined {
    if (this.speed === 1 || (op !== CHANGE_VISIBILITY && op !== CHANGE_VISIBILITY_BATCH) || typeof body.QueueUrl !== "string") return undefined;
    const queueUrl = body.QueueUrl;
    const changes = (Array.isArray(body.Entries) ? body.Entries : [body]).filter(
      (c): c is { ReceiptHandle: string; VisibilityTimeout: number } =>
        isObject(c) && typeof c.ReceiptHandle === "string" && typeof c.VisibilityTimeout === "number",
    );
    const timed: Array<{ handle: string; exactMs: number }> = [];
    for (const c of changes) {
      this.cancelReveal(c.ReceiptHandle);
      const exactMs = (c.VisibilityTimeout * 1000) / this.speed;
      if (c.VisibilityTimeout > 0 && exactMs < scaleSeconds(c.VisibilityTimeout, this.speed) * 1000 - 1) timed.push({ handle: c.ReceiptHandle, exactMs });
    }
    if (timed.length === 0) return undefined;
    return () => {
      for (const { handle, exactMs } of timed) {
        const timer = setTimeout(() => {
          this.reveals.delete(handle);
          this.reveal(queueUrl, handle, headers);
        }, exactMs);
        timer.unref();
        this.reveals.set(handle, timer);
      }
    };
  }

  /** Makes the message visible now: a single ChangeMessageVisibility to 0 on its handle (whatever the original call was), with that call's headers. */
  private reveal(queueUrl: string, handle: string, headers: http.IncomingHttpHeaders): void {
    const body = JSON.stringify({ QueueUrl: queueUrl, ReceiptHandle: handle, VisibilityTimeout: 0 });
    const upstream = http.request(this.target, {
      method: "POST",
      headers: withLength({ ...headers, "x-amz-target": CHANGE_VISIBILITY }, Buffer.byteLength(body)),
      agent: this.agent,
    });
    // A handle that is gone (deleted, expired, refused in the batch, superseded by a later receive) only means there is nothing to reveal.
    upstream.on("response", (reply) => reply.resume());
    upstream.on("error", () => undefined);
    upstream.end(body);
  }
}

/** The JSON-protocol operation of a POST (`x-amz-target`), or undefined for anything else. */
function jsonTarget(req: http.IncomingMessage): string | undefined {
  const target = req.headers["x-amz-target"];
  const contentType = req.headers["content-type"] ?? "";
  if (req.method !== "POST" || typeof target !== "string" || !contentType.startsWith("application/x-amz-json-1.0")) return undefined;
  return target;
}
