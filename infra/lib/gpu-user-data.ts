import { stringify } from "yaml";
import { GATEWAY_ENV, GATEWAY_ENV_FILE } from "../../functions/gpu/env";
import type { EnvValuesOf } from "../../functions/shared/env";

/** The gateway's environment as values, every GATEWAY_ENV field. */
export type GatewayEnv = EnvValuesOf<typeof GATEWAY_ENV>;

/**
 * The GPU instance's boot, as cloud-init user data (`#cloud-config`): the gateway, and in image
 * mode the user's model server, as systemd services that run a container each, restart on failure
 * and log to the stack's log groups. Pure: every value is resolved; the program renders it inside
 * `pulumi.all` (infra/parts/gpu-host.ts).
 *
 * Boot sequence: cloud-init writes the gateway's environment (GATEWAY_ENV_FILE, 0600), the ECR login
 * helper and the units; `runcmd` reloads systemd and enables and starts them. Each (re)start of a
 * unit logs in to its image's registry with the instance role (an ECR token lasts 12 h, so a
 * restart days later needs a new one), pulls the image by digest and runs it on the host network
 * (the gateway listens on the service port and reaches the model and the instance metadata on
 * localhost; IMDSv2's hop limit of 1 holds, since host networking adds no hop). Docker's awslogs
 * driver ships each container's output with the instance role. At termination systemd stops the
 * gateway with SIGTERM (`docker stop`), which drains it, given the drain's time.
 */
export interface GpuUserDataInput {
  /** The stack's region: the gateway's AWS_REGION and the log driver's. */
  region: string;
  /** The gateway's environment, every GATEWAY_ENV field as the gateway will read it. */
  gateway: GatewayEnv;
  /** The gateway's image, pinned by digest (`<registry>/<repo>@sha256:…`). */
  gatewayImage: string;
  /** `image`: the model server's image (pinned by digest) and its port; `ami`: the AMI starts it, nothing to run. */
  model: { source: "image"; image: string; port: number } | { source: "ami" };
  /** Log group names: the gateway's, and in image mode the model server's. */
  logGroups: { gateway: string; model?: string };
  /** How long `systemctl stop` gives the gateway to drain before it is killed, seconds. */
  gatewayStopSeconds: number;
}

export const GATEWAY_UNIT = "encache-gpu-gateway.service";
export const MODEL_UNIT = "encache-gpu-model.service";
export const ECR_LOGIN_HELPER = "/usr/local/bin/encache-ecr-login";

/** `<registry>/<repo>[:tag]@sha256:…` → `<registry>`. Pure. */
export function registryOf(image: string): string {
  const slash = image.indexOf("/");
  if (slash <= 0) throw new Error(`image "${image}" names no registry`);
  return image.slice(0, slash);
}

/**
 * The gateway's env file: one `KEY=value` line per variable, GATEWAY_ENV's encoding plus
 * AWS_REGION, in byte order. Docker's `--env-file` and systemd take a value verbatim, so a value
 * with a line break could smuggle in another variable: refused. Pure.
 */
export function gatewayEnvFile(region: string, gateway: GatewayEnv): string {
  const vars: Record<string, string> = { AWS_REGION: region, ...GATEWAY_ENV.encode(gateway) };
  return `${Object.keys(vars)
    .sort()
    .map((k) => {
      const v = vars[k]!;
      if (/[\r\n]/.test(v)) throw new Error(`${k}: a value with a line break cannot go into an env file`);
      return `${k}=${v}`;
    })
    .join("\n")}\n`;
}

/** The helper each unit runs before its pull: log Docker in to one ECR registry with the instance role. */
const ECR_LOGIN_SCRIPT = `#!/bin/sh
# encache-ecr-login <account>.dkr.ecr.<region>.amazonaws.com: log Docker in to that ECR registry
# with the instance role. Run before every pull: an ECR token lasts 12 hours.
set -eu
registry="$1"
region="$(echo "$registry" | cut -d. -f4)"
aws ecr get-login-password --region "$region" | docker login --username AWS --password-stdin "$registry"
`;

/** One systemd unit that runs `image` as container `name`, pulled fresh (by digest) on every start. */
function containerUnit(u: {
  description: string;
  name: string;
  image: string;
  runArgs: string[];
  region: string;
  logGroup: string;
  stopSeconds: number;
  after?: string;
}): string {
  const log = [
    "--log-driver=awslogs",
    `--log-opt=awslogs-region=${u.region}`,
    `--log-opt=awslogs-group=${u.logGroup}`,
    `--log-opt=awslogs-stream=%H/${u.name}`,
  ];
  return [
    "[Unit]",
    `Description=${u.description}`,
    `After=docker.service network-online.target${u.after ? ` ${u.after}` : ""}`,
    "Requires=docker.service",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Restart=always",
    "RestartSec=5",
    `TimeoutStopSec=${u.stopSeconds + 10}`,
    `ExecStartPre=-/usr/bin/docker rm --force ${u.name}`,
    `ExecStartPre=${ECR_LOGIN_HELPER} ${registryOf(u.image)}`,
    `ExecStartPre=/usr/bin/docker pull ${u.image}`,
    `ExecStart=/usr/bin/docker run --rm --name ${u.name} --network host ${[...u.runArgs, ...log].join(" ")} ${u.image}`,
    `ExecStop=/usr/bin/docker stop --time ${u.stopSeconds} ${u.name}`,
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

/** The `#cloud-config` document (see GpuUserDataInput for the boot sequence). Pure. */
export function renderGpuUserData(input: GpuUserDataInput): string {
  const files: Array<Record<string, string>> = [
    { path: GATEWAY_ENV_FILE, owner: "root:root", permissions: "0600", content: gatewayEnvFile(input.region, input.gateway) },
    { path: ECR_LOGIN_HELPER, owner: "root:root", permissions: "0755", content: ECR_LOGIN_SCRIPT },
  ];
  const units: string[] = [];
  if (input.model.source === "image") {
    if (!input.logGroups.model) throw new Error("an image model needs its log group");
    files.push({
      path: `/etc/systemd/system/${MODEL_UNIT}`,
      owner: "root:root",
      permissions: "0644",
      content: containerUnit({
        description: "encache GPU model server (the user's image)",
        name: "encache-gpu-model",
        image: input.model.image,
        // The model server reads its port from PORT, if it reads one; it must listen on it either way.
        runArgs: ["--gpus all", `--env PORT=${input.model.port}`],
        region: input.region,
        logGroup: input.logGroups.model,
        stopSeconds: 30,
      }),
    });
    units.push(MODEL_UNIT);
  }
  files.push({
    path: `/etc/systemd/system/${GATEWAY_UNIT}`,
    owner: "root:root",
    permissions: "0644",
    content: containerUnit({
      description: "encache GPU gateway (claims each window's key, forwards it to the model server, drains)",
      name: "encache-gpu-gateway",
      image: input.gatewayImage,
      runArgs: [`--env-file ${GATEWAY_ENV_FILE}`],
      region: input.region,
      logGroup: input.logGroups.gateway,
      stopSeconds: input.gatewayStopSeconds,
      ...(input.model.source === "image" ? { after: MODEL_UNIT } : {}),
    }),
  });
  units.push(GATEWAY_UNIT);
  const doc = {
    write_files: files,
    runcmd: [
      ["systemctl", "daemon-reload"],
      // --no-block: a model image can take minutes to pull, and cloud-init need not wait for it.
      ["systemctl", "enable", "--now", "--no-block", ...units],
    ],
  };
  return `#cloud-config\n${stringify(doc, { lineWidth: 0 })}`;
}
