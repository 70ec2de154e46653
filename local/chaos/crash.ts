/**
 * The chaos run's crashes (`--crash-rate`): how the fault proxy's chosen kill reaches the process
 * that made the call, and what that process was working on when it died.
 *
 * - A Lambda sandbox names its invocation on each AWS call (`x-local-invocation`, see
 *   lambda-sandbox.cjs); the Lambda host kills that sandbox (a worker thread: terminate(), Node's
 *   nearest to SIGKILL) and the invocation ends as `Runtime.ExitError`. Its work: the batch's message ids.
 * - A worker task or a GPU gateway is a child process: the call's socket is found in /proc (the
 *   client end's port → its inode → the candidate process holding that inode), and the process gets
 *   SIGKILL. Its work: what its own log lines (from its start to its death) show taken and not finished.
 */
import * as fs from "node:fs";
import type * as http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { Killed } from "./fault-proxy";

/** Pure: the inode of the TCP socket from `clientPort` to `serverPort` in a /proc/net/tcp{,6} table. */
export function socketInodeIn(table: string, clientPort: number, serverPort: number): string | undefined {
  for (const line of table.split("\n").slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10) continue;
    const port = (address: string | undefined) => Number.parseInt(address?.split(":").pop() ?? "", 16);
    if (port(cols[1]) === clientPort && port(cols[2]) === serverPort) return cols[9];
  }
  return undefined;
}

/** `f()`, or `fallback` when it throws (a file or process gone meanwhile, a line that is not JSON). */
function tryOr<T>(f: () => T, fallback: T): T {
  try {
    return f();
  } catch {
    return fallback;
  }
}

const readOr = (file: string): string => tryOr(() => fs.readFileSync(file, "utf8"), "");

/** Which of `pids` holds the client end of the request's connection (Linux /proc), if any. */
export function pidOfPeer(req: http.IncomingMessage, pids: readonly number[]): number | undefined {
  const clientPort = req.socket.remotePort;
  const serverPort = req.socket.localPort;
  if (clientPort === undefined || serverPort === undefined) return undefined;
  let inode: string | undefined;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) inode ??= socketInodeIn(readOr(file), clientPort, serverPort);
  if (inode === undefined) return undefined;
  const link = `socket:[${inode}]`;
  const holds = (pid: number) =>
    tryOr(() => fs.readdirSync(`/proc/${pid}/fd`), []).some((fd) => tryOr(() => fs.readlinkSync(`/proc/${pid}/fd/${fd}`), "") === link);
  return pids.find(holds);
}

/** SIGKILL, then wait (at most `waitMs`) until the process is gone. */
export async function sigkill(pid: number, waitMs = 5000): Promise<boolean> {
  if (!tryOr(() => process.kill(pid, "SIGKILL"), false)) return false;
  const until = Date.now() + waitMs;
  while (Date.now() < until) {
    if (!tryOr(() => process.kill(pid, 0), false)) return true;
    // A zombie (exited, not yet reaped by its parent) still answers signal 0.
    if (/^\S+ \(.*\) Z/.test(readOr(`/proc/${pid}/stat`))) return true;
    await sleep(10);
  }
  return true;
}

/** A process's own lines of a log file that several processes appended to in turn (from `offset` on). */
export function logSegment(file: string, offset: number): string {
  return tryOr(() => fs.readFileSync(file).subarray(offset).toString("utf8"), "");
}

function jsonLines(text: string): Array<Record<string, unknown>> {
  return text.split("\n").flatMap((line) => {
    const v: unknown = line.includes("{") ? tryOr(() => JSON.parse(line.slice(line.indexOf("{"))), undefined) : undefined;
    return typeof v === "object" && v !== null ? [v as Record<string, unknown>] : [];
  });
}

/**
 * Pure: the work a process held when it died, from its own log lines: ids whose last step was one
 * that takes work (`takes`) and not one that ends it (`ends`), in order.
 */
export function heldAtDeath(text: string, idField: string, takes: readonly string[], ends: readonly string[]): string[] {
  const held = new Set<string>();
  for (const line of jsonLines(text)) {
    const id = line[idField];
    const step = typeof line.step === "string" ? line.step.replace(/-/g, "_") : "";
    if (typeof id !== "string") continue;
    if (takes.includes(step)) held.add(id);
    else if (ends.includes(step)) held.delete(id);
  }
  return [...held];
}

/** A worker task's jobs in hand at its death: leased and not completed, failed or given back. */
export const workerJobsHeld = (text: string): string[] =>
  heldAtDeath(text, "job_id", ["job_lease_taken", "job_started"], ["job_succeeded", "job_failed", "job_returned", "job_lease_lost", "job_lease_failed"]);

/** A gateway's windows in hand at its death: claimed and not done, handed back or released. */
export const gatewayWindowsHeld = (text: string): string[] =>
  heldAtDeath(
    text,
    "key",
    ["window_claimed"],
    ["window_done", "window_done_refused", "window_done_unrecorded", "window_handed_back", "key_released", "key_release_lost", "model_failed"],
  );

/** A child process the run may kill: its pid, and where its own log lines start. */
export interface KillableProcess {
  pid: number;
  logFile: string;
  logOffset: number;
}

/** Kills whichever of `candidates` made the call; its work read from its log with `held`. */
export async function killChild(
  req: http.IncomingMessage,
  candidates: readonly KillableProcess[],
  held: (text: string) => string[],
): Promise<Killed | undefined> {
  const pids = candidates.map((c) => c.pid);
  const pid = pids.length === 1 ? pids[0] : pidOfPeer(req, pids);
  const target = candidates.find((c) => c.pid === pid);
  if (target === undefined) return undefined;
  if (!(await sigkill(target.pid))) return undefined;
  // Let the last lines it wrote reach the file (they were written before it died; the read is after).
  return { process: `pid ${target.pid}`, work: held(logSegment(target.logFile, target.logOffset)) };
}
