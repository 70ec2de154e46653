/**
 * An HTTP server on a free loopback port that can be closed at once: what the GPU's fake models,
 * metadata endpoints, the fleet's load balancer and the proxies in front of moto each stand on. Closing destroys the open sockets
 * too (kept-alive ones would otherwise hold `close()` open), which is also how a gone host cuts off
 * the requests it held.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export class LoopbackServer {
  private server?: http.Server;

  constructor(private readonly handler: http.RequestListener) {}

  async start(): Promise<{ host: string; port: number }> {
    if (this.server) throw new Error("LoopbackServer already started");
    const server = http.createServer(this.handler);
    server.keepAliveTimeout = 60_000;
    this.server = server;
    await new Promise<void>((done, fail) => {
      server.once("error", fail);
      server.listen(0, "127.0.0.1", () => done());
    });
    return { host: "127.0.0.1", port: (server.address() as AddressInfo).port };
  }

  /** Stops listening and cuts off every open connection; resolves once the server has closed. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise<void>((done) => server.close(() => done()));
    server.closeAllConnections();
    await closed;
  }
}

/** A JSON answer with its length; nothing when the response is already gone or answered. */
export function replyJson(res: http.ServerResponse, status: number, body: object): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
