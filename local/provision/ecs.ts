/** ECS: clusters and their capacity providers, task definitions and services. */
import {
  CreateClusterCommand,
  CreateServiceCommand,
  PutClusterCapacityProvidersCommand,
  RegisterTaskDefinitionCommand,
  type CapacityProviderStrategyItem,
  type ContainerDefinition,
  type CreateServiceCommandInput,
  type RegisterTaskDefinitionCommandInput,
} from "@aws-sdk/client-ecs";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, definedOnly, num, obj, objs, str, strs, tagMap, type Inputs } from "./inputs";

function ecsTags(inputs: Inputs): Array<{ key: string; value: string }> {
  return Object.entries(tagMap(inputs)).map(([key, value]) => ({ key, value }));
}

function capacityStrategy(items: Inputs[]): CapacityProviderStrategyItem[] {
  return items.map((s) => definedOnly({ capacityProvider: str(s, "capacityProvider"), weight: num(s, "weight"), base: num(s, "base") }));
}

async function cluster(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.ecs.send(
    new CreateClusterCommand({
      clusterName: name,
      settings: objs(inputs, "settings").map((s) => ({ name: str(s, "name") as "containerInsights", value: str(s, "value") })),
      tags: ecsTags(inputs),
    }),
  );
  const arn = created.cluster?.clusterArn ?? `arn:aws:ecs:${ctx.region}:${ctx.account}:cluster/${name}`;
  return { id: arn, state: { ...inputs, name, arn } };
}

async function clusterCapacityProviders(ctx: ProvisionContext, _args: Args, inputs: Inputs): Promise<Result> {
  const clusterName = str(inputs, "clusterName");
  await ctx.ecs.send(
    new PutClusterCapacityProvidersCommand({
      cluster: clusterName,
      capacityProviders: strs(inputs, "capacityProviders"),
      defaultCapacityProviderStrategy: capacityStrategy(objs(inputs, "defaultCapacityProviderStrategies")),
    }),
  );
  return { id: clusterName, state: { ...inputs } };
}

async function taskDefinition(ctx: ProvisionContext, args: Args, inputs: Inputs, notes: string[]): Promise<Result> {
  const family = str(inputs, "family") ?? physicalName(args);
  const { containers, notes: memoryNotes } = containersForMoto(str(inputs, "containerDefinitions") ?? "[]", num(inputs, "memory"));
  notes.push(...memoryNotes);
  const created = await ctx.ecs.send(new RegisterTaskDefinitionCommand(registerTaskDefinitionInput(family, containers, inputs)));
  const td = created.taskDefinition;
  const arn = td?.taskDefinitionArn;
  if (!arn) throw new Error("RegisterTaskDefinition returned no taskDefinitionArn");
  return { id: family, state: { ...inputs, family, arn, arnWithoutRevision: arn.replace(/:\d+$/, ""), revision: td.revision ?? 1 } };
}

function registerTaskDefinitionInput(family: string, containers: ContainerDefinition[], inputs: Inputs): RegisterTaskDefinitionCommandInput {
  const runtime = obj(inputs, "runtimePlatform");
  // pulumi-aws takes cpu and memory as strings; a program may still pass numbers.
  const text = (k: string) => str(inputs, k) ?? (num(inputs, k) !== undefined ? String(num(inputs, k)) : undefined);
  return {
    family,
    containerDefinitions: containers,
    cpu: text("cpu"),
    memory: text("memory"),
    networkMode: str(inputs, "networkMode") as RegisterTaskDefinitionCommandInput["networkMode"],
    requiresCompatibilities: strs(inputs, "requiresCompatibilities") as RegisterTaskDefinitionCommandInput["requiresCompatibilities"],
    executionRoleArn: str(inputs, "executionRoleArn"),
    taskRoleArn: str(inputs, "taskRoleArn"),
    runtimePlatform: runtime
      ? definedOnly({ cpuArchitecture: str(runtime, "cpuArchitecture") as "X86_64", operatingSystemFamily: str(runtime, "operatingSystemFamily") as "LINUX" })
      : undefined,
    volumes: objs(inputs, "volumes").map((v) =>
      definedOnly({ name: str(v, "name"), host: str(v, "hostPath") ? { sourcePath: str(v, "hostPath") } : undefined }),
    ),
    tags: ecsTags(inputs),
  };
}

/**
 * moto's RunTask answers 500 unless every container sets `memory`. AWS accepts a task-level
 * memory alone, so a container without it gets the task's, in moto only (the recorded inputs
 * keep the program's definitions).
 */
export function containersForMoto(containerDefinitionsJson: string, taskMemory: number | undefined): { containers: ContainerDefinition[]; notes: string[] } {
  const parsed: unknown = JSON.parse(containerDefinitionsJson);
  if (!Array.isArray(parsed)) throw new Error("containerDefinitions is not a JSON array");
  const notes: string[] = [];
  const containers = (parsed as ContainerDefinition[]).map((c) => {
    if (c.memory !== undefined || taskMemory === undefined) return c;
    notes.push(`container ${c.name ?? "?"}: memory set to the task's ${taskMemory} MiB for moto (its RunTask needs a container-level memory)`);
    return { ...c, memory: taskMemory };
  });
  return { containers, notes };
}

async function service(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.ecs.send(new CreateServiceCommand(createServiceInput(name, inputs)));
  const arn = created.service?.serviceArn ?? `arn:aws:ecs:${ctx.region}:${ctx.account}:service/${name}`;
  return { id: arn, state: { ...inputs, name, arn } };
}

function createServiceInput(name: string, inputs: Inputs): CreateServiceCommandInput {
  const net = obj(inputs, "networkConfiguration");
  const breaker = obj(inputs, "deploymentCircuitBreaker");
  const strategy = capacityStrategy(objs(inputs, "capacityProviderStrategies"));
  return {
    serviceName: name,
    cluster: str(inputs, "cluster"),
    taskDefinition: str(inputs, "taskDefinition"),
    desiredCount: num(inputs, "desiredCount") ?? 0,
    ...(strategy.length ? { capacityProviderStrategy: strategy } : { launchType: (str(inputs, "launchType") ?? "FARGATE") as "FARGATE" }),
    networkConfiguration: net
      ? {
          awsvpcConfiguration: {
            subnets: strs(net, "subnets"),
            securityGroups: strs(net, "securityGroups"),
            assignPublicIp: bool(net, "assignPublicIp") ? "ENABLED" : "DISABLED",
          },
        }
      : undefined,
    deploymentConfiguration: definedOnly({
      maximumPercent: num(inputs, "deploymentMaximumPercent"),
      minimumHealthyPercent: num(inputs, "deploymentMinimumHealthyPercent"),
      deploymentCircuitBreaker: breaker ? { enable: bool(breaker, "enable") ?? false, rollback: bool(breaker, "rollback") ?? false } : undefined,
    }),
    propagateTags: str(inputs, "propagateTags") as "SERVICE",
    enableECSManagedTags: bool(inputs, "enableEcsManagedTags"),
    tags: ecsTags(inputs),
  };
}

export const ecsProvisioners: Provisioners = {
  "aws:ecs/cluster:Cluster": creates(cluster),
  "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders": creates(clusterCapacityProviders),
  "aws:ecs/taskDefinition:TaskDefinition": creates(taskDefinition),
  "aws:ecs/service:Service": creates(service),
};
