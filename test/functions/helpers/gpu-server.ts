import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FetchFn } from "../../../functions/ingest/gpu-http";

export interface ReceivedRequest {
  method: string;
  url: string;
  contentType: string | undefined;
  body: unknown;
}

export type GpuBehaviour = { status: number } | "hang";

/** Plays the GPU service on 127.0.0.1: records each request and replies as configured. */
export class FakeGpuService {
  readonly requests: ReceivedRequest[] = [];
  behaviour: GpuBehaviour = { status: 200 };
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void readBody(req).then((raw) => {
        this.requests.push({
          method: req.method ?? "",
          url: req.url ?? "",
          contentType: req.headers["content-type"],
          body: raw ? JSON.parse(raw) : undefined,
        });
        if (this.behaviour === "hang") return; // the client's timeout must end this
        res.writeHead(this.behaviour.status, { "content-type": "application/json" });
        res.end(JSON.stringify({ status: this.behaviour.status < 300 ? "ok" : "error" }));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** The injected URL builder: whatever private IP the handler resolved, traffic stays local. */
  urlFor(path: string): (privateIp: string) => string {
    return () => `http://127.0.0.1:${this.port}${path}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** A fetch that refuses anything but loopback, so a wrong URL builder can never reach a VPC address. */
export const loopbackOnlyFetch: FetchFn = (url, init) => {
  const host = new URL(url).hostname;
  if (host !== "127.0.0.1" && host !== "localhost") {
    return Promise.reject(new Error(`test fetch refused non-loopback host ${host}`));
  }
  return fetch(url, init);
};
