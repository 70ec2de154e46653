/**
 * The local run's internal Application Load Balancer (local/hosts/load-balancer.ts): the pure
 * routing and health rules as tables, then the balancer on loopback with real targets (hand-held
 * stub targets where a test needs a request in flight exactly as long as it says, and fleet instance
 * services where it needs the real stand-in). Health checks run in simulated seconds at `speed`.
 */
import { expect } from "chai";
import { FakeModel, type ProcessedWindow } from "../../../local/hosts/fake-model";
import { afterCheck, type HealthCheck, LocalLoadBalancer, pickTarget, type TargetHealth } from "../../../local/hosts/load-balancer";
import { outcome, type StubTarget, startStubTarget, until } from "../helpers/stub-target";

describe("local load balancer", () => {
  describe("pickTarget (least outstanding requests among healthy targets)", () => {
    const t = (id: string, health: TargetHealth, outstanding: number) => ({ id, health, outstanding });
    const cases: Array<{ name: string; targets: Array<ReturnType<typeof t>>; want: string | undefined }> = [
      { name: "no targets", targets: [], want: undefined },
      { name: "none healthy", targets: [t("a", "initial", 0), t("b", "unhealthy", 0), t("c", "draining", 0)], want: undefined },
      { name: "the healthy one with fewer outstanding", targets: [t("a", "healthy", 2), t("b", "healthy", 1), t("c", "healthy", 3)], want: "b" },
      { name: "a tie goes to the first registered", targets: [t("a", "healthy", 1), t("b", "healthy", 1)], want: "a" },
      { name: "an idle draining target is passed over", targets: [t("a", "draining", 0), t("b", "healthy", 5)], want: "b" },
      { name: "an idle initial target is passed over", targets: [t("a", "initial", 0), t("b", "healthy", 4)], want: "b" },
      { name: "an idle unhealthy target is passed over", targets: [t("a", "healthy", 7), t("b", "unhealthy", 0)], want: "a" },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const picked = pickTarget(c.targets);
        // Assess
        expect(picked?.id).to.equal(c.want);
      });
    }
  });

  describe("afterCheck (health thresholds: healthy after 3 in a row, unhealthy after 2)", () => {
    const hc = { healthyThreshold: 3, unhealthyThreshold: 2 };
    type State = { health: TargetHealth; okInARow: number; failedInARow: number };
    const st = (health: TargetHealth, okInARow: number, failedInARow: number): State => ({ health, okInARow, failedInARow });
    const cases: Array<{ name: string; from: State; ok: boolean; want: State }> = [
      { name: "a new target's first pass keeps it initial", from: st("initial", 0, 0), ok: true, want: st("initial", 1, 0) },
      { name: "a new target's third pass in a row makes it healthy", from: st("initial", 2, 0), ok: true, want: st("healthy", 3, 0) },
      { name: "a failure resets the passes in a row", from: st("initial", 2, 0), ok: false, want: st("initial", 0, 1) },
      { name: "a healthy target's first failure keeps it healthy", from: st("healthy", 5, 0), ok: false, want: st("healthy", 0, 1) },
      { name: "a healthy target's second failure in a row makes it unhealthy", from: st("healthy", 0, 1), ok: false, want: st("unhealthy", 0, 2) },
      { name: "a pass between failures resets the failures", from: st("healthy", 0, 1), ok: true, want: st("healthy", 1, 0) },
      { name: "an unhealthy target stays out until three passes", from: st("unhealthy", 1, 0), ok: true, want: st("unhealthy", 2, 0) },
      { name: "an unhealthy target's third pass makes it healthy again", from: st("unhealthy", 2, 0), ok: true, want: st("healthy", 3, 0) },
      { name: "a draining target is not checked (a pass)", from: st("draining", 0, 0), ok: true, want: st("draining", 0, 0) },
      { name: "a draining target is not checked (a failure)", from: st("draining", 4, 0), ok: false, want: st("draining", 4, 0) },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const next = afterCheck(c.from, c.ok, hc);
        // Assess
        expect(next).to.deep.equal(c.want);
      });
    }
  });

  describe("LocalLoadBalancer on loopback", function () {
    this.timeout(20_000);
    const SPEED = 1000;
    const fast: HealthCheck = { path: "/status", intervalSeconds: 10, timeoutSeconds: 5, healthyThreshold: 3, unhealthyThreshold: 2 };
    let lb: LocalLoadBalancer;
    let base: string;
    const stubs: StubTarget[] = [];
    const services: FakeModel[] = [];

    async function startLb(healthCheck: HealthCheck = fast): Promise<void> {
      lb = new LocalLoadBalancer({ healthCheck, speed: SPEED });
      const { host, port } = await lb.start();
      base = `http://${host}:${port}`;
    }
    async function stub(name: string, status = 200): Promise<StubTarget> {
      const s = await startStubTarget(name, status);
      stubs.push(s);
      return s;
    }
    async function service(id: string, windowRealMs: number, ledger: ProcessedWindow[]): Promise<number> {
      // A fake model stands for the target: it answers the health check path and does the windows.
      const svc = new FakeModel({ instanceId: id, windowRealMs, slots: 4, path: "/ingest/window", healthPath: "/status", ledger });
      services.push(svc);
      return Number(new URL(await svc.start()).port);
    }
    const post = (body = "{}", path = "/ingest/window") => outcome(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const healthy = (id: string) => until(`${id} healthy`, () => lb.health(id) === "healthy");

    afterEach(async () => {
      await lb.stop();
      for (const s of stubs) s.releaseAll();
      await Promise.all(stubs.splice(0).map((s) => s.close()));
      await Promise.all(services.splice(0).map((s) => s.kill()));
    });

    it("sends a new target no request until it passed healthyThreshold checks in a row", async () => {
      // Prepare: checks every 50 simulated seconds (50 ms), so the test sees each one.
      await startLb({ ...fast, intervalSeconds: 50 });
      const a = await stub("a");
      // Act
      lb.register("a", a.port);
      await until("two health checks", () => a.statusGets() >= 2);
      const afterTwo = { health: lb.health("a"), answer: await post() };
      await healthy("a");
      const checksWhenHealthy = a.statusGets();
      const pending = post();
      await until("the POST to reach a", () => a.held() === 1);
      a.releaseAll();
      const answer = await pending;
      // Assess
      expect(afterTwo.health).to.equal("initial");
      expect(afterTwo.answer).to.deep.include({ status: 503 });
      expect(checksWhenHealthy).to.equal(3);
      expect(a.posts()).to.equal(1);
      expect(answer).to.deep.equal({ status: 200, body: { target: "a" } });
      expect(lb.refusedRequests()).to.equal(1);
    });

    it("sends each request to the healthy target with the fewest outstanding (ties: the first registered)", async () => {
      // Prepare
      await startLb();
      const [a, b, c] = [await stub("a"), await stub("b"), await stub("c")];
      lb.register("a", a.port);
      lb.register("b", b.port);
      lb.register("c", c.port);
      await Promise.all(["a", "b", "c"].map(healthy));
      const total = () => lb.outstanding("a") + lb.outstanding("b") + lb.outstanding("c");
      const sent: Array<ReturnType<typeof post>> = [];
      const send = async () => {
        const before = total();
        const heldBefore = a.held() + b.held() + c.held();
        sent.push(post());
        // Wait for the target itself to hold it (the balancer counts it before it connects).
        await until("the request to be in flight", () => total() === before + 1 && a.held() + b.held() + c.held() === heldBefore + 1);
      };
      // Act: four requests held, then b answers, then one more.
      for (let i = 0; i < 4; i++) await send();
      const afterFour = [lb.outstanding("a"), lb.outstanding("b"), lb.outstanding("c")];
      b.releaseAll();
      await until("b to be free", () => lb.outstanding("b") === 0);
      await send();
      const afterFive = [lb.outstanding("a"), lb.outstanding("b"), lb.outstanding("c")];
      a.releaseAll();
      b.releaseAll();
      c.releaseAll();
      const answers = await Promise.all(sent);
      // Assess: a, b, c, then a (tie), then b (the only one with none).
      expect(afterFour).to.deep.equal([2, 1, 1]);
      expect(afterFive).to.deep.equal([2, 1, 1]);
      expect([a.posts(), b.posts(), c.posts()]).to.deep.equal([2, 2, 1]);
      expect(answers.map((x) => (typeof x === "string" ? x : (x.body as { target: string }).target))).to.deep.equal(["a", "b", "c", "a", "b"]);
      expect([lb.outstanding("a"), lb.outstanding("b"), lb.outstanding("c")]).to.deep.equal([0, 0, 0]);
    });

    it("after deregister, a target gets no new request, even with the fewest outstanding, and its in-flight one completes", async () => {
      // Prepare: b holds two requests, a holds one (so least-outstanding alone would pick a).
      await startLb();
      const [a, b] = [await stub("a"), await stub("b")];
      lb.register("b", b.port);
      await healthy("b");
      const toB = [post(), post()];
      await until("two requests on b", () => b.held() === 2);
      lb.register("a", a.port);
      await healthy("a");
      const toA = post();
      await until("one request on a", () => a.held() === 1);
      // Act
      lb.deregister("a");
      const healthAfter = lb.health("a");
      const next = post();
      await until("the next request to reach b", () => b.held() === 3);
      a.releaseAll();
      const inFlight = await toA;
      b.releaseAll();
      await Promise.all([...toB, next]);
      // Assess
      expect(healthAfter).to.equal("draining");
      expect(a.posts()).to.equal(1);
      expect(b.posts()).to.equal(3);
      expect(inFlight).to.deep.equal({ status: 200, body: { target: "a" } });
      expect(lb.outstanding("a")).to.equal(0);
      expect(lb.healthyCount()).to.equal(1);
    });

    it("answers 503 and counts the refusal when no target is healthy", async () => {
      // Prepare
      await startLb();
      const a = await stub("a");
      // Act: no target at all; then a target registered and deregistered before any request.
      const none = await post();
      lb.register("a", a.port);
      await healthy("a");
      lb.deregister("a");
      const drainingOnly = await post();
      // Assess
      for (const answer of [none, drainingOnly]) {
        expect(answer).to.have.property("status", 503);
        expect((answer as { body: { error: string } }).body.error).to.match(/^503 .*no healthy target/);
      }
      expect(lb.refusedRequests()).to.equal(2);
      expect(a.posts()).to.equal(0);
    });

    it("answers 502 when the target dies mid-request, and frees the target's outstanding count", async () => {
      // Prepare: a target whose window takes 5 real seconds.
      await startLb();
      const ledger = [] as ProcessedWindow[];
      const processed = ledger;
      lb.register("i-1", await service("i-1", 5_000, ledger));
      await healthy("i-1");
      const pending = post('{"window":1}');
      await until("the window to be worked on", () => services[0].outstanding() === 1);
      const outstandingBefore = lb.outstanding("i-1");
      // Act
      await services[0].kill();
      const answer = await pending;
      // Assess
      expect(outstandingBefore).to.equal(1);
      expect(answer).to.have.property("status", 502);
      expect((answer as { body: { error: string } }).body.error).to.match(/^502 /);
      expect(lb.outstanding("i-1")).to.equal(0);
      expect(processed).to.deep.equal([]);
    });

    it("takes a target that fails unhealthyThreshold checks in a row out of routing", async () => {
      // Prepare
      await startLb();
      const ledger = [] as ProcessedWindow[];
      const processed = ledger;
      lb.register("i-1", await service("i-1", 0, ledger));
      await healthy("i-1");
      const served = await post('{"window":1}');
      // Act: the service goes away; its health checks fail.
      await services[0].kill();
      await until("i-1 unhealthy", () => lb.health("i-1") === "unhealthy");
      const refused = await post('{"window":2}');
      // Assess
      expect(served).to.deep.equal({ status: 200, body: { processed: true, key: "" } });
      expect(refused).to.have.property("status", 503);
      expect(lb.healthyCount()).to.equal(0);
      expect(processed.map((w) => w.body)).to.deep.equal([{ window: 1 }]);
    });

    it("forwards the path, method, headers and body to the target, and its answer back", async () => {
      // Prepare
      await startLb();
      const ledger = [] as ProcessedWindow[];
      const processed = ledger;
      lb.register("i-1", await service("i-1", 0, ledger));
      await healthy("i-1");
      // Act
      const ok = await outcome(`${base}/ingest/window`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "s/7" },
        body: '{"window":7}',
      });
      const wrongRoute = await post("{}", "/elsewhere");
      // Assess
      expect(ok).to.deep.equal({ status: 200, body: { processed: true, key: "s/7" } });
      expect(wrongRoute).to.have.property("status", 404);
      expect(processed.map((w) => ({ key: w.key, body: w.body, instanceId: w.instanceId }))).to.deep.equal([
        { key: "s/7", body: { window: 7 }, instanceId: "i-1" },
      ]);
    });
  });
});
