/**
 * A hand-driven HTTP target on a loopback port, for the local load balancer's tests: it counts the
 * health checks it answered, answers them with a status the test sets, and holds each POST until the
 * test releases it (so "in flight" lasts exactly as long as the test wants, with no sleeps).
 */
import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface StubTarget {
  port: number;
  /** Health checks (GET) answered so far. */
  statusGets(): number;
  /** POSTs received so far (answered or held). */
  posts(): number;
  /** POSTs received and not yet answered. */
  held(): number;
  /** The status code the next health checks get. */
  setStatus(code: number): void;
  /** Answers every held POST with 200 and `{ target: name }`. */
  releaseAll(): void;
  close(): Promise<void>;
}

export async function startStubTarget(name: string, status = 200): Promise<StubTarget> {
  let code = status;
  let gets = 0;
  let posts = 0;
  const holding: http.ServerResponse[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    if (req.method === "GET") {
      gets += 1;
      req.resume();
      res.writeHead(code, { "content-type": "application/json" });
      res.end("{}");
      return;
    }
    posts += 1;
    req.resume();
    holding.push(res);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", () => done()));
  return {
    port: (server.address() as AddressInfo).port,
    statusGets: () => gets,
    posts: () => posts,
    held: () => holding.length,
    setStatus: (c) => {
      code = c;
    },
    releaseAll: () => {
      for (const res of holding.splice(0)) {
        const text = JSON.stringify({ target: name });
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
        res.end(text);
      }
    },
    close: async () => {
      const closed = new Promise<void>((done) => server.close(() => done()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** Polls `condition` every few ms; throws naming `what` after `timeoutMs`. */
export async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 5_000, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** What a caller sees from one request: the status and JSON body, or the fetch failure's name and message. */
export async function outcome(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown } | string> {
  try {
    const res = await fetch(url, init);
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body };
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  }
}
