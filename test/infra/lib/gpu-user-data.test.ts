import { expect } from "chai";
import { parse } from "yaml";
import { GATEWAY_ENV, GATEWAY_ENV_FILE } from "../../../functions/gpu/env";
import {
  ECR_LOGIN_HELPER,
  GATEWAY_UNIT,
  type GatewayEnv,
  type GpuUserDataInput,
  MODEL_UNIT,
  registryOf,
  renderGpuUserData,
} from "../../../infra/lib/gpu-user-data";
import { gatewayEnvValues, gatewayKeyLeaseSeconds, gpuHostStatements } from "../../../infra/parts/gpu-host";

type CloudConfig = { write_files: Array<{ path: string; content: string; permissions: string; owner: string }>; runcmd: string[][] };

const GATEWAY_IMAGE = `123456789012.dkr.ecr.us-east-1.amazonaws.com/gw@sha256:${"b".repeat(64)}`;
const MODEL_IMAGE = `210987654321.dkr.ecr.eu-west-1.amazonaws.com/team/model@sha256:${"c".repeat(64)}`;
const gpu = {
  servicePort: 8080,
  servicePath: "/ingest/window",
  statusPath: "/status",
  model: { source: "image" as const, image: MODEL_IMAGE, port: 9000, path: "/v1/window", healthPath: "/health", concurrency: 2, timeoutMs: 9000 },
};

function input(overrides: Partial<GpuUserDataInput> = {}): GpuUserDataInput {
  return {
    region: "us-east-1",
    gateway: gatewayEnvValues(gpu, "keys-table"),
    gatewayImage: GATEWAY_IMAGE,
    model: { source: "image", image: MODEL_IMAGE, port: 9000 },
    logGroups: { gateway: "/encache/dev/gpu-gateway", model: "/encache/dev/gpu-model" },
    gatewayStopSeconds: 20,
    ...overrides,
  };
}
const rendered = (i: GpuUserDataInput) => parse(renderGpuUserData(i)) as CloudConfig;
const file = (c: CloudConfig, p: string) => c.write_files.find((f) => f.path === p);

describe("renderGpuUserData (infra/lib/gpu-user-data.ts)", () => {
  it("writes the gateway's env file, 0600, as GATEWAY_ENV's encoding plus AWS_REGION, which the gateway's codec reads back", () => {
    // Act
    const env = file(rendered(input()), GATEWAY_ENV_FILE)!;
    const vars = Object.fromEntries(
      env.content
        .trimEnd()
        .split("\n")
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    // Assess
    expect(env.permissions).to.equal("0600");
    expect(env.owner).to.equal("root:root");
    expect(vars).to.deep.equal({ AWS_REGION: "us-east-1", ...GATEWAY_ENV.encode(gatewayEnvValues(gpu, "keys-table")) });
    expect(GATEWAY_ENV.parse(vars)).to.deep.include({ modelUrl: "http://127.0.0.1:9000", modelConcurrency: 2, keysTable: "keys-table", keyLeaseSeconds: 39 });
  });

  const modes: Array<{ title: string; input: GpuUserDataInput; units: string[] }> = [
    { title: "image mode runs the model and the gateway", input: input(), units: [MODEL_UNIT, GATEWAY_UNIT] },
    {
      title: "ami mode runs the gateway only (the AMI starts the model)",
      input: input({ model: { source: "ami" }, logGroups: { gateway: "/encache/dev/gpu-gateway" } }),
      units: [GATEWAY_UNIT],
    },
  ];
  for (const m of modes) {
    it(`${m.title}: units written and enabled`, () => {
      // Act
      const c = rendered(m.input);
      // Assess
      expect(c.write_files.filter((f) => f.path.startsWith("/etc/systemd/system/")).map((f) => f.path)).to.deep.equal(
        m.units.map((u) => `/etc/systemd/system/${u}`),
      );
      expect(c.runcmd).to.deep.equal([
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", "--now", "--no-block", ...m.units],
      ]);
    });
  }

  it("runs each container on the host network, restarting always, logging to its group, logged in to its own registry first", () => {
    // Act
    const c = rendered(input());
    const model = file(c, `/etc/systemd/system/${MODEL_UNIT}`)!.content;
    const gateway = file(c, `/etc/systemd/system/${GATEWAY_UNIT}`)!.content;
    // Assess
    expect(model).to.contain("Restart=always");
    expect(model).to.contain(`ExecStartPre=${ECR_LOGIN_HELPER} 210987654321.dkr.ecr.eu-west-1.amazonaws.com`);
    expect(model).to.match(
      /ExecStart=\/usr\/bin\/docker run --rm --name encache-gpu-model --network host --gpus all .*awslogs-group=\/encache\/dev\/gpu-model/,
    );
    expect(gateway).to.contain("Restart=always");
    expect(gateway).to.contain(`ExecStartPre=${ECR_LOGIN_HELPER} 123456789012.dkr.ecr.us-east-1.amazonaws.com`);
    expect(gateway).to.contain(`--network host --env-file ${GATEWAY_ENV_FILE}`);
    expect(gateway).to.not.contain("--gpus");
    expect(gateway).to.contain("ExecStop=/usr/bin/docker stop --time 20 encache-gpu-gateway");
    expect(gateway).to.contain("TimeoutStopSec=30");
  });

  it("refuses a value with a line break, which would smuggle another variable into the env file", () => {
    // Prepare
    const gateway: GatewayEnv = { ...gatewayEnvValues(gpu, "keys-table"), servicePath: "/a\nGPU_KEYS_TABLE=other" };
    // Act + Assess
    expect(() => renderGpuUserData(input({ gateway }))).to.throw(/GPU_SERVICE_PATH: a value with a line break/);
  });

  it("names the registry of an image, and refuses one without", () => {
    expect(registryOf(MODEL_IMAGE)).to.equal("210987654321.dkr.ecr.eu-west-1.amazonaws.com");
    expect(() => registryOf("model@sha256:abc")).to.throw(/names no registry/);
  });
});

describe("the gateway's environment and the instance role (infra/parts/gpu-host.ts)", () => {
  it("carries the fleet's group and drain hook in fleet mode only", () => {
    expect(gatewayEnvValues(gpu, "t")).to.not.have.any.keys("groupName", "drainHookName");
    expect(gatewayEnvValues(gpu, "t", { groupName: "g", drainHookName: "drain" })).to.include({ groupName: "g", drainHookName: "drain" });
  });

  it("leases a key for the model's timeout and a margin", () => {
    expect(gatewayKeyLeaseSeconds({ timeoutMs: 9000 })).to.equal(39);
    expect(gatewayKeyLeaseSeconds({ timeoutMs: 9001 })).to.equal(40);
  });

  const roles: Array<{ title: string; group: boolean; modelImage?: string; sids: string[] }> = [
    { title: "instance mode, image model", group: false, modelImage: MODEL_IMAGE, sids: ["GpuKeyClaims", "EcrLogin", "EcrPullGpuImages", "GpuContainerLogs"] },
    { title: "fleet mode, AMI model", group: true, sids: ["GpuKeyClaims", "CompleteOwnDrain", "EcrLogin", "EcrPullGpuImages", "GpuContainerLogs"] },
  ];
  for (const r of roles) {
    it(`grants ${r.title}: the gateway's calls, ECR pull on the named repositories, the log groups`, () => {
      // Act
      const statements = gpuHostStatements({
        keysTableArn: "arn:table",
        ...(r.group ? { group: { resource: "arn:group" } } : {}),
        gatewayRepositoryArn: "arn:repo/gw",
        ...(r.modelImage ? { modelImage: r.modelImage } : {}),
        logGroupArns: ["arn:lg"],
      });
      // Assess
      expect(statements.map((s) => s.Sid)).to.deep.equal(r.sids);
      const pull = statements.find((s) => s.Sid === "EcrPullGpuImages")!;
      expect(pull.Resource).to.deep.equal(["arn:repo/gw", ...(r.modelImage ? ["arn:aws:ecr:eu-west-1:210987654321:repository/team/model"] : [])]);
    });
  }
});
