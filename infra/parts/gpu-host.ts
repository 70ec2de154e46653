import * as fs from "node:fs";
import * as path from "node:path";
import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";
import { PRODUCT } from "../../policy/contract";
import { FLEET_GATEWAY_GRANTS, GATEWAY_GRANTS } from "../../functions/gpu/iam";
import { REPO_ROOT } from "../bundle";
import { Table } from "../components/table";
import type { Statement } from "../iam/document";
import { type Binding, statementsFor } from "../iam/grants";
import { type GatewayEnv, renderGpuUserData } from "../lib/gpu-user-data";
import { type GpuConfig, modelRepositoryArn } from "./ingest.config";
import { imageContentTag, writeImageContext } from "./worker.image";

/** The gateway's entry, its Dockerfile and the build context the program writes, relative to the repository root. */
export const GATEWAY_ENTRY = "functions/gpu/gateway.ts";
export const GATEWAY_DOCKERFILE = "functions/gpu/Dockerfile";
export const GATEWAY_IMAGE_CONTEXT = "dist/gpu-gateway-image";
/** Gateway images the repository keeps: the running instances' and a few to roll back to. */
export const GATEWAY_KEEP_IMAGES = 10;
/** How often the gateway reads the instance metadata for a drain signal, seconds. */
export const GATEWAY_DRAIN_POLL_SECONDS = 5;

/** The key table's partition key and TTL attribute (functions/gpu/keys.ts writes them). */
export const GPU_KEYS_TABLE = { hashKey: "window_key", ttlAttribute: "expires_at" } as const;

/**
 * How long a claim holds a key before another instance may take it, seconds: the model's timeout
 * (the gateway moves the lease on when a window that waited for a model slot reaches the model)
 * plus a margin for the done write. Pure.
 */
export function gatewayKeyLeaseSeconds(model: Pick<GpuConfig["model"], "timeoutMs">): number {
  return Math.ceil(model.timeoutMs / 1000) + 30;
}

/** The gateway's environment but for the table's name (an output): every GATEWAY_ENV field from the stack config. Pure. */
export function gatewayEnvValues(
  gpu: Pick<GpuConfig, "servicePort" | "servicePath" | "statusPath" | "model">,
  keysTable: string,
  fleet?: { groupName: string; drainHookName: string },
): GatewayEnv {
  return {
    servicePort: gpu.servicePort,
    servicePath: gpu.servicePath,
    statusPath: gpu.statusPath,
    modelUrl: `http://127.0.0.1:${gpu.model.port}`,
    modelPath: gpu.model.path,
    modelHealthPath: gpu.model.healthPath,
    modelConcurrency: gpu.model.concurrency,
    modelTimeoutMs: gpu.model.timeoutMs,
    keysTable,
    keyLeaseSeconds: gatewayKeyLeaseSeconds(gpu.model),
    drainPollSeconds: GATEWAY_DRAIN_POLL_SECONDS,
    // Fleet mode only: the gateway completes its own terminate lifecycle action.
    ...(fleet ? { groupName: fleet.groupName, drainHookName: fleet.drainHookName } : {}),
  };
}

/** The gateway image's Docker build arguments: the pinned base image. Pure. */
export function gatewayBuildArgs(gpu: Pick<GpuConfig, "gatewayBaseImage">): Record<string, string> {
  return { BASE_IMAGE: gpu.gatewayBaseImage };
}

/** Where the instance role's resources live. */
export interface GpuHostAccess {
  keysTableArn: pulumi.Input<string>;
  /** Fleet mode: this stack's group, bound as the scaler's grants bind it (its ARN and the environment tag). */
  group?: Binding;
  gatewayRepositoryArn: pulumi.Input<string>;
  /** Image mode: the model's image, whose ECR repository the role may pull from. */
  modelImage?: string;
  logGroupArns: pulumi.Input<string>[];
}

/**
 * The GPU instance role's own statements, beside Session Manager's: the gateway's grants
 * (functions/gpu/iam.ts) bound on this stack's key table and group, and what the instance itself
 * does at boot: pull the two images (ECR pull on those repositories only; the token is
 * account-wide, `*`), and write the two log groups (Docker's awslogs driver). Pure.
 */
export function gpuHostStatements(a: GpuHostAccess): Statement[] {
  const gateway = a.group
    ? statementsFor(FLEET_GATEWAY_GRANTS, { "gpu-keys-table": { resource: a.keysTableArn }, "stack-gpu-group": a.group })
    : statementsFor(GATEWAY_GRANTS, { "gpu-keys-table": { resource: a.keysTableArn } });
  return [
    ...gateway,
    { Sid: "EcrLogin", Effect: "Allow", Action: ["ecr:GetAuthorizationToken"], Resource: "*" },
    {
      Sid: "EcrPullGpuImages",
      Effect: "Allow",
      Action: ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
      Resource: [a.gatewayRepositoryArn, ...(a.modelImage ? [modelRepositoryArn(a.modelImage)] : [])],
    },
    {
      Sid: "GpuContainerLogs",
      Effect: "Allow",
      Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
      Resource: a.logGroupArns.map((arn) => pulumi.interpolate`${arn}:*`),
    },
  ];
}

/** Everything every GPU instance of the stack boots with, whichever the capacity mode. */
export interface GpuHost {
  keysTable: Table;
  repository: aws.ecr.Repository;
  image: awsx.ecr.Image;
  logGroups: { gateway: aws.cloudwatch.LogGroup; model?: aws.cloudwatch.LogGroup };
  /** The role's statements (gpuHostStatements), bound; `group` in fleet mode. */
  statements(group?: Binding): Statement[];
  /** The user data (`#cloud-config`, plain text), rendered once every output is known. */
  userData(fleet?: { groupName: string; drainHookName: string; drainSeconds: number }): pulumi.Output<string>;
}

/**
 * The key table, the gateway's image and its repository, and the log groups; and the user data
 * and the role statements that bind them. `name` is the ingest part's.
 */
export function createGpuHost(scope: {
  name: string;
  gpu: GpuConfig;
  region: string;
  environment: string;
  logRetentionDays: number;
  deletionProtection: boolean;
  tags: Record<string, string>;
  parent: pulumi.Resource;
}): GpuHost {
  const { name, gpu, tags, parent } = scope;
  const keysTable = new Table(
    `${name}-gpu-keys`,
    {
      hashKey: GPU_KEYS_TABLE.hashKey,
      attributes: { [GPU_KEYS_TABLE.hashKey]: "S" },
      ttlAttribute: GPU_KEYS_TABLE.ttlAttribute,
      deletionProtection: scope.deletionProtection,
      tags,
    },
    { parent },
  );
  const repository = new aws.ecr.Repository(
    `${name}-gpu-gateway-images`,
    {
      imageTagMutability: "IMMUTABLE",
      imageScanningConfiguration: { scanOnPush: true },
      encryptionConfigurations: [{ encryptionType: "AES256" }],
      forceDelete: !scope.deletionProtection,
      tags,
    },
    // Every GPU pulls its gateway from here at each start; a replaced repository loses every image.
    { parent, protect: scope.deletionProtection },
  );
  new aws.ecr.LifecyclePolicy(
    `${name}-gpu-gateway-images-lifecycle`,
    {
      repository: repository.name,
      policy: JSON.stringify({
        rules: [
          {
            rulePriority: 1,
            description: `Keep the last ${GATEWAY_KEEP_IMAGES} images`,
            selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: GATEWAY_KEEP_IMAGES },
            action: { type: "expire" },
          },
        ],
      }),
    },
    { parent },
  );
  const bundle = writeImageContext(GATEWAY_ENTRY, GATEWAY_IMAGE_CONTEXT, "gateway.js");
  const platform = "linux/amd64";
  const dockerfile = fs.readFileSync(path.join(REPO_ROOT, GATEWAY_DOCKERFILE), "utf8");
  const buildArgs = gatewayBuildArgs(gpu);
  const image = new awsx.ecr.Image(
    `${name}-gpu-gateway-image`,
    {
      repositoryUrl: repository.repositoryUrl,
      context: GATEWAY_IMAGE_CONTEXT,
      dockerfile: GATEWAY_DOCKERFILE,
      platform,
      args: buildArgs,
      // Content-addressed over everything the build reads (the worker's way): the repository is immutable.
      imageTag: imageContentTag({ context: bundle.context, dockerfile, platform, buildArgs }),
    },
    { parent },
  );
  const logGroup = (suffix: string) =>
    new aws.cloudwatch.LogGroup(
      `${name}-gpu-${suffix}-logs`,
      { name: `/${PRODUCT}/${scope.environment}/gpu-${suffix}`, retentionInDays: scope.logRetentionDays, tags },
      { parent },
    );
  const logGroups = { gateway: logGroup("gateway"), ...(gpu.model.source === "image" ? { model: logGroup("model") } : {}) };
  const modelImage = gpu.model.source === "image" ? gpu.model.image : undefined;

  return {
    keysTable,
    repository,
    image,
    logGroups,
    statements: (group) =>
      gpuHostStatements({
        keysTableArn: keysTable.table.arn,
        ...(group ? { group } : {}),
        gatewayRepositoryArn: repository.arn,
        ...(modelImage ? { modelImage } : {}),
        logGroupArns: [logGroups.gateway.arn, ...(logGroups.model ? [logGroups.model.arn] : [])],
      }),
    userData: (fleet) =>
      pulumi
        .all([keysTable.table.name, image.imageUri, logGroups.gateway.name, logGroups.model?.name ?? pulumi.output(undefined)])
        .apply(([table, gatewayImage, gatewayLogs, modelLogs]) =>
          renderGpuUserData({
            region: scope.region,
            gateway: gatewayEnvValues(gpu, table, fleet),
            gatewayImage,
            model: gpu.model.source === "image" ? { source: "image", image: gpu.model.image, port: gpu.model.port } : { source: "ami" },
            logGroups: { gateway: gatewayLogs, ...(modelLogs ? { model: modelLogs } : {}) },
            // The drain (fleet), or a window's longest stay at the gateway (instance mode), and a margin.
            gatewayStopSeconds: (fleet?.drainSeconds ?? Math.ceil(gpu.requestTimeoutMs / 1000)) + 10,
          }),
        ),
  };
}
