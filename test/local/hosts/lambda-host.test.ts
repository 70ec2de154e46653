import { expect } from "chai";
import * as fs from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { type InvokeResult, LambdaHost, openLog } from "../../../local/hosts/lambda-host";
import { PassThrough } from "node:stream";
import type { LocalFunction } from "../../../local/provision/topology-types";
import { localFunction } from "../fixtures/functions";

const AWS_ENV = { AWS_ENDPOINT_URL: "http://127.0.0.1:1", AWS_REGION: "eu-west-1", AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing" };

function ok(result: InvokeResult): Record<string, unknown> {
  if (result.kind !== "ok") throw new Error(`expected ok, got ${JSON.stringify(result)}`);
  return result.response as Record<string, unknown>;
}

describe("LambdaHost: the bundles in worker sandboxes", () => {
  let logDir: string;
  let host: LambdaHost | undefined;

  beforeEach(() => {
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), "lambda-host-"));
  });
  afterEach(async () => {
    await host?.close();
    host = undefined;
    fs.rmSync(logDir, { recursive: true, force: true });
  });

  function start(functions: LocalFunction[], routes?: Record<string, string>): LambdaHost {
    host = new LambdaHost(functions, { awsEnv: AWS_ENV, logDir, routes });
    return host;
  }

  it("passes a Lambda-like context and the reserved variables, with awsEnv overriding the function's own", async () => {
    const fn = localFunction("echo", "env-echo.js", {
      environment: { GREETING: "hi", AWS_ENDPOINT_URL: "https://real-aws.example", AWS_LAMBDA_FUNCTION_NAME: "spoofed" },
      memoryMb: 512,
      timeoutSeconds: 7,
    });
    const lambda = start([fn]);

    const response = ok(
      await lambda.invoke(fn.name, {
        keys: ["AWS_ENDPOINT_URL", "AWS_REGION", "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_TIMEOUT", "_HANDLER"],
      }),
    );

    expect(response.env).to.deep.equal({
      AWS_ENDPOINT_URL: "http://127.0.0.1:1",
      AWS_REGION: "eu-west-1",
      AWS_LAMBDA_FUNCTION_NAME: fn.name,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "512",
      AWS_LAMBDA_FUNCTION_TIMEOUT: "7",
      _HANDLER: "index.handler",
    });
    const context = response.context as Record<string, unknown>;
    expect(context).to.include({ functionName: fn.name, invokedFunctionArn: fn.arn, memoryLimitInMB: "512", logGroupName: `/aws/lambda/${fn.name}` });
    expect(context.awsRequestId).to.match(/^[0-9a-f-]{36}$/);
    expect(context.remainingMs).to.be.within(1, 7000);
  });

  it("keeps each function's environment to itself and module state across warm invocations", async () => {
    const a = localFunction("a", "env-echo.js", { environment: { GREETING: "from-a" } });
    const b = localFunction("b", "env-echo.js", { environment: { GREETING: "from-b" } });
    const lambda = start([a, b]);

    const first = ok(await lambda.invoke(a.name, {}));
    const other = ok(await lambda.invoke(b.name, {}));
    const second = ok(await lambda.invoke(a.name, {}));

    expect([first.greeting, other.greeting, second.greeting]).to.deep.equal(["from-a", "from-b", "from-a"]);
    expect([first.count, other.count, second.count]).to.deep.equal([1, 1, 2]);
    expect(lambda.stats()[a.name]).to.include({ invocations: 2, coldStarts: 1, errors: 0 });
  });

  it("gives concurrent invocations separate environments", async () => {
    const fn = localFunction("echo", "env-echo.js", { environment: { GREETING: "hi" } });
    const lambda = start([fn]);

    const results = await Promise.all([lambda.invoke(fn.name, { action: "sleep", ms: 300 }), lambda.invoke(fn.name, { action: "sleep", ms: 300 })]);

    expect(results.map((r) => ok(r).count)).to.deep.equal([1, 1]);
    expect(lambda.stats()[fn.name]).to.include({ coldStarts: 2, peakRunning: 2, running: 0 });
  });

  const failures: Array<{ name: string; fn: Partial<LocalFunction>; event: unknown; expected: { name: string; message: RegExp } }> = [
    {
      name: "a handler that throws",
      fn: { environment: { GREETING: "hi" } },
      event: { action: "throw", message: "bad input" },
      expected: { name: "BoomError", message: /^boom: bad input$/ },
    },
    { name: "a bundle that fails at cold start", fn: { environment: {} }, event: {}, expected: { name: "Error", message: /GREETING is required/ } },
    {
      name: "a missing handler export",
      fn: { environment: { GREETING: "hi" }, handler: "index.nothing" },
      event: {},
      expected: { name: "Runtime.HandlerNotFound", message: /nothing/ },
    },
  ];
  for (const c of failures) {
    it(`reports ${c.name} as an error`, async () => {
      const fn = localFunction("echo", "env-echo.js", c.fn);
      const lambda = start([fn]);

      const result = await lambda.invoke(fn.name, c.event);

      if (result.kind !== "error") throw new Error(`expected error, got ${JSON.stringify(result)}`);
      expect(result.error.name).to.equal(c.expected.name);
      expect(result.error.message).to.match(c.expected.message);
      expect(lambda.stats()[fn.name]).to.include({ invocations: 1, errors: 1, running: 0 });
    });
  }

  it("keeps the environment warm after a handler error", async () => {
    const fn = localFunction("echo", "env-echo.js", { environment: { GREETING: "hi" } });
    const lambda = start([fn]);

    await lambda.invoke(fn.name, { action: "throw", message: "x" });
    const after = ok(await lambda.invoke(fn.name, {}));

    expect(after.count).to.equal(2);
    expect(lambda.stats()[fn.name].coldStarts).to.equal(1);
  });

  it("ends a handler that runs past its timeout, and the next invocation starts cold", async () => {
    const fn = localFunction("echo", "env-echo.js", { environment: { GREETING: "hi" }, timeoutSeconds: 1 });
    const lambda = start([fn]);
    ok(await lambda.invoke(fn.name, {}));

    const timedOut = await lambda.invoke(fn.name, { action: "sleep", ms: 5000 });
    const next = ok(await lambda.invoke(fn.name, {}));

    expect(timedOut.kind).to.equal("timeout");
    expect(timedOut.durationMs).to.be.below(4000);
    expect(next.count).to.equal(1);
    expect(lambda.stats()[fn.name]).to.include({ invocations: 3, timeouts: 1, coldStarts: 2 });
    await lambda.close();
    expect(fs.readFileSync(path.join(logDir, "echo.log"), "utf8")).to.include("Task timed out after 1.00 seconds");
  });

  describe("a crashable sandbox killed mid-invocation (the chaos run's --crash-rate)", () => {
    const cases: Array<{ name: string; crashable: boolean; kill: boolean }> = [
      {
        name: "names its invocation on each call; killed, the invocation ends as Runtime.ExitError, its earlier lines kept, and the next is cold",
        crashable: true,
        kill: true,
      },
      { name: "without crashable, its calls carry no invocation and nothing is killed", crashable: false, kill: false },
    ];
    for (const c of cases)
      it(c.name, async () => {
        // Prepare: a server that, like the fault proxy, kills the caller once the call has reached it.
        const fn = localFunction("victim", "env-echo.js", { environment: { GREETING: "hi" } });
        host = new LambdaHost([fn], { awsEnv: AWS_ENV, logDir, crashable: c.crashable });
        const lambda = host;
        const seen: Array<string | undefined> = [];
        const killed: Array<string | undefined> = [];
        const server = createServer((req, res) => {
          const id = req.headers["x-local-invocation"];
          seen.push(typeof id === "string" ? id : undefined);
          if (typeof id !== "string") return void res.end("ok");
          void lambda.crash(id).then((crashed) => {
            killed.push(crashed?.requestId);
            res.destroy();
          });
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

        // Act
        const out = await lambda.invoke(fn.name, { action: "http", url, lines: 2000 });
        const next = ok(await lambda.invoke(fn.name, {}));
        server.close();
        await lambda.close();

        // Assess
        const log = fs.readFileSync(path.join(logDir, "victim.log"), "utf8");
        // Every line written before the kill is in the log (a worker thread's stdout would drop the tail).
        for (const i of [0, 999, 1999]) expect(log).to.include(`before the call ${i}\n`);
        if (c.kill) {
          expect(out.kind).to.equal("error");
          expect(out.kind === "error" ? out.error : undefined).to.deep.equal({
            name: "Runtime.ExitError",
            message: "Runtime exited with error: signal: killed",
          });
          expect(seen).to.have.length(1).and.to.deep.equal(killed);
          expect(seen[0]).to.match(/^[0-9a-f-]{36}$/);
          expect(log).to.not.include("after the call");
          expect(log).to.include(`${seen[0]} Error: Runtime exited with error: signal: killed`);
          expect(next.count).to.equal(1);
        } else {
          expect(ok(out)).to.deep.equal({ status: 200 });
          expect(seen).to.deep.equal([undefined]);
          expect(next.count).to.equal(2);
        }
      });
  });

  it("writes the sandbox's stdout and stderr to <logDir>/<logicalName>.log", async () => {
    const fn = localFunction("talker", "env-echo.js", { environment: { GREETING: "hi" } });
    const lambda = start([fn]);

    ok(await lambda.invoke(fn.name, { action: "log" }));
    await lambda.close();

    const log = fs.readFileSync(path.join(logDir, "talker.log"), "utf8");
    expect(log).to.match(/\tINFO\thello from hi\n/);
    expect(log).to.include("to stderr\n");
    expect(log).to.match(/START RequestId: [0-9a-f-]{36}/);
  });

  it("runs the sandbox on the simulated clock when given one: Date and the remaining time are scaled", async () => {
    // Prepare: simulated time started an hour ago at 60× speed, so it is 60 h ahead of real time.
    const t0Ms = Date.now() - 3_600_000;
    host = new LambdaHost([localFunction("clocked", "env-echo.js", { environment: { GREETING: "hi" }, timeoutSeconds: 2 })], {
      awsEnv: AWS_ENV,
      logDir,
      clock: { t0Ms, speed: 60 },
    });
    // Act
    const before = Date.now();
    const out = await host.invoke("clocked-abc123", { action: "clock" });
    // Assert
    expect(out.kind).to.equal("ok");
    const r = (out as { response: { now: number; constructed: number; parsed: number; isDate: boolean; called: string; remainingMs: number } }).response;
    const expectedSim = t0Ms + (before - t0Ms) * 60;
    expect(r.now).to.be.within(expectedSim, expectedSim + 60 * 5_000);
    expect(r.constructed).to.be.within(expectedSim, expectedSim + 60 * 5_000);
    expect(r.parsed).to.equal(0);
    expect(r.isDate).to.equal(true);
    expect(r.called).to.be.a("string");
    // 2 s of real timeout are 120 s of simulated time.
    expect(r.remainingMs).to.be.within(60_000, 120_000);
  });

  describe("fetch routes (the VPC)", () => {
    let server: Server;
    let local: string;

    before(async () => {
      server = createServer((req, res) => res.end(`reached ${req.url}`));
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      local = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((r) => server.close(() => r())));

    it("sends a call to a private address to the local server it is routed to", async () => {
      const fn = localFunction("fetcher", "env-echo.js", { environment: { GREETING: "hi" } });
      const lambda = start([fn], { "10.1.2.3:8080": local });

      const response = ok(await lambda.invoke(fn.name, { action: "fetch", url: "http://10.1.2.3:8080/x" }));

      expect(response).to.deep.equal({ status: 200, text: "reached /x" });
    });

    it("applies setRoutes to a warm environment", async () => {
      const fn = localFunction("fetcher", "env-echo.js", { environment: { GREETING: "hi" } });
      const lambda = start([fn]);
      ok(await lambda.invoke(fn.name, {}));

      lambda.setRoutes({ "10.9.9.9:80": local });
      const response = ok(await lambda.invoke(fn.name, { action: "fetch", url: "http://10.9.9.9/y" }));

      expect(response.text).to.equal("reached /y");
      expect(lambda.stats()[fn.name].coldStarts).to.equal(1);
    });
  });
});

describe("a function's log file", () => {
  it("takes the output of many concurrent environments without a listener-leak warning", async () => {
    // Prepare: twelve environments' stdout and stderr, as a busy function has in a chaos run.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lambda-log-"));
    const log = openLog(path.join(dir, "fn.log"));
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      // Act
      const sources = Array.from({ length: 24 }, () => new PassThrough());
      for (const s of sources) s.pipe(log, { end: false });
      for (const [i, s] of sources.entries()) s.end(`line ${i}\n`);
      await new Promise((r) => setImmediate(r));
      await new Promise<void>((done) => log.end(done));

      // Assess
      expect(warnings.map((w) => w.name)).to.not.include("MaxListenersExceededWarning");
      expect(fs.readFileSync(path.join(dir, "fn.log"), "utf8").trim().split("\n")).to.have.length(24);
    } finally {
      process.off("warning", onWarning);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
