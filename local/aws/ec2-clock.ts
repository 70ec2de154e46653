/**
 * EC2's times on the platform's clock. moto stamps an instance's `launchTime` in real time, while
 * the Lambda sandboxes read a simulated clock (`--speed`): a GPU started 2 real seconds ago would
 * look 2 real seconds old to a function that thinks 2 minutes have passed. This proxy sits in front
 * of moto for the Lambdas' EC2 calls (AWS_ENDPOINT_URL_EC2) and maps each `<launchTime>` of a
 * response onto the simulated clock, t0 + (real − t0) × speed, the same mapping the sandbox uses.
 * moto also keeps an instance's first launch time across a stop and start, where EC2 resets it to
 * the start: the proxy remembers when it forwarded each StartInstances and reports that instead.
 * moto also stops an instance at once, where EC2 takes a while (`stopping`, during which
 * StartInstances is refused with IncorrectInstanceState). For `stopDelayRealMs` after each
 * StopInstances it forwards, the proxy reports the instance as `stopping` and refuses its start the
 * way EC2 does, so the platform's handling of that window runs locally too.
 * Requests pass through unchanged. moto checks no signatures; never put this in front of AWS.
 */
import * as http from "node:http";
import { closeServer, listenOnLoopback } from "./loopback";

/**
 * Pure: every `<launchTime>` in an EC2 XML response, on the simulated clock; for an instance in
 * `startedAt` (real ms of its last start), that start instead of moto's first launch.
 */
export function simulateLaunchTimes(xml: string, clock: { t0Ms: number; speed: number }, startedAt: ReadonlyMap<string, number> = new Map()): string {
  const sim = (real: number) => new Date(clock.t0Ms + (real - clock.t0Ms) * clock.speed).toISOString();
  // An instance's item names its id before its launch time.
  return xml.replace(/(<instanceId>(i-[0-9a-f]+)<\/instanceId>[\s\S]*?)?<launchTime>([^<]+)<\/launchTime>/g, (whole, head: string | undefined, id: string | undefined, value: string) => {
    const real = (id !== undefined ? startedAt.get(id) : undefined) ?? Date.parse(value);
    if (!Number.isFinite(real)) return whole;
    return `${head ?? ""}<launchTime>${sim(real)}</launchTime>`;
  });
}

/** Pure: the instance ids of a query-protocol `action` request body (StartInstances, StopInstances), else none. */
export function instanceIdsOf(action: string, body: string): string[] {
  const params = new URLSearchParams(body);
  if (params.get("Action") !== action) return [];
  return [...params.entries()].filter(([k]) => /^InstanceId\.\d+$/.test(k)).map(([, v]) => v);
}

export const startedInstanceIds = (body: string): string[] => instanceIdsOf("StartInstances", body);

/** Pure: each of `ids` reported `stopped` becomes `stopping` (EC2's code 64), as during a real stop. */
export function stillStopping(xml: string, ids: readonly string[]): string {
  let out = xml;
  for (const id of ids) {
    const escaped = id.replace(/[^a-z0-9-]/gi, "");
    out = out.replace(new RegExp(`(<instanceId>${escaped}</instanceId>[\\s\\S]*?<instanceState>\\s*)<code>80</code>(\\s*)<name>stopped</name>`), "$1<code>64</code>$2<name>stopping</name>");
  }
  return out;
}

/** EC2's refusal of a start while the instance stops, as its query protocol answers it. */
export function incorrectStateError(id: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>IncorrectInstanceState</Code><Message>The instance '${id}' is not in a state from which it can be started.</Message></Error></Errors><RequestID>local-ec2-clock</RequestID></Response>`;
}

export class Ec2ClockProxy {
  private server?: http.Server;
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly startedAt = new Map<string, number>();
  /** Real ms until which each instance the proxy saw stopped is still `stopping`. */
  private readonly stoppingUntil = new Map<string, number>();

  constructor(private readonly opts: { target: string; clock: { t0Ms: number; speed: number }; stopDelayRealMs?: number }) {}

  private stopping(): string[] {
    const now = Date.now();
    return [...this.stoppingUntil].filter(([, until]) => until > now).map(([id]) => id);
  }

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    return listenOnLoopback(this.server);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await closeServer(server);
    this.agent.destroy();
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => this.forward(req, Buffer.concat(chunks), res));
  }

  private forward(req: http.IncomingMessage, requestBody: Buffer, res: http.ServerResponse): void {
    const text = requestBody.toString("utf8");
    const startedNow = startedInstanceIds(text);
    const refused = startedNow.find((id) => this.stopping().includes(id));
    if (refused) {
      const body = incorrectStateError(refused);
      res.writeHead(400, { "content-type": "text/xml", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const stoppedNow = instanceIdsOf("StopInstances", text);
    const target = new URL(this.opts.target);
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: this.agent },
      (up) => {
        const chunks: Buffer[] = [];
        up.on("data", (c: Buffer) => chunks.push(c));
        up.on("end", () => {
          if ((up.statusCode ?? 500) < 300) {
            for (const id of startedNow) this.startedAt.set(id, Date.now());
            for (const id of stoppedNow) this.stoppingUntil.set(id, Date.now() + (this.opts.stopDelayRealMs ?? 0));
          }
          const xml = simulateLaunchTimes(Buffer.concat(chunks).toString("utf8"), this.opts.clock, this.startedAt);
          const body = Buffer.from(stoppedNow.length > 0 ? xml : stillStopping(xml, this.stopping()), "utf8");
          const headers = { ...up.headers, "content-length": String(body.length) };
          delete headers["transfer-encoding"];
          res.writeHead(up.statusCode ?? 502, headers);
          res.end(body);
        });
        up.on("error", () => res.destroy());
      },
    );
    upstream.on("error", (err) => {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`moto unreachable: ${err.message}`);
    });
    upstream.end(requestBody);
  }
}
