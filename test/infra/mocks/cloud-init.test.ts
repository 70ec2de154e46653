/**
 * The GPU user data of both stacks, as their plans render it, validated by the real cloud-init
 * (Debian's package, 22.4.2, `cloud-init schema --config-file`), which scripts/ensure-cloud-init.sh
 * unpacks into .tools/cloud-init with its Python dependencies in .venv-cloud-init (the test:infra
 * tier runs it first). A misspelt key must fail the same check, or the check proves nothing.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { GATEWAY_ENV, GATEWAY_ENV_FILE } from "../../../functions/gpu/env";
import { REPO_ROOT } from "../../../infra/bundle";
import { MODEL_UNIT, renderGpuUserData } from "../../../infra/lib/gpu-user-data";
import { gpuBoot } from "../helpers/gpu-user-data";
import { STACKS, useStackPlans } from "../helpers/run-plan";

const CLOUD_INIT = path.join(REPO_ROOT, ".tools/cloud-init");
const PYTHON = path.join(REPO_ROOT, ".venv-cloud-init/bin/python");

/** `cloud-init schema --config-file` on `userData`: its exit code and what it printed. */
function cloudInitSchema(userData: string): { code: number | null; output: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "encache-cloud-init-"));
  try {
    const file = path.join(dir, "user-data");
    fs.writeFileSync(file, userData);
    const run = spawnSync(PYTHON, [path.join(CLOUD_INIT, "usr/bin/cloud-init"), "schema", "--config-file", file], {
      env: { ...process.env, PYTHONPATH: path.join(CLOUD_INIT, "usr/lib/python3/dist-packages") },
      encoding: "utf8",
      timeout: 60_000,
    });
    if (run.error) throw run.error;
    return { code: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe("the GPU user data passes the real cloud-init schema (both stacks' plans)", function () {
  this.timeout(120_000);
  const stacks = useStackPlans();

  before(function () {
    if (!fs.existsSync(PYTHON) || !fs.existsSync(path.join(CLOUD_INIT, "usr/bin/cloud-init"))) {
      throw new Error("cloud-init is not unpacked: run `bash scripts/ensure-cloud-init.sh` (npm run test:infra does)");
    }
  });

  for (const stack of STACKS) {
    it(`${stack}: the rendered #cloud-config is valid`, () => {
      // Prepare
      const { userData } = gpuBoot(stacks[stack]!);
      // Act
      const result = cloudInitSchema(userData);
      // Assess
      expect(result.output).to.contain("Valid cloud-config");
      expect(result.code, result.output).to.equal(0);
    });
  }

  it("an AMI-served model's user data (the gateway only) is valid too", () => {
    // Prepare: dev's own, rendered again in AMI mode with the same gateway environment.
    const dev = parse(gpuBoot(stacks.dev!).userData) as { write_files: Array<{ path: string; content: string }> };
    const env = Object.fromEntries(
      dev.write_files
        .find((f) => f.path === GATEWAY_ENV_FILE)!
        .content.trimEnd()
        .split("\n")
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    const userData = renderGpuUserData({
      region: env.AWS_REGION!,
      gateway: GATEWAY_ENV.parse(env),
      gatewayImage: `123456789012.dkr.ecr.us-east-1.amazonaws.com/gw@sha256:${"b".repeat(64)}`,
      model: { source: "ami" },
      logGroups: { gateway: "/encache/dev/gpu-gateway" },
      gatewayStopSeconds: 20,
    });
    // Act
    const result = cloudInitSchema(userData);
    // Assess
    expect(userData).to.not.contain(MODEL_UNIT);
    expect(result.code, result.output).to.equal(0);
  });

  const broken: Array<{ title: string; edit: (doc: { write_files: Array<Record<string, unknown>> }) => void; says: RegExp }> = [
    {
      title: "a misspelt write_files key (permisions)",
      edit: (doc) => {
        const file = doc.write_files[0]!;
        file.permisions = file.permissions;
        delete file.permissions;
      },
      says: /'permisions' was unexpected/,
    },
    {
      title: "a write_files entry without its path",
      edit: (doc) => {
        delete doc.write_files[0]!.path;
      },
      says: /'path' is a required property/,
    },
  ];
  for (const c of broken) {
    it(`fails on ${c.title}`, () => {
      // Prepare: dev's own user data, broken in one place.
      const doc = parse(gpuBoot(stacks.dev!).userData) as { write_files: Array<Record<string, unknown>> };
      c.edit(doc);
      // Act
      const result = cloudInitSchema(`#cloud-config\n${stringify(doc)}`);
      // Assess
      expect(result.code, result.output).to.equal(1);
      expect(result.output).to.match(c.says);
    });
  }
});
