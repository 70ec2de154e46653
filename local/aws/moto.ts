/**
 * moto, the local AWS: installed into `.venv` when missing, started on a free loopback port,
 * stopped at the end. The local run (`npm start`) and the moto test suites share this.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

export class MotoUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MotoUnavailableError";
  }
}

export function freeLoopbackPort(): Promise<number> {
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

/**
 * Installs moto into `.venv` unless it is already there (scripts/ensure-moto.sh). Fails with a
 * clear message when Python 3 is missing.
 */
export function ensureMotoInstalled(root = ROOT): string {
  const python = path.join(root, ".venv/bin/python");
  try {
    execFileSync("bash", [path.join(root, "scripts/ensure-moto.sh")], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? "";
    throw new MotoUnavailableError(
      stderr.includes("not found")
        ? `Python 3 is required to run moto, the local AWS: ${stderr}`
        : `could not install moto into .venv: ${stderr || (err as Error).message}`,
    );
  }
  if (!fs.existsSync(python)) throw new MotoUnavailableError(`moto was installed but ${python} is missing`);
  return python;
}

/** One message SQS deleted because it outlived its queue's retention (moto-server.py, retention_deletes). */
export interface ExpiredMessage {
  queueName: string;
  messageId: string;
  sentMs: number;
  retentionSeconds: number;
  expiredMs: number;
}

export class MotoServer {
  private child?: ChildProcess;
  private tail = "";
  private readonly stopOnExit = () => this.kill();
  endpoint = "";
  private expiredLog: string | undefined;
  private ownLogDir: string | undefined;

  /**
   * Starts moto on a free loopback port and waits until it answers. It runs through
   * `local/aws/moto-server.py`, which makes each DynamoDB and SSM request atomic as AWS does: moto's own
   * backends take no lock, so two concurrent conditional writes could both pass their condition.
   * `env` is added to the server's environment (tests set MOTO_SWITCH_INTERVAL there).
   * `expiredLog`: the file moto-server.py appends each message it deleted for age to (expired());
   * by default a file in a temporary directory of its own, removed by stop().
   */
  async start(opts: { env?: Record<string, string>; expiredLog?: string } = {}): Promise<string> {
    const python = ensureMotoInstalled();
    if (opts.expiredLog === undefined) this.ownLogDir = fs.mkdtempSync(path.join(os.tmpdir(), "encache-moto-"));
    this.expiredLog = opts.expiredLog ?? path.join(this.ownLogDir ?? "", "sqs-expired.jsonl");
    const port = await freeLoopbackPort();
    this.child = spawn(python, [path.join(ROOT, "local/aws/moto-server.py"), "-H", "127.0.0.1", "-p", String(port)], {
      cwd: ROOT,
      env: { ...process.env, ...opts.env, MOTO_SQS_EXPIRED_LOG: this.expiredLog },
      stdio: ["ignore", "pipe", "pipe"],
      // Ctrl-C in a terminal reaches the whole process group: moto must outlive us just long
      // enough for the final summary, and is stopped by stop().
      detached: true,
    });
    const keep = (chunk: Buffer) => (this.tail = (this.tail + chunk.toString()).slice(-4000));
    this.child.stdout?.on("data", keep);
    this.child.stderr?.on("data", keep);
    process.once("exit", this.stopOnExit);
    this.endpoint = `http://127.0.0.1:${port}`;
    await this.waitUntilReady(20_000);
    return this.endpoint;
  }

  private async waitUntilReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child?.exitCode !== null) throw new MotoUnavailableError(`moto exited early (code ${this.child?.exitCode}):\n${this.tail}`);
      try {
        const res = await fetch(`${this.endpoint}/moto-api/data.json`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new MotoUnavailableError(`moto did not become ready within ${timeoutMs} ms:\n${this.tail}`);
  }

  /**
   * The messages SQS deleted for age (older than their queue's MessageRetentionPeriod), as
   * moto-server.py logged them.
   */
  async expired(): Promise<ExpiredMessage[]> {
    if (this.expiredLog === undefined) return [];
    const text = await readFile(this.expiredLog, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return "";
      throw error;
    });
    return text
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as ExpiredMessage);
  }

  /** Clears every service's state. */
  async reset(): Promise<void> {
    const res = await fetch(`${this.endpoint}/moto-api/reset`, { method: "POST" });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`moto reset failed: HTTP ${res.status}`);
  }

  private kill(): void {
    if (this.child && this.child.exitCode === null && this.child.pid !== undefined) this.child.kill("SIGTERM");
  }

  async stop(): Promise<void> {
    process.removeListener("exit", this.stopOnExit);
    const child = this.child;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      this.kill();
      await exited;
    }
    if (this.ownLogDir !== undefined) fs.rmSync(this.ownLogDir, { recursive: true, force: true });
  }
}

/** Environment that points every AWS SDK v3 client at moto, with dummy credentials. */
export function motoClientEnv(endpoint: string, region: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: "testing",
    AWS_SECRET_ACCESS_KEY: "testing",
    AWS_EC2_METADATA_DISABLED: "true",
  };
}
