/**
 * One fleet instance's service (local/hosts/fleet-service.ts) on loopback: unreachable while it
 * boots, `slots` windows at a time with the rest waiting in arrival order, one processing per
 * Idempotency-Key, its status in simulated seconds, and `kill()` cutting off what it holds. Boot and
 * idle times run on a hand-driven clock (`now`); only the window's own duration is real.
 */
import { expect } from "chai";
import { FleetInstanceService, type FleetServiceOptions, type ProcessedWindow, SharedKeys } from "../../../local/hosts/fleet-service";
import { outcome, until } from "../helpers/stub-target";

const SERVICE_PATH = "/ingest/window";
const STATUS_PATH = "/status";

describe("local fleet instance service", function () {
  this.timeout(20_000);
  let svc: FleetInstanceService;
  let base: string;
  let processed: ProcessedWindow[];
  // A hand-driven clock: boot and idle time pass when the test says so.
  let clock: number;

  async function start(opts: Partial<FleetServiceOptions> = {}): Promise<void> {
    processed = [];
    svc = new FleetInstanceService({
      instanceId: "i-0001",
      servingFromMs: 1_000_000,
      windowRealMs: 0,
      slots: 1,
      servicePath: SERVICE_PATH,
      statusPath: STATUS_PATH,
      speed: 60,
      onProcessed: (w) => processed.push(w),
      now: () => clock,
      ...opts,
    });
    const { host, port } = await svc.start();
    base = `http://${host}:${port}`;
  }
  const post = (body: string, key?: string, path = SERVICE_PATH) =>
    outcome(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) }, body });
  const status = () => outcome(`${base}${STATUS_PATH}`);
  /** Sends a POST and waits until the service holds it (working or waiting), so arrival order is the call order. */
  async function sendHeld(body: string, key?: string): Promise<{ answer: ReturnType<typeof post> }> {
    const before = svc.outstanding();
    const answer = post(body, key);
    await until("the window to arrive", () => svc.outstanding() === before + 1);
    // Wrapped: an async function returning the promise itself would wait for the answer.
    return { answer };
  }

  beforeEach(() => {
    clock = 1_000_000 - 30_000;
  });
  afterEach(async () => {
    await svc.kill();
  });

  it("is unreachable while it boots (the socket is destroyed, fetch rejects), then serves from servingFromMs", async () => {
    // Prepare
    await start();
    // Act
    const bootingPost = await post('{"w":0}');
    const bootingStatus = await status();
    const servingBefore = svc.serving();
    clock = 1_000_000;
    const servingPost = await post('{"w":1}');
    // Assess
    expect(bootingPost).to.equal("TypeError: fetch failed");
    expect(bootingStatus).to.equal("TypeError: fetch failed");
    expect(servingBefore).to.equal(false);
    expect(svc.serving()).to.equal(true);
    expect(servingPost).to.deep.equal({ status: 200, body: { accepted: true } });
    expect(processed).to.deep.equal([{ instanceId: "i-0001", key: "", body: { w: 1 }, atMs: 1_000_000 }]);
  });

  describe("slots bound the windows worked on at once; the rest wait in arrival order", () => {
    const cases = [
      { slots: 1, windows: 3 },
      { slots: 2, windows: 3 },
      { slots: 2, windows: 4 },
    ];
    for (const c of cases) {
      it(`${c.slots} slot(s), ${c.windows} windows`, async () => {
        // Prepare
        clock = 1_000_000;
        await start({ slots: c.slots, windowRealMs: 600 });
        // Act
        const answers: Array<ReturnType<typeof post>> = [];
        for (let i = 0; i < c.windows; i++) answers.push((await sendHeld(JSON.stringify({ w: i }))).answer);
        const whileFull = { active: svc.active(), outstanding: svc.outstanding() };
        await until("the first slots' windows to finish", () => processed.length >= c.slots);
        const afterFirst = { active: svc.active(), outstanding: svc.outstanding(), done: processed.length };
        const results = await Promise.all(answers);
        // Assess
        expect(whileFull).to.deep.equal({ active: c.slots, outstanding: c.windows });
        expect(afterFirst).to.deep.equal({ active: Math.min(c.slots, c.windows - c.slots), outstanding: c.windows - c.slots, done: c.slots });
        const order = processed.map((w) => (w.body as { w: number }).w);
        expect([...order.slice(0, c.slots)].sort()).to.deep.equal(Array.from({ length: c.slots }, (_, i) => i));
        expect(order.slice(c.slots)).to.deep.equal(Array.from({ length: c.windows - c.slots }, (_, i) => c.slots + i));
        expect(results.every((r) => typeof r !== "string" && r.status === 200)).to.equal(true);
        expect(svc.outstanding()).to.equal(0);
      });
    }
  });

  describe("Idempotency-Key", () => {
    it("answers a repeat of a processed key as a repeat, without processing it again", async () => {
      // Prepare
      clock = 1_000_000;
      await start();
      // Act
      const first = await post('{"w":1}', "s1/1");
      const again = await post('{"w":1}', "s1/1");
      const other = await post('{"w":2}', "s1/2");
      // Assess
      expect(first).to.deep.equal({ status: 200, body: { accepted: true } });
      expect(again).to.deep.equal({ status: 200, body: { accepted: true, repeat: true } });
      expect(other).to.deep.equal({ status: 200, body: { accepted: true } });
      expect(processed.map((w) => w.key)).to.deep.equal(["s1/1", "s1/2"]);
      expect(svc.repeatedDeliveries()).to.equal(1);
    });

    it("refuses a copy that arrives while its key is in progress with 409 at once, and processes the key once", async () => {
      // Prepare
      clock = 1_000_000;
      await start({ slots: 1, windowRealMs: 300 });
      // Act
      const first = await sendHeld('{"w":1}', "s1/1");
      const copy = await post('{"w":1}', "s1/1");
      const heldDuringCopy = svc.outstanding();
      const answer = await first.answer;
      // Assess
      expect(copy).to.deep.equal({ status: 409, body: { error: "a window with this Idempotency-Key is in progress" } });
      expect(heldDuringCopy).to.equal(1);
      expect(answer).to.deep.equal({ status: 200, body: { accepted: true } });
      expect(processed.map((w) => w.key)).to.deep.equal(["s1/1"]);
      expect(svc.conflictingDeliveries()).to.equal(1);
    });

    it("shares its keys with the fleet: a key claimed on one instance is refused on another, and a repeat there once done", async () => {
      // Prepare
      clock = 1_000_000;
      const keys = new SharedKeys();
      await start({ slots: 1, windowRealMs: 300, keys });
      const other = new FleetInstanceService({
        instanceId: "i-0002",
        servingFromMs: 0,
        windowRealMs: 0,
        slots: 1,
        servicePath: SERVICE_PATH,
        statusPath: STATUS_PATH,
        speed: 60,
        onProcessed: (w) => processed.push(w),
        keys,
      });
      const at = await other.start();
      const postOther = (key: string) =>
        outcome(`http://${at.host}:${at.port}${SERVICE_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: "{}",
        });
      try {
        // Act
        const first = await sendHeld('{"w":1}', "s1/1");
        const whileClaimed = await postOther("s1/1");
        await first.answer;
        const afterDone = await postOther("s1/1");
        // Assess
        expect(whileClaimed).to.deep.equal({ status: 409, body: { error: "a window with this Idempotency-Key is in progress" } });
        expect(afterDone).to.deep.equal({ status: 200, body: { accepted: true, repeat: true } });
        expect(processed.map((w) => [w.instanceId, w.key])).to.deep.equal([["i-0001", "s1/1"]]);
      } finally {
        await other.kill();
      }
    });

    it("releases the claim of a window cut off unfinished, so a later delivery processes it", async () => {
      // Prepare
      clock = 1_000_000;
      const keys = new SharedKeys();
      await start({ slots: 1, windowRealMs: 5_000, keys });
      const cut = await sendHeld('{"w":1}', "s1/1");
      // Act
      await svc.kill();
      const answer = await cut.answer;
      await start({ slots: 1, windowRealMs: 0, keys, instanceId: "i-0003" });
      const later = await post('{"w":1}', "s1/1");
      // Assess
      expect(typeof answer).to.equal("string");
      expect(keys.claimed.has("s1/1")).to.equal(false);
      expect(later).to.deep.equal({ status: 200, body: { accepted: true } });
      expect(processed.map((w) => [w.instanceId, w.key])).to.deep.equal([["i-0003", "s1/1"]]);
    });

    it("processes windows without a key every time (no key, no deduplication)", async () => {
      // Prepare
      clock = 1_000_000;
      await start();
      // Act
      await post('{"w":1}');
      await post('{"w":1}');
      // Assess
      expect(processed.map((w) => w.body)).to.deep.equal([{ w: 1 }, { w: 1 }]);
      expect(svc.repeatedDeliveries()).to.equal(0);
    });
  });

  describe("status path: { active, idleSeconds } in simulated seconds (speed 60)", () => {
    it("counts idle time from when it started serving, then from its last window", async () => {
      // Prepare
      clock = 1_000_000;
      await start({ speed: 60 });
      // Act
      clock += 3_000;
      const sinceServing = await status();
      await post('{"w":1}');
      clock += 500;
      const sinceWork = await status();
      // Assess: 3 real s × 60 = 180 simulated s; 0.5 real s × 60 = 30.
      expect(sinceServing).to.deep.equal({ status: 200, body: { active: 0, idleSeconds: 180 } });
      expect(sinceWork).to.deep.equal({ status: 200, body: { active: 0, idleSeconds: 30 } });
    });

    it("reports the windows it holds (working and waiting) and 0 idle while it holds any", async () => {
      // Prepare
      clock = 1_000_000;
      await start({ slots: 1, windowRealMs: 300 });
      const held = [await sendHeld('{"w":1}', "a"), await sendHeld('{"w":2}', "b")];
      // Act
      clock += 60_000;
      const busy = await status();
      await Promise.all(held.map((h) => h.answer));
      const idle = await status();
      // Assess
      expect(busy).to.deep.equal({ status: 200, body: { active: 2, idleSeconds: 0 } });
      expect(idle).to.deep.equal({ status: 200, body: { active: 0, idleSeconds: 0 } });
    });
  });

  it("kill() cuts off the windows it holds (working and waiting), and reports none of them processed", async () => {
    // Prepare
    clock = 1_000_000;
    await start({ slots: 1, windowRealMs: 300 });
    const working = await sendHeld('{"w":1}', "a");
    const waiting = await sendHeld('{"w":2}', "b");
    // Act
    await svc.kill();
    const answers = await Promise.all([working.answer, waiting.answer]);
    await until("the cut-off window's timer to run out", () => svc.active() === 0);
    // Assess
    expect(answers).to.deep.equal(["TypeError: fetch failed", "TypeError: fetch failed"]);
    expect(processed).to.deep.equal([]);
    expect(svc.serving()).to.equal(false);
  });

  describe("refuses what is not a window", () => {
    const cases: Array<{ name: string; method: string; path: string; body?: string; status: number; error: RegExp }> = [
      { name: "a body that is not JSON", method: "POST", path: SERVICE_PATH, body: "not json", status: 400, error: /^body is not JSON/ },
      { name: "a POST to another path", method: "POST", path: "/other", body: "{}", status: 404, error: /^no route for POST \/other$/ },
      { name: "a GET of the service path", method: "GET", path: SERVICE_PATH, status: 404, error: /^no route for GET \/ingest\/window$/ },
      { name: "a POST to the status path", method: "POST", path: STATUS_PATH, body: "{}", status: 404, error: /^no route for POST \/status$/ },
    ];
    for (const c of cases) {
      it(`${c.name}: ${c.status}`, async () => {
        // Prepare
        clock = 1_000_000;
        await start();
        // Act
        const answer = await outcome(`${base}${c.path}`, { method: c.method, ...(c.body !== undefined ? { body: c.body } : {}) });
        // Assess
        expect(answer).to.have.property("status", c.status);
        expect((answer as { body: { error: string } }).body.error).to.match(c.error);
        expect(processed).to.deep.equal([]);
      });
    }
  });

  describe("options", () => {
    const cases: Array<{ name: string; opts: Partial<FleetServiceOptions>; error: RegExp }> = [
      { name: "a service path without a leading /", opts: { servicePath: "ingest" }, error: /paths must start with \// },
      { name: "a status path without a leading /", opts: { statusPath: "status" }, error: /paths must start with \// },
      { name: "no slots", opts: { slots: 0 }, error: /slots must be ≥ 1, got 0/ },
    ];
    for (const c of cases) {
      it(`refuses ${c.name}`, () => {
        // Prepare
        const opts: FleetServiceOptions = {
          instanceId: "i-1",
          servingFromMs: 0,
          windowRealMs: 0,
          slots: 1,
          servicePath: SERVICE_PATH,
          statusPath: STATUS_PATH,
          speed: 1,
          onProcessed: () => undefined,
          ...c.opts,
        };
        // Act + Assess
        expect(() => new FleetInstanceService(opts)).to.throw(c.error);
      });
    }
    afterEach(() => {
      // No service was started in these cases: give afterEach's kill() one that never listened.
      svc = new FleetInstanceService({
        instanceId: "x",
        servingFromMs: 0,
        windowRealMs: 0,
        slots: 1,
        servicePath: "/",
        statusPath: "/s",
        speed: 1,
        onProcessed: () => undefined,
      });
    });
  });
});
