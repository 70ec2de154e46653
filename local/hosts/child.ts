/**
 * The processes the hosts run (each GPU instance's gateway, each worker task): spawned with their
 * output appended to a log file, stopped as a service manager stops them, and never left behind by
 * the run (SIGKILL at exit).
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { withDeadline } from "./clock";

/** A process started by `spawnLogged`; `exited` settles once it is gone (its exit, or a failed spawn). */
export interface LoggedChild {
  child: ChildProcess;
  exited: Promise<void>;
  /** Where its lines start in the log file (a restart appends to the same file). */
  logOffset: number;
}

const alive = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of alive) child.kill("SIGKILL");
});

export const isAlive = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** `node <args>` with `env` only (nothing of the parent's environment), its stdout and stderr appended to `logFile`. */
export function spawnLogged(args: string[], env: Record<string, string>, logFile: string, cwd?: string): LoggedChild {
  const fd = fs.openSync(logFile, "a");
  const logOffset = fs.fstatSync(fd).size;
  const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", fd, fd] });
  fs.closeSync(fd);
  alive.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    // A spawn failure emits error and maybe no exit.
    child.once("error", () => resolve());
  }).then(() => void alive.delete(child));
  return { child, exited, logOffset };
}

/** SIGTERM, then SIGKILL if it has not exited within `ms`; resolves once it is gone. */
export async function terminate({ child, exited }: LoggedChild, ms: number): Promise<void> {
  if (!isAlive(child)) return;
  child.kill("SIGTERM");
  if ((await withDeadline(exited, ms)) === "timeout" && isAlive(child)) {
    child.kill("SIGKILL");
    await exited;
  }
}
