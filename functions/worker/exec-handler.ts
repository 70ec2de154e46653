import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { logStep } from "../shared/logger";
import type { Executable } from "./config";
import type { JobContext } from "./job";

/** Longest stdout/stderr line logged as is; longer ones are cut, so one job can't flood the log. */
const MAX_LINE = 4096;

export class ExecutableFailedError extends Error {
  constructor(
    readonly exitCode: number | null,
    readonly signalName: NodeJS.Signals | null,
  ) {
    super(exitCode === null ? `executable was killed by ${signalName ?? "a signal"}` : `executable exited with code ${exitCode}`);
    this.name = "ExecutableFailedError";
  }
}

/**
 * Runs one allow-listed executable: no shell, fixed arguments, the job payload as JSON on stdin,
 * a private working directory on the scratch volume (the root filesystem is read-only), and a
 * minimal environment. Its exit code decides success; every output line goes to the log.
 */
export async function runExecutable(executable: Executable, ctx: JobContext, scratchDir: string): Promise<void> {
  const workDir = await mkdtemp(path.join(scratchDir, "job-"));
  try {
    await new Promise<void>((resolve, reject) => {
      // stdio: Node's default, three pipes (stdin carries the payload, both outputs are logged).
      const child = spawn(executable.command, executable.args, {
        cwd: workDir,
        env: {
          PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
          HOME: workDir,
          TMPDIR: workDir,
          JOB_ID: ctx.job.job_id,
          JOB_TYPE: ctx.job.type,
        },
        signal: ctx.signal,
        killSignal: "SIGKILL",
      });
      for (const [stream, readable] of [
        ["stdout", child.stdout],
        ["stderr", child.stderr],
      ] as const) {
        createInterface({ input: readable }).on("line", (line) => {
          logStep(ctx.logger, stream === "stderr" ? "warn" : "info", "job_output", {
            job_id: ctx.job.job_id,
            stream,
            line: line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line,
          });
        });
      }
      // A program that never reads stdin closes it early; that is not a failure.
      child.stdin.on("error", () => undefined);
      child.stdin.end(JSON.stringify(ctx.job.payload ?? null));
      child.once("error", reject);
      child.once("close", (code, signal) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error("job aborted"));
        else if (code === 0) resolve();
        else reject(new ExecutableFailedError(code, signal));
      });
    });
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
