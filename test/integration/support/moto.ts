/**
 * Mocha root-hook plugin (loaded with --require): one moto server for the whole run on a free
 * loopback port, with the AWS SDK pointed at it through AWS_ENDPOINT_URL. Tests call resetMoto().
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { resolve } from "node:path";

const root = resolve(__dirname, "../../..");
let moto: ChildProcess | undefined;
let endpoint = "";
let output = "";

function freeLoopbackPort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => done(port));
    });
  });
}

async function waitUntilReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (moto?.exitCode !== null) throw new Error(`moto exited early (code ${moto?.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${url}/moto-api/data.json`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`moto did not become ready within ${timeoutMs} ms:\n${output}`);
}

function stopMoto(): void {
  if (moto && moto.exitCode === null && moto.pid !== undefined) moto.kill("SIGTERM");
}

export function motoEndpoint(): string {
  if (!endpoint) throw new Error("moto is not running: load test/integration/support/moto.ts with --require");
  return endpoint;
}

/** Clears every service's state, so each test starts from an empty account. */
export async function resetMoto(): Promise<void> {
  const res = await fetch(`${motoEndpoint()}/moto-api/reset`, { method: "POST" });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`moto reset failed: HTTP ${res.status}`);
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(30_000);
    const port = await freeLoopbackPort();
    moto = spawn(resolve(root, ".venv/bin/python"), ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Keep only the tail, for the error message if start-up fails.
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
    moto.stdout?.on("data", keep);
    moto.stderr?.on("data", keep);
    // Also on a crash or Ctrl-C, never leave moto behind.
    process.once("exit", stopMoto);
    endpoint = `http://127.0.0.1:${port}`;
    await waitUntilReady(endpoint, 20_000);

    Object.assign(process.env, {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "testing",
      AWS_SECRET_ACCESS_KEY: "testing",
      AWS_EC2_METADATA_DISABLED: "true",
    });
    delete process.env.AWS_PROFILE;
    delete process.env.AWS_SESSION_TOKEN;
  },

  async afterAll(): Promise<void> {
    const exited = moto && moto.exitCode === null ? new Promise((r) => moto?.once("exit", r)) : Promise.resolve();
    stopMoto();
    await exited;
  },
};
