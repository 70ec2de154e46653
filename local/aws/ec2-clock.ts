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
import type * as http from "node:http";
import { InterceptingProxy, type Reply } from "./intercepting-proxy";

/**
 * Pure: every `<launchTime>` in an EC2 XML response, on the simulated clock; for an instance in
 * `startedAt` (real ms of its last start), that start instead of moto's first launch.
 */
export function simulateLaunchTimes(xml: string, clock: { t0Ms: number; speed: number }, startedAt: ReadonlyMap<string, number> = new Map()): string {
  const sim = (real: number) => new Date(clock.t0Ms + (real - clock.t0Ms) * clock.speed).toISOString();
  // An instance's item names its id before its launch time.
  return xml.replace(
    /(<instanceId>(i-[0-9a-f]+)<\/instanceId>[\s\S]*?)?<launchTime>([^<]+)<\/launchTime>/g,
    (whole, head: string | undefined, id: string | undefined, value: string) => {
      const real = (id !== undefined ? startedAt.get(id) : undefined) ?? Date.parse(value);
      if (!Number.isFinite(real)) return whole;
      return `${head ?? ""}<launchTime>${sim(real)}</launchTime>`;
    },
  );
}

/** Pure: the instance ids of a query-protocol `action` request body (StartInstances, StopInstances), else none. */
export function instanceIdsOf(action: string, body: string): string[] {
  const params = new URLSearchParams(body);
  if (params.get("Action") !== action) return [];
  return [...params.entries()].filter(([k]) => /^InstanceId\.\d+$/.test(k)).map(([, v]) => v);
}

/** Pure: each of `ids` reported `stopped` becomes `stopping` (EC2's code 64), as during a real stop. */
function stillStopping(xml: string, ids: readonly string[]): string {
  let out = xml;
  for (const id of ids) {
    const escaped = id.replace(/[^a-z0-9-]/gi, "");
    out = out.replace(
      new RegExp(`(<instanceId>${escaped}</instanceId>[\\s\\S]*?<instanceState>\\s*)<code>80</code>(\\s*)<name>stopped</name>`),
      "$1<code>64</code>$2<name>stopping</name>",
    );
  }
  return out;
}

/** EC2's refusal of a start while the instance stops, as its query protocol answers it. */
function incorrectStateError(id: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>IncorrectInstanceState</Code><Message>The instance '${id}' is not in a state from which it can be started.</Message></Error></Errors><RequestID>local-ec2-clock</RequestID></Response>`;
}

export class Ec2ClockProxy extends InterceptingProxy {
  private readonly target: URL;
  private readonly startedAt = new Map<string, number>();
  /** Real ms until which each instance the proxy saw stopped is still `stopping`. */
  private readonly stoppingUntil = new Map<string, number>();

  constructor(private readonly opts: { target: string; clock: { t0Ms: number; speed: number }; stopDelayRealMs: number }) {
    super("Ec2ClockProxy");
    this.target = new URL(opts.target);
  }

  private stopping(): string[] {
    const now = Date.now();
    return [...this.stoppingUntil].filter(([, until]) => until > now).map(([id]) => id);
  }

  /** Listens on a free loopback port; resolves to the proxy's base URL. */
  start(): Promise<string> {
    return this.listen((req, res) => this.answerBuffered(this.target, req, res, (body) => this.answer(req, body)));
  }

  private async answer(req: http.IncomingMessage, requestBody: Buffer): Promise<Reply> {
    const text = requestBody.toString("utf8");
    const startedNow = instanceIdsOf("StartInstances", text);
    const refused = startedNow.find((id) => this.stopping().includes(id));
    if (refused) return { status: 400, headers: { "content-type": "text/xml" }, body: incorrectStateError(refused) };
    const stoppedNow = instanceIdsOf("StopInstances", text);
    const up = await this.exchange(this.target, req, requestBody);
    if (up.status < 300) {
      for (const id of startedNow) this.startedAt.set(id, Date.now());
      for (const id of stoppedNow) this.stoppingUntil.set(id, Date.now() + this.opts.stopDelayRealMs);
    }
    const xml = simulateLaunchTimes(up.body.toString("utf8"), this.opts.clock, this.startedAt);
    return { ...up, body: stoppedNow.length > 0 ? xml : stillStopping(xml, this.stopping()) };
  }
}
