import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { buildHandlers } from "../../../functions/worker/handlers";
import { ExecutableFailedError } from "../../../functions/worker/exec-handler";
import type { Job } from "../../../functions/worker/job";
import { RecordingLogger } from "../helpers/telemetry";

describe("worker: the built-in handler runs an allow-listed executable", function () {
  this.timeout(10_000);
  let scratch: string;
  let logger: RecordingLogger;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "worker-scratch-"));
    logger = new RecordingLogger();
  });
  afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

  const allowList = {
    // Reads the payload from stdin, echoes it, writes a file in its working directory, and reports where it ran.
    echo: { command: "/bin/sh", args: ["-c", 'cat; echo; echo "job=$JOB_ID type=$JOB_TYPE"; echo scratch > out.txt; pwd; echo warn >&2'] },
    fail: { command: "/bin/sh", args: ["-c", "exit 3"] },
    // Says when it runs, so the test aborts a running process without a timed wait.
    sleepy: { command: "/bin/sh", args: ["-c", "echo started; exec sleep 30"] },
  };
  /** Programs for single cases; kept apart so the registry test above still sees its own list. */
  const cases = {
    // Ignores SIGTERM: only SIGKILL stops it.
    stubborn: { command: "/bin/sh", args: ["-c", 'trap "" TERM; echo "started $$"; while :; do sleep 0.1; done'] },
    // Exits at once, while a background child keeps its stdout open for 500 ms more.
    lingering: { command: "/bin/sh", args: ["-c", "echo started; (sleep 0.5) & exit 0"] },
    killed: { command: "/bin/sh", args: ["-c", "kill -9 $$"] },
    deaf: { command: "/bin/sh", args: ["-c", "exit 0"] },
    env: { command: "/bin/sh", args: ["-c", 'echo "$PATH|$HOME|$TMPDIR|$JOB_ID|$JOB_TYPE|${WORKER_TEST_SECRET-unset}"; pwd'] },
    long: { command: "/bin/sh", args: ["-c", "head -c 4096 /dev/zero | tr '\\0' a; echo; head -c 4097 /dev/zero | tr '\\0' b; echo"] },
    selfremoving: { command: "/bin/sh", args: ["-c", 'rm -rf "$PWD"'] },
  };
  const run = (type: string, payload: unknown = { file: "a.mp4" }, signal = new AbortController().signal) => {
    const handlers = buildHandlers({ ...allowList, ...cases }, scratch);
    const j: Job = { job_id: "j-1", type, payload };
    const handler = handlers.get(type);
    if (!handler) throw new Error(`no handler for ${type}`);
    return handler({ job: j, messageId: "m-1", signal, logger });
  };
  const lines = (stream: string) =>
    logger
      .withStep("job_output")
      .filter((e) => e.fields.stream === stream)
      .map((e) => e.fields.line);

  it("registers one handler per allow-listed job type, and nothing else", () => {
    expect([...buildHandlers(allowList, scratch).keys()]).to.deep.equal(["echo", "fail", "sleepy"]);
  });

  it("passes the payload on stdin, runs in a private directory on the scratch volume, and logs stdout and stderr", async () => {
    await run("echo", { file: "a.mp4", executable: "/bin/rm" });

    const out = lines("stdout");
    expect(out[0]).to.equal('{"file":"a.mp4","executable":"/bin/rm"}');
    expect(out[1]).to.equal("job=j-1 type=echo");
    expect(String(out[2]).startsWith(path.join(scratch, "job-"))).to.equal(true);
    expect(lines("stderr")).to.deep.equal(["warn"]);
    expect(fs.readdirSync(scratch), "the job directory is removed afterwards").to.deep.equal([]);
  });

  it("fails the job on a non-zero exit code", async () => {
    const error = await run("fail").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(ExecutableFailedError);
    expect((error as ExecutableFailedError).exitCode).to.equal(3);
  });

  it("kills the executable when the job is aborted (shutdown)", async () => {
    const abort = new AbortController();
    const started = Date.now();
    const pending = run("sleepy", {}, abort.signal);
    while (!lines("stdout").includes("started")) await new Promise((r) => setImmediate(r));
    abort.abort(new Error("stopping"));

    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(String(error)).to.match(/stopping|abort/i);
    expect(Date.now() - started).to.be.below(5000);
  });
  it("logs stdout lines at info level and stderr lines as warnings", async () => {
    await run("echo");

    const levels = logger.withStep("job_output").map((e) => [e.fields.stream, e.level]);
    expect(levels).to.deep.include(["stdout", "info"]);
    expect(levels).to.deep.include(["stderr", "warn"]);
    expect(levels.every(([stream, level]) => (stream === "stderr" ? level === "warn" : level === "info"))).to.equal(true);
  });

  it("logs a line of 4096 characters whole, and cuts a longer one to 4096 with an ellipsis", async () => {
    await run("long");

    expect(lines("stdout")).to.deep.equal(["a".repeat(4096), `${"b".repeat(4096)}…`]);
  });

  it("runs with only PATH (the worker's), HOME and TMPDIR (its own directory), JOB_ID and JOB_TYPE", async () => {
    process.env.WORKER_TEST_SECRET = "leaked";
    try {
      await run("env");
    } finally {
      delete process.env.WORKER_TEST_SECRET;
    }

    const [vars, cwd] = lines("stdout") as [string, string];
    expect(vars).to.equal(`${process.env.PATH}|${cwd}|${cwd}|j-1|env|unset`);
  });

  it("gives the executable a standard PATH when the worker has none", async () => {
    const saved = process.env.PATH;
    delete process.env.PATH;
    try {
      await run("env");
    } finally {
      process.env.PATH = saved;
    }

    expect(String(lines("stdout")[0]).split("|")[0]).to.equal("/usr/local/bin:/usr/bin:/bin");
  });

  it("sends null on stdin for a job without a payload", async () => {
    const handler = buildHandlers(allowList, scratch).get("echo")!;
    await handler({ job: { job_id: "j-1", type: "echo", payload: undefined }, messageId: "m-1", signal: new AbortController().signal, logger });

    expect(lines("stdout")[0]).to.equal("null");
  });

  it("does not fail a job whose program exits without reading its stdin", async () => {
    await run("deaf", { blob: "x".repeat(1 << 20) });

    expect(fs.readdirSync(scratch)).to.deep.equal([]);
  });

  it("does not fail a job whose program removed its own working directory", async () => {
    await run("selfremoving");

    expect(fs.readdirSync(scratch)).to.deep.equal([]);
  });

  it("fails the job when its program is killed by a signal, naming the signal", async () => {
    const error = await run("killed").then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).to.be.instanceOf(ExecutableFailedError);
    expect(error).to.include({ exitCode: null, signalName: "SIGKILL", message: "executable was killed by SIGKILL", name: "ExecutableFailedError" });
    expect(fs.readdirSync(scratch), "the job directory is removed after a failure too").to.deep.equal([]);
  });

  const failures: Array<[number | null, NodeJS.Signals | null, string]> = [
    [3, null, "executable exited with code 3"],
    [null, "SIGTERM", "executable was killed by SIGTERM"],
    [null, null, "executable was killed by a signal"],
  ];
  for (const [code, signal, message] of failures) {
    it(`explains a failed run (code ${code}, signal ${signal}) as "${message}"`, () => {
      expect(new ExecutableFailedError(code, signal)).to.include({ message, name: "ExecutableFailedError", exitCode: code, signalName: signal });
    });
  }

  it("kills with SIGKILL an executable that ignores SIGTERM when the job is aborted", async () => {
    const abort = new AbortController();
    const pending = run("stubborn", {}, abort.signal);
    let started: string | undefined;
    while (!(started = lines("stdout").find((l) => String(l).startsWith("started ")) as string | undefined)) await new Promise((r) => setImmediate(r));
    const pid = Number(started.split(" ")[1]);
    abort.abort(new Error("stopping"));

    try {
      const outcome = await Promise.race([
        pending.then(
          () => "resolved",
          (e: unknown) => String(e),
        ),
        new Promise<string>((r) => setTimeout(() => r("still running after 3 s"), 3000)),
      ]);
      expect(outcome).to.match(/abort/i);
    } finally {
      // Whatever the outcome, no test leaves the program behind.
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone: the expected case
      }
    }
  });

  const lateAborts: Array<[string, unknown, string]> = [
    ["its abort reason", new Error("stopping"), "stopping"],
    ["'job aborted' when the reason is not an error", "stop", "job aborted"],
  ];
  for (const [name, reason, message] of lateAborts) {
    it(`fails a job aborted after its program exited (its output still open) with ${name}`, async () => {
      const abort = new AbortController();
      const pending = run("lingering", {}, abort.signal);
      while (!lines("stdout").includes("started")) await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 150)); // the shell has exited; its background child holds stdout
      abort.abort(reason);

      const error = await pending.then(
        () => undefined,
        (e: unknown) => e,
      );

      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.equal(message);
    });
  }
});
