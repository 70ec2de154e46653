/**
 * Every function's config type is derived from its env codec (functions/<part>/env.ts), not
 * restated beside it: a field added to a codec is a field of the config, with the codec's type.
 * Where parse builds something the env does not carry (milliseconds from seconds, a tag from its
 * key and value), the config drops those codec fields and adds its own, and the table below names
 * both. The type-level checks are compiled by `npm run typecheck` (mocha runs through tsx, which
 * does not type-check); the runtime checks show each parse function returns exactly those fields.
 */
import { expect } from "chai";
import { type HousekeepingConfig, parseHousekeepingConfig, parseTerminationConfig, type TerminationConfig } from "../../functions/fleet/config";
import { HOUSEKEEPING_ENV, TERMINATION_ENV } from "../../functions/fleet/env";
import { type GatewayConfig, parseGatewayConfig } from "../../functions/gpu/config";
import { GATEWAY_ENV } from "../../functions/gpu/env";
import {
  type DlqConfig,
  type GpuConfig,
  type IdleConfig,
  parseDlqConfig,
  parseIdleConfig,
  parseScalerConfig,
  parseWindowConfig,
  type ScalerConfig,
  type WindowConfig,
} from "../../functions/ingest/config";
import { DLQ_ENV, type GpuFields, IDLE_ENV, SCALER_ENV, WINDOW_ENV } from "../../functions/ingest/env";
import type { ParkConfig } from "../../functions/ingest/park";
import { parseRefillConfig, type RefillConfig } from "../../functions/pool/config";
import { REFILL_ENV } from "../../functions/pool/env";
import { type LauncherConfig, parseLauncherConfig } from "../../functions/retraining/config";
import { LAUNCHER_ENV, RELAUNCH_ENV } from "../../functions/retraining/env";
import type { RelaunchConfig } from "../../functions/retraining/relaunch-handler";
import { envCodec, type EnvFields, envInt, envText, type EnvValues, type EnvValuesOf, optional } from "../../functions/shared/env";
import { parseWorkerConfig, type WorkerConfig } from "../../functions/worker/config";
import { ECS_ENV, WORKER_ENV } from "../../functions/worker/env";
import { sampleEnv } from "./helpers/env-samples";

/** `true` when A and B are the same type: each field, its type and whether it is optional (not merely assignable). */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when its type argument is `true`; does nothing at run time. */
function holds<T extends true>(_?: T): void {}

/** The codec fields a config does not carry as they are: parse turns them into something else. */
type Dropped<Env, Config> = Exclude<keyof Env, keyof Config>;
/** The config fields the env does not carry: parse builds them. */
type Added<Env, Config> = Exclude<keyof Config, keyof Env>;
/** Every field the config keeps from the codec has the codec's type and optionality. */
type KeepsTheRest<Env, Config> = Equals<Pick<Env, keyof Env & keyof Config>, Pick<Config, keyof Env & keyof Config>>;

/** One config built on codecs: what parse drops from them and adds; both empty for a config that is exactly its codec. */
interface Derivation {
  name: string;
  codecs: readonly { readonly fields: EnvFields }[];
  dropped: readonly string[];
  added: readonly string[];
  parse(env: NodeJS.ProcessEnv): object;
  env: NodeJS.ProcessEnv;
}

const HOUSEKEEPING = {
  dropped: ["managedTagKey", "managedTagValue", "environmentTagKey", "environment"],
  added: ["managedTag", "environmentTag"],
} as const;
const GATEWAY = { dropped: ["keyLeaseSeconds", "drainPollSeconds", "groupName", "drainHookName"], added: ["keyLeaseMs", "drainPollMs", "fleet"] } as const;
const LAUNCHER = { dropped: ["taskDefinitionArn", "taskDefinitionFamily"], added: ["taskDefinition"] } as const;
const WORKER = {
  dropped: ["idleWindowSeconds", "maxProtectedSeconds", "heartbeatSeconds", "shutdownGraceSeconds"],
  added: ["idleWindowMs", "maxProtectedMs", "heartbeatMs", "shutdownGraceMs", "abortSettleMs"],
} as const;

/** A fleet-mode gateway: every GATEWAY_ENV field set, typed by the codec. */
const GATEWAY_VALUES: EnvValuesOf<typeof GATEWAY_ENV> = {
  servicePort: 8080,
  servicePath: "/windows",
  statusPath: "/status",
  modelUrl: "http://127.0.0.1:9000",
  modelPath: "/infer",
  modelHealthPath: "/health",
  modelConcurrency: 4,
  modelTimeoutMs: 30_000,
  keysTable: "encache-gpu-keys-dev",
  keyLeaseSeconds: 90,
  drainPollSeconds: 5,
  groupName: "encache-gpu-fleet-prod",
  drainHookName: "drain",
};

const ECS = { ECS_AGENT_URI: "http://169.254.170.2/api/task-1", ECS_CONTAINER_METADATA_URI_V4: "http://169.254.170.2/v4/task-1" };

const DERIVATIONS: Derivation[] = [
  { name: "TerminationConfig", codecs: [TERMINATION_ENV], dropped: [], added: [], parse: parseTerminationConfig, env: sampleEnv("fleet termination") },
  { name: "HousekeepingConfig", codecs: [HOUSEKEEPING_ENV], ...HOUSEKEEPING, parse: parseHousekeepingConfig, env: sampleEnv("fleet housekeeping") },
  { name: "GatewayConfig", codecs: [GATEWAY_ENV], ...GATEWAY, parse: parseGatewayConfig, env: GATEWAY_ENV.encode(GATEWAY_VALUES) },
  { name: "IdleConfig", codecs: [IDLE_ENV], dropped: [], added: [], parse: parseIdleConfig, env: sampleEnv("ingest GPU idle") },
  { name: "WindowConfig", codecs: [WINDOW_ENV], dropped: [], added: [], parse: parseWindowConfig, env: sampleEnv("ingest window, fleet mode") },
  { name: "DlqConfig", codecs: [DLQ_ENV], dropped: [], added: [], parse: parseDlqConfig, env: sampleEnv("ingest DLQ consumer, fleet mode") },
  { name: "ScalerConfig", codecs: [SCALER_ENV], dropped: [], added: [], parse: parseScalerConfig, env: sampleEnv("ingest GPU fleet scaler") },
  { name: "RefillConfig", codecs: [REFILL_ENV], dropped: [], added: [], parse: parseRefillConfig, env: sampleEnv("pool refill") },
  { name: "LauncherConfig", codecs: [LAUNCHER_ENV], ...LAUNCHER, parse: parseLauncherConfig, env: sampleEnv("retraining launcher") },
  { name: "WorkerConfig", codecs: [WORKER_ENV, ECS_ENV], ...WORKER, parse: parseWorkerConfig, env: { ...sampleEnv("worker"), ...ECS } },
];

describe("the functions' config types follow their env codecs (functions/<part>/config.ts)", () => {
  it("types a config that is exactly its codec as the codec's values (compile time)", () => {
    holds<Equals<TerminationConfig, EnvValuesOf<typeof TERMINATION_ENV>>>();
    holds<Equals<IdleConfig, EnvValuesOf<typeof IDLE_ENV>>>();
    holds<Equals<GpuConfig, EnvValues<GpuFields>>>();
    holds<Equals<WindowConfig, EnvValuesOf<typeof WINDOW_ENV>>>();
    holds<Equals<DlqConfig, EnvValuesOf<typeof DLQ_ENV>>>();
    holds<Equals<ScalerConfig, EnvValuesOf<typeof SCALER_ENV>>>();
    holds<Equals<RefillConfig, EnvValuesOf<typeof REFILL_ENV>>>();
    holds<Equals<RelaunchConfig, EnvValuesOf<typeof RELAUNCH_ENV>>>();
    // The DLQ consumer's park timings are DLQ_ENV's fields, under park.ts's names.
    holds<DlqConfig extends ParkConfig ? true : false>();
  });

  it("types a config built on its codec as the codec's values less what parse converts, plus what it builds (compile time)", () => {
    type Housekeeping = EnvValuesOf<typeof HOUSEKEEPING_ENV>;
    holds<Equals<Dropped<Housekeeping, HousekeepingConfig>, (typeof HOUSEKEEPING.dropped)[number]>>();
    holds<Equals<Added<Housekeeping, HousekeepingConfig>, (typeof HOUSEKEEPING.added)[number]>>();
    holds<KeepsTheRest<Housekeeping, HousekeepingConfig>>();

    type Gateway = EnvValuesOf<typeof GATEWAY_ENV>;
    holds<Equals<Dropped<Gateway, GatewayConfig>, (typeof GATEWAY.dropped)[number]>>();
    holds<Equals<Added<Gateway, GatewayConfig>, (typeof GATEWAY.added)[number]>>();
    holds<KeepsTheRest<Gateway, GatewayConfig>>();

    type Launcher = EnvValuesOf<typeof LAUNCHER_ENV>;
    holds<Equals<Dropped<Launcher, LauncherConfig>, (typeof LAUNCHER.dropped)[number]>>();
    holds<Equals<Added<Launcher, LauncherConfig>, (typeof LAUNCHER.added)[number]>>();
    holds<KeepsTheRest<Launcher, LauncherConfig>>();

    type Worker = EnvValuesOf<typeof WORKER_ENV> & EnvValuesOf<typeof ECS_ENV>;
    holds<Equals<Dropped<Worker, WorkerConfig>, (typeof WORKER.dropped)[number]>>();
    holds<Equals<Added<Worker, WorkerConfig>, (typeof WORKER.added)[number]>>();
    holds<KeepsTheRest<Worker, WorkerConfig>>();
  });

  it("catches a config that restates its codec and misses a field, or adds one (compile time)", () => {
    // A hand-written ScalerConfig that forgot SCALER_ENV's dlqUrl, or added a field of its own, is not the codec's values.
    // @ts-expect-error dlqUrl is SCALER_ENV's, so the derived type has it
    holds<Equals<Omit<ScalerConfig, "dlqUrl">, EnvValuesOf<typeof SCALER_ENV>>>();
    // @ts-expect-error SCALER_ENV has no `extra`
    holds<Equals<ScalerConfig & { extra: string }, EnvValuesOf<typeof SCALER_ENV>>>();
    // And a converted field the table above does not name is caught: the worker's heartbeat is in ms.
    // @ts-expect-error heartbeatSeconds is dropped too
    holds<Equals<Dropped<EnvValuesOf<typeof WORKER_ENV>, WorkerConfig>, "idleWindowSeconds" | "maxProtectedSeconds" | "shutdownGraceSeconds">>();
  });

  it("gives the derived type every field of the codec, with its type and optionality (compile time)", () => {
    const TOY_ENV = envCodec({ name: envText("TOY_NAME"), size: envInt("TOY_SIZE"), label: optional(envText("TOY_LABEL")) });
    type Toy = EnvValuesOf<typeof TOY_ENV>;
    holds<Equals<Toy, { name: string; size: number; label?: string }>>();

    // @ts-expect-error size is a TOY_ENV field, so a Toy without it does not compile
    const noSize: Toy = { name: "a" };
    // @ts-expect-error size is a whole number (envInt)
    const textSize: Toy = { name: "a", size: "3" };
    const noLabel: Toy = { name: "a", size: 3 };
    expect([noSize, textSize]).to.have.length(2);
    expect(TOY_ENV.parse(TOY_ENV.encode(noLabel))).to.deep.equal(noLabel);
  });

  for (const { name, codecs, dropped, added, parse, env } of DERIVATIONS) {
    it(`${name}: parse returns exactly the codec's fields${dropped.length > 0 ? ", less those it converts, plus those it builds" : ""}`, () => {
      // Prepare: the sample sets every field, optional ones too.
      const fields = codecs.flatMap((c) => Object.keys(c.fields));
      const expected = [...fields.filter((f) => !dropped.includes(f)), ...added];

      // Act
      const config = parse(env);

      // Assess
      expect(Object.keys(config)).to.have.members(expected);
    });
  }
});
