/**
 * What the local run's HTTP proxies share (the stand-ins in front of moto, the chaos run's fault
 * proxy in front of those): servers on free loopback ports, each call handed to the proxy's own
 * handler, forwarded over one keep-alive agent with the client's method, path and headers (Host
 * included, so moto builds URLs on the proxy's origin), the reply streamed back or read in full to
 * be amended, and a stop that does not hang. A subclass decides only what it intercepts. No proxy
 * here checks or makes a signature: never put one in front of AWS.
 */
import * as http from "node:http";
import type { Readable } from "node:stream";
import { LoopbackServer } from "./loopback";

/** An answer a proxy sends: one made here, or an upstream's read in full (and maybe amended). */
export interface Reply {
  status: number;
  statusMessage?: string;
  headers: http.OutgoingHttpHeaders | http.IncomingHttpHeaders;
  body: Buffer | string;
}

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON object's text parsed, or undefined for anything else (none, moto's error page, a query or XML body, a malformed call). */
export function parseJson(text: Buffer | string | undefined): Json | undefined {
  const s = text?.toString();
  // Only an object is wanted: skip JSON.parse's throw for the query and XML bodies a proxy mostly sees.
  if (!s?.trimStart().startsWith("{")) return undefined;
  try {
    const parsed: unknown = JSON.parse(s);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Text escaped for an XML element. */
export const xmlText = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

interface ForwardOptions {
  /** The client's response: when it closes unfinished (the client gave up), the upstream call is aborted. */
  abortWith?: http.ServerResponse;
}

export abstract class InterceptingProxy {
  private readonly servers = new Set<LoopbackServer>();
  /** Keep-alive to the upstream: a fresh TCP connection per call would add latency to every poll. */
  protected readonly agent = new http.Agent({ keepAlive: true });

  /** `label` names the proxy in the 502 it answers when its upstream does not. */
  constructor(protected readonly label: string) {}

  /** True between the first listen and stop. */
  protected get listening(): boolean {
    return this.servers.size > 0;
  }

  /** A server on a free loopback port that hands every call to `handle`; resolves to its base URL. */
  protected async listen(handle: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<string> {
    const server = new LoopbackServer(handle);
    this.servers.add(server);
    const { host, port } = await server.start();
    return `http://${host}:${port}`;
  }

  /** Closes every server, then lets go of the agent. */
  async stop(): Promise<void> {
    const servers = [...this.servers];
    this.servers.clear();
    await Promise.all(servers.map((server) => server.close()));
    this.agent.destroy();
  }

  /**
   * Sends the client's call on to `target` (its method, path and headers; a buffered body with its
   * own length) with `body`, a buffer or `"stream"` (the client's body piped through), and resolves
   * when the upstream's reply starts. Rejects when the upstream does not answer.
   */
  private forward(target: URL, req: http.IncomingMessage, body: Buffer | "stream", opts: ForwardOptions = {}): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const upstream = http.request({
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: body === "stream" ? req.rawHeaders : withLength(req.headers, body.length),
        agent: this.agent,
      });
      upstream.on("response", resolve);
      upstream.on("error", reject);
      const res = opts.abortWith;
      // A client that gives up (an aborted long poll, a closed socket) must not leave a call to the upstream running.
      res?.on("close", () => {
        if (!res.writableFinished) upstream.destroy();
      });
      if (body === "stream") {
        req.on("error", () => upstream.destroy());
        req.pipe(upstream);
      } else upstream.end(body);
    });
  }

  /** `forward` with a buffered body, and the reply read in full. */
  protected async exchange(
    target: URL,
    req: http.IncomingMessage,
    body: Buffer,
    opts: ForwardOptions = {},
  ): Promise<Reply & { headers: http.IncomingHttpHeaders; body: Buffer }> {
    const reply = await this.forward(target, req, body, opts);
    const replyBody = await readBody(reply);
    return { status: reply.statusCode ?? 502, statusMessage: reply.statusMessage, headers: reply.headers, body: replyBody };
  }

  /** Passes the call through untouched, streamed both ways: the reply's status, headers and body as the upstream sent them. */
  protected stream(target: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
    this.forward(target, req, "stream", { abortWith: res }).then(
      (reply) => {
        reply.on("error", () => res.destroy());
        res.writeHead(reply.statusCode ?? 502, reply.statusMessage, reply.rawHeaders);
        reply.pipe(res);
      },
      (err: Error) => this.fail(res, target, err),
    );
  }

  /** Reads the call in full and sends the reply `answer` makes of it; a 502 when it fails (the upstream at `target` did not answer). */
  protected answerBuffered(target: URL, req: http.IncomingMessage, res: http.ServerResponse, answer: (body: Buffer) => Promise<Reply> | Reply): void {
    readBody(req)
      .then(answer)
      .then(
        (r) => sendReply(res, r.status, r.headers, r.body, r.statusMessage),
        (err: Error) => this.fail(res, target, err),
      );
  }

  /** The upstream did not answer: a 502 saying so, or the connection dropped when the reply had begun. */
  protected fail(res: http.ServerResponse, target: URL, err: Error): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(`${this.label}: ${target.origin} did not answer: ${err.message}`);
  }
}

/** A body read in full (a client's request or an upstream's reply); rejects when the stream fails. */
export function readBody(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("end", () => resolve(Buffer.concat(chunks)));
  });
}

/** Sends a reply made or amended by a proxy, with its own length (any transfer-encoding dropped). */
export function sendReply(
  res: http.ServerResponse,
  status: number,
  headers: http.OutgoingHttpHeaders | http.IncomingHttpHeaders,
  body: Buffer | string,
  statusMessage?: string,
): void {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  const out = withLength(headers, bytes.length);
  if (statusMessage !== undefined) res.writeHead(status, statusMessage, out);
  else res.writeHead(status, out);
  res.end(bytes);
}

/** Headers for a body the proxy read in full (and may have rewritten): its own length, no transfer-encoding. */
export function withLength(headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders, length: number): http.OutgoingHttpHeaders {
  const { "transfer-encoding": _chunked, ...rest } = headers;
  return { ...rest, "content-length": String(length) };
}
