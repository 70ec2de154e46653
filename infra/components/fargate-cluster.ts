import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface FargateClusterArgs {
  /**
   * Tasks per FARGATE task before FARGATE_SPOT in the cluster's default strategy.
   * @default 0
   */
  fargateBase?: number;
  /**
   * Tags.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * The platform's ECS cluster: Container Insights on (the worker's backlog-per-task scaling reads
 * RunningTaskCount from it), and both FARGATE and FARGATE_SPOT capacity providers, with Spot as
 * the default. Tasks and services choose a capacity provider strategy, never a launch type.
 */
export class FargateCluster extends pulumi.ComponentResource {
  readonly cluster: aws.ecs.Cluster;
  readonly capacityProviders: aws.ecs.ClusterCapacityProviders;

  constructor(name: string, args: FargateClusterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("encache:compute:FargateCluster", name, {}, opts);
    this.cluster = new aws.ecs.Cluster(name, { settings: [{ name: "containerInsights", value: "enabled" }], tags: args.tags ?? {} }, { parent: this });
    this.capacityProviders = new aws.ecs.ClusterCapacityProviders(
      `${name}-capacity`,
      {
        clusterName: this.cluster.name,
        capacityProviders: ["FARGATE", "FARGATE_SPOT"],
        defaultCapacityProviderStrategies: [
          { capacityProvider: "FARGATE", base: args.fargateBase ?? 0, weight: 0 },
          { capacityProvider: "FARGATE_SPOT", base: 0, weight: 1 },
        ],
      },
      { parent: this },
    );
    this.registerOutputs({ clusterArn: this.cluster.arn, clusterName: this.cluster.name });
  }
}
