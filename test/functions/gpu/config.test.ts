import { expect } from "chai";
import { parseGatewayConfig } from "../../../functions/gpu/config";
import { GATEWAY_ENV } from "../../../functions/gpu/env";
import { EnvConfigError } from "../../../functions/shared/env";

const INSTANCE_ENV = {
  GPU_SERVICE_PORT: "8080",
  GPU_SERVICE_PATH: "/windows",
  GPU_STATUS_PATH: "/status",
  GPU_MODEL_URL: "http://127.0.0.1:9000/",
  GPU_MODEL_PATH: "/infer",
  GPU_MODEL_HEALTH_PATH: "/health",
  GPU_MODEL_CONCURRENCY: "4",
  GPU_MODEL_TIMEOUT_MS: "30000",
  GPU_KEYS_TABLE: "encache-gpu-keys-dev",
  GPU_KEY_LEASE_SECONDS: "90",
  GPU_DRAIN_POLL_SECONDS: "5",
};

describe("gpu gateway: config (functions/gpu/config.ts)", () => {
  it("parses the instance-mode environment, in ms, the model URL without its trailing slash", () => {
    expect(parseGatewayConfig(INSTANCE_ENV)).to.deep.equal({
      servicePort: 8080,
      servicePath: "/windows",
      statusPath: "/status",
      modelUrl: "http://127.0.0.1:9000",
      modelPath: "/infer",
      modelHealthPath: "/health",
      modelConcurrency: 4,
      modelTimeoutMs: 30_000,
      keysTable: "encache-gpu-keys-dev",
      keyLeaseMs: 90_000,
      drainPollMs: 5000,
      fleet: undefined,
    });
  });

  it("reads the round trip of GATEWAY_ENV.encode (what the user data writes)", () => {
    const env = GATEWAY_ENV.encode({ ...GATEWAY_ENV.parse(INSTANCE_ENV), groupName: "g", drainHookName: "drain" });
    expect(parseGatewayConfig(env).fleet).to.deep.equal({ groupName: "g", hookName: "drain" });
  });

  const bad: Array<[string, Record<string, string>, RegExp]> = [
    ["a group without a hook", { GPU_FLEET_GROUP_NAME: "g" }, /set together/],
    ["a hook without a group", { GPU_DRAIN_HOOK_NAME: "drain" }, /set together/],
    ["concurrency 0", { GPU_MODEL_CONCURRENCY: "0" }, /at least 1/],
    ["a missing table", { GPU_KEYS_TABLE: "" }, /GPU_KEYS_TABLE is required/],
  ];
  for (const [name, over, message] of bad)
    it(`refuses ${name}`, () => {
      expect(() => parseGatewayConfig({ ...INSTANCE_ENV, ...over }))
        .to.throw(EnvConfigError)
        .with.property("message")
        .that.matches(message);
    });
});
