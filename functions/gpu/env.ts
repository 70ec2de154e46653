import { envCodec, envInt, envText, envUrl, optional } from "../shared/env";

/**
 * The GPU gateway's environment (docs/parts/gpu.md): field, env var name and parser, once. The
 * program renders it into the instance's user data (`/etc/encache/gpu-gateway.env`, see
 * `GATEWAY_ENV_FILE`), the local run starts the gateway bundle with the same file, and the gateway
 * parses it with this codec. Defaults and bounds are the stack schema's (`encache:gpu`).
 */
export const GATEWAY_ENV = envCodec({
  /** The port the gateway listens on: the stack's service port (the load balancer's and the consumers'). */
  servicePort: envInt("GPU_SERVICE_PORT"),
  /** `POST` path of a window (the consumers' GPU_SERVICE_PATH). */
  servicePath: envText("GPU_SERVICE_PATH"),
  /** `GET` path of the status (`{active, idleSeconds}`), the load balancer's health check. */
  statusPath: envText("GPU_STATUS_PATH"),
  /** The user's model server on this instance, e.g. `http://127.0.0.1:9000`. */
  modelUrl: envUrl("GPU_MODEL_URL"),
  /** The model server's path a window is POSTed to. */
  modelPath: envText("GPU_MODEL_PATH"),
  /** The model server's own health path: the gateway is healthy only while it answers 200. */
  modelHealthPath: envText("GPU_MODEL_HEALTH_PATH"),
  /** Windows the gateway forwards to the model at once; more wait their turn. */
  modelConcurrency: envInt("GPU_MODEL_CONCURRENCY"),
  /** How long the gateway waits for the model's answer to one window, ms. */
  modelTimeoutMs: envInt("GPU_MODEL_TIMEOUT_MS"),
  /** The key table every instance of the stack shares (one item per Idempotency-Key). */
  keysTable: envText("GPU_KEYS_TABLE"),
  /** How long a claim holds a key before another instance may take it, seconds (covers the model timeout). */
  keyLeaseSeconds: envInt("GPU_KEY_LEASE_SECONDS"),
  /** How often the gateway reads the instance metadata for a drain signal, seconds. */
  drainPollSeconds: envInt("GPU_DRAIN_POLL_SECONDS"),
  /** Fleet mode: the stack's Auto Scaling group and its terminate hook; the gateway completes the hook itself. */
  groupName: optional(envText("GPU_FLEET_GROUP_NAME")),
  drainHookName: optional(envText("GPU_DRAIN_HOOK_NAME")),
});

/** Where the user data writes the gateway's environment on the instance (KEY=value lines, systemd's EnvironmentFile). */
export const GATEWAY_ENV_FILE = "/etc/encache/gpu-gateway.env";
