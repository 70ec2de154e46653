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
  const run = (type: string, payload: unknown = { file: "a.mp4" }, signal = new AbortController().signal) => {
    const handlers = buildHandlers(allowList, scratch);
    const j: Job = { job_id: "j-1", type, payload };
    const handler = handlers.get(type);
    if (!handler) throw new Error(`no handler for ${type}`);
    return handler({ job: j, messageId: "m-1", signal, logger });
  };
  const lines = (stream: string) => logger.withStep("job_output").filter((e) => e.fields.stream === stream).map((e) => e.fields.line);

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
});
