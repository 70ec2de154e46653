import { EventEmitter } from "node:events";
import { SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "chai";
import * as os from "node:os";
import { defaultDeps, runWorkerProcess, taskHolder, taskIdentity } from "../../../functions/worker/runtime";
import { FakeEcsAgent } from "../helpers/ecs-agent";
import { until, useFakeTime, waitFor } from "../helpers/fake-time";
import { job, message } from "../helpers/worker-deps";
import { arrangeQueue, mockedWorkerDeps } from "../helpers/worker-harness";
import { sampleEnv } from "../helpers/env-samples";

const env = {
  ...sampleEnv("worker"),
  WORK_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/worker",
  QUARANTINE_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/worker-dlq",
  WORKER_JOBS_TABLE: "worker-jobs-1a2b3c",
  WORKER_CONCURRENCY: "3",
  TASK_PROTECTION_EXPIRES_MINUTES: "7",
  WORKER_EXECUTABLES: '{"payload-digest":{"command":"/usr/bin/sha256sum","args":["-"]}}',
};

describe("worker: the container's wiring (functions/worker/runtime.ts)", function () {
  this.timeout(10_000);

  describe("defaultDeps", () => {
    const agent = new FakeEcsAgent();
    before(() => agent.start());
    after(() => agent.stop());

    it("builds the config, the allow-listed handlers and an SQS client from the environment", () => {
      const deps = defaultDeps(env);

      expect(deps.config).to.deep.include({ concurrency: 3, protectionExpiresMinutes: 7, workQueueUrl: env.WORK_QUEUE_URL });
      expect([...deps.handlers.keys()]).to.deep.equal(["payload-digest"]);
      expect(deps.sqs).to.be.instanceOf(SQSClient);
      expect(deps.protection.enabled).to.equal(false);
    });

    it("protects the task through ECS_AGENT_URI with the configured expiry (the global fetch, real time)", async () => {
      // The real logger reads its level when it is created: keep its lines out of the test output.
      const level = process.env.POWERTOOLS_LOG_LEVEL;
      process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
      const deps = defaultDeps({ ...env, ECS_AGENT_URI: agent.uri });
      if (level === undefined) delete process.env.POWERTOOLS_LOG_LEVEL;
      else process.env.POWERTOOLS_LOG_LEVEL = level;

      await deps.protection.acquire();
      await deps.protection.releaseAll();

      expect(deps.protection.enabled).to.equal(true);
      expect(agent.requests.map((r) => r.body)).to.deep.equal([{ ProtectionEnabled: true, ExpiresInMinutes: 7 }, { ProtectionEnabled: false }]);
    });
  });

  describe("taskIdentity: the ledger's holder name", () => {
    const ARN = "arn:aws:ecs:us-east-1:123456789012:task/workers/0123456789abcdef";
    const answering =
      (res: () => Response | Promise<Response>, asked: Array<{ url: string; signal: unknown }> = []): typeof fetch =>
      (url, init) => {
        asked.push({ url: String(url), signal: init?.signal });
        return Promise.resolve(res());
      };
    const cases: Array<{ title: string; uri: string | undefined; fetch: (asked: Array<{ url: string; signal: unknown }>) => typeof fetch; name: string }> = [
      {
        title: "the task ARN from the metadata endpoint's /task",
        uri: "http://169.254.170.2/v4/abc",
        fetch: (asked) => answering(() => Response.json({ TaskARN: ARN }), asked),
        name: ARN,
      },
      {
        title: "the fallback outside ECS (no metadata URI), without asking",
        uri: undefined,
        fetch: (asked) => answering(() => Response.json({ TaskARN: ARN }), asked),
        name: "host:1",
      },
      {
        title: "the fallback when the endpoint answers an error status",
        uri: "http://169.254.170.2/v4/abc",
        fetch: (asked) => answering(() => Response.json({ TaskARN: ARN }, { status: 500 }), asked),
        name: "host:1",
      },
      {
        title: "the fallback when the reply has no TaskARN",
        uri: "http://169.254.170.2/v4/abc",
        fetch: (asked) => answering(() => Response.json({ Cluster: "c" }), asked),
        name: "host:1",
      },
      {
        title: "the fallback when the TaskARN is empty",
        uri: "http://169.254.170.2/v4/abc",
        fetch: (asked) => answering(() => Response.json({ TaskARN: "" }), asked),
        name: "host:1",
      },
      {
        title: "the fallback when the TaskARN is not a string",
        uri: "http://169.254.170.2/v4/abc",
        fetch: (asked) => answering(() => Response.json({ TaskARN: 42 }), asked),
        name: "host:1",
      },
      {
        title: "the fallback when the endpoint cannot be reached",
        uri: "http://169.254.170.2/v4/abc",
        fetch: (asked) => answering(() => Promise.reject(new TypeError("fetch failed")), asked),
        name: "host:1",
      },
    ];
    for (const c of cases) {
      it(`names ${c.title}`, async () => {
        // Prepare
        const asked: Array<{ url: string; signal: unknown }> = [];

        // Act
        const name = await taskIdentity(c.uri, c.fetch(asked), "host:1");

        // Assess
        expect(name).to.equal(c.name);
        expect(asked, "the endpoint is asked only when there is one").to.have.length(c.uri ? 1 : 0);
      });
    }

    it("asks v4's /task under the metadata URI, bounded by a timeout signal", async () => {
      // Prepare
      const asked: Array<{ url: string; signal: unknown }> = [];

      // Act
      await taskIdentity(
        "http://169.254.170.2/v4/abc",
        answering(() => Response.json({ TaskARN: ARN }), asked),
        "host:1",
      );

      // Assess
      expect(asked.map((a) => a.url)).to.deep.equal(["http://169.254.170.2/v4/abc/task"]);
      expect(asked[0]!.signal).to.be.instanceOf(AbortSignal);
    });

    it("falls back to hostname:pid by default", async () => {
      expect(await taskIdentity(undefined)).to.equal(`${os.hostname()}:${process.pid}`);
    });

    it("taskHolder looks the identity up once, at the first take, and answers it to every later one", async () => {
      // Prepare
      const asked: Array<{ url: string; signal: unknown }> = [];
      const holder = taskHolder(
        "http://169.254.170.2/v4/abc",
        answering(() => Response.json({ TaskARN: ARN }), asked),
      );

      // Act
      const names = [await holder(), await holder()];

      // Assess
      expect(names).to.deep.equal([ARN, ARN]);
      expect(asked).to.have.length(1);
    });
  });

  describe("runWorkerProcess", () => {
    useFakeTime();

    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      it(`shuts down on ${signal} and exits 0`, async () => {
        // Prepare
        const t = mockedWorkerDeps({ handlers: { quick: () => Promise.resolve() } });
        arrangeQueue(t, [[message(job("quick"))]]);
        const signals = new EventEmitter();
        const exits: number[] = [];
        const done = runWorkerProcess(t.deps, signals, (code) => exits.push(code));
        await waitFor(() => t.logger.withStep("job_succeeded").length === 1, 3000, "a job");

        // Act
        signals.emit(signal);
        await until(done);

        // Assess
        expect(t.logger.withStep("shutdown_started")[0]!.fields.reason).to.equal(signal);
        expect(exits).to.deep.equal([0]);
      });
    }

    it("logs worker_crashed and exits 1 when the loop itself fails", async () => {
      // Prepare: the logger refuses the start-up line
      const t = mockedWorkerDeps();
      arrangeQueue(t, []);
      const logger = t.deps.logger;
      const errors: unknown[][] = [];
      t.deps.logger = {
        debug: (...a) => logger.debug(...a),
        info: (msg, ...a) => {
          if (msg === "worker_started") throw new Error("stdout closed");
          logger.info(msg, ...a);
        },
        warn: (...a) => logger.warn(...a),
        error: (...a) => void errors.push(a),
      };
      const exits: number[] = [];

      // Act
      await until(runWorkerProcess(t.deps, new EventEmitter(), (code) => exits.push(code)));

      // Assess
      expect(errors).to.deep.equal([["worker_crashed", { step: "worker_crashed", error: "Error: stdout closed" }]]);
      expect(exits).to.deep.equal([1]);
    });
  });
});
