/**
 * Runs test/local/helpers/provision-child.ts in a fresh Node process (deployLocally may run once
 * per process) with this process's environment, which the moto root hook points at moto.
 */
import { spawn } from "node:child_process";
import * as path from "node:path";
import type { Topology } from "../../../local/provision/topology-types";

const ROOT = path.resolve(__dirname, "../../..");
const CHILD = path.join(__dirname, "provision-child.ts");

export interface ChildRun {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
}

export function runProvisionChild(args: string[]): Promise<ChildRun> {
  const started = Date.now();
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { cwd: ROOT, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("error", fail);
    child.once("close", (code) => done({ code, stdout, stderr, wallMs: Date.now() - started }));
  });
}

/** Deploys the stack into moto in a child process and returns its Topology. */
export async function provisionInChild(stack: string, codeDir: string): Promise<{ topology: Topology; run: ChildRun }> {
  const run = await runProvisionChild([stack, codeDir]);
  if (run.code !== 0) throw new Error(`provision-child exited ${run.code}:\n${run.stderr}`);
  return { topology: JSON.parse(run.stdout) as Topology, run };
}
