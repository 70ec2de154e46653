/**
 * Loads policy/ the way `pulumi preview --policy-pack policy` does — Pulumi's own policy-pack
 * runner, which type-checks the pack with policy/tsconfig.json — then asks the analyzer it serves
 * which policies it has. This is the only test that constructs the PolicyPack, and it does so in
 * a child process because construction starts a gRPC server and keeps the process alive.
 */
import { expect } from "chai";
import { ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { AnalyzerClient, AnalyzerService } from "@pulumi/pulumi/proto/analyzer_grpc_pb";
import { AnalyzerInfo, EnforcementLevel } from "@pulumi/pulumi/proto/analyzer_pb";
import { policies } from "../../policy/policies";

const ROOT = path.resolve(__dirname, "../..");
const POLICY_DIR = path.join(ROOT, "policy");
/**
 * With the pack's own install (`npm ci --omit=dev --prefix policy`, as a user runs before
 * `pulumi preview --policy-pack policy`), the runner and everything it loads come from
 * policy/node_modules alone, as under the CLI. Without it, the root's packages stand in.
 */
const OWN_INSTALL = existsSync(path.join(POLICY_DIR, "node_modules", "@pulumi", "pulumi"));
const RUNNER = OWN_INSTALL
  ? require.resolve("@pulumi/pulumi/cmd/run-policy-pack", { paths: [POLICY_DIR] })
  : require.resolve("@pulumi/pulumi/cmd/run-policy-pack");

function withoutNodePath(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy.NODE_PATH;
  return copy;
}

function startPack(): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    // The engine address is unused by a policy pack but required by the runner's argument list.
    const child = spawn(process.execPath, [RUNNER, "127.0.0.1:0", "."], {
      cwd: POLICY_DIR,
      env: OWN_INSTALL ? withoutNodePath(process.env) : { ...process.env, NODE_PATH: path.join(ROOT, "node_modules") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
      const m = /^(\d+)\s*$/m.exec(stdout);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("exit", (code) => reject(new Error(`policy pack exited with ${code}:\n${stderr}${stdout}`)));
    child.on("error", reject);
  });
}

function analyzerInfo(port: number): Promise<AnalyzerInfo> {
  const client = new AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  // Empty must come from the same google-protobuf copy the generated stubs use, hence requestType.
  type Empty = Parameters<AnalyzerClient["getAnalyzerInfo"]>[0];
  const { requestType: Empty } = AnalyzerService.getAnalyzerInfo as unknown as { requestType: new () => Empty };
  return new Promise((resolve, reject) => {
    client.getAnalyzerInfo(new Empty(), new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err, info) => {
      client.close();
      if (err) reject(err);
      else resolve(info);
    });
  });
}

describe("the policy pack as the Pulumi CLI loads it", function () {
  this.timeout(60_000);
  let child: ChildProcess | undefined;

  after(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
  });

  it("serves every rule from policies.ts with its default enforcement level", async () => {
    const started = await startPack();
    child = started.child;
    const info = await analyzerInfo(started.port);

    expect(info.getName()).to.equal("encache-guardrails");
    const pkg = JSON.parse(readFileSync(path.join(POLICY_DIR, "package.json"), "utf8")) as { version: string };
    expect(info.getVersion()).to.equal(pkg.version);
    const served = info.getPoliciesList().map((p) => p.getName());
    expect(served).to.deep.equal(policies.map((p) => p.name));

    const levels = Object.fromEntries(info.getPoliciesList().map((p) => [p.getName(), p.getEnforcementlevel()]));
    for (const p of policies) {
      // Advisory unless a stack's config raises them: the depth alarm, and failing closed on a first preview.
      const expected = ["dlq-has-depth-alarm", "documents-visible-on-preview", "role-inline-policies-known", "alarms-have-actions"].includes(p.name)
        ? EnforcementLevel.ADVISORY
        : EnforcementLevel.MANDATORY;
      expect(levels[p.name], p.name).to.equal(expected);
    }
  });
});
