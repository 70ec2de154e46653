import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface InternalLoadBalancerArgs {
  /** The VPC, and the private subnets the load balancer spans (at least two zones). */
  vpcId: pulumi.Input<string>;
  subnetIds: pulumi.Input<string[]>;
  /** Its security group: the caller's, which admits the clients only. */
  securityGroupId: pulumi.Input<string>;
  /** The listener's and the targets' port. */
  port: number;
  /** The targets' health check path (HTTP 200 is healthy). */
  healthCheckPath: string;
  /** How long a deregistering target keeps its in-flight requests, seconds. */
  deregistrationDelaySeconds: number;
  /**
   * Pulumi's `protect` and AWS's deletion protection on the load balancer.
   * @default false
   */
  deletionProtection?: boolean;
  /**
   * The resource the three children were declared under before this component existed (the GPU
   * fleet): their alias, so moving them here changes no URN in an existing stack.
   * @default undefined (none)
   */
  formerParent?: pulumi.Resource;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

/**
 * An internal Application Load Balancer for instance targets: `<name>-lb` (internal, invalid header
 * fields dropped), `<name>-tg` (HTTP, least outstanding requests, the health check and the
 * deregistration delay), `<name>-listener` (HTTP, forward). An ALB, not an NLB: it balances per
 * request, where an NLB pins each of a Lambda's kept-alive connections to one target, and it drains
 * in-flight requests on deregistration.
 */
export class InternalLoadBalancer extends pulumi.ComponentResource {
  readonly loadBalancer: aws.lb.LoadBalancer;
  readonly targetGroup: aws.lb.TargetGroup;
  readonly listener: aws.lb.Listener;

  constructor(
    private readonly name: string,
    private readonly args: InternalLoadBalancerArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("encache:compute:InternalLoadBalancer", name, {}, opts);
    this.loadBalancer = this.declareLoadBalancer();
    this.targetGroup = this.declareTargetGroup();
    this.listener = this.declareListener();
    this.registerOutputs({ dnsName: this.loadBalancer.dnsName, targetGroupArn: this.targetGroup.arn });
  }

  /** Parent and alias of each child. */
  private childOptions(): pulumi.CustomResourceOptions {
    return { parent: this, ...(this.args.formerParent ? { aliases: [{ parent: this.args.formerParent }] } : {}) };
  }

  private declareLoadBalancer(): aws.lb.LoadBalancer {
    const protect = this.args.deletionProtection ?? false;
    return new aws.lb.LoadBalancer(
      `${this.name}-lb`,
      {
        internal: true,
        loadBalancerType: "application",
        subnets: this.args.subnetIds,
        securityGroups: [this.args.securityGroupId],
        dropInvalidHeaderFields: true,
        enableDeletionProtection: protect,
        tags: this.args.tags ?? {},
      },
      { ...this.childOptions(), protect },
    );
  }

  private declareTargetGroup(): aws.lb.TargetGroup {
    const a = this.args;
    return new aws.lb.TargetGroup(
      `${this.name}-tg`,
      {
        vpcId: a.vpcId,
        port: a.port,
        protocol: "HTTP",
        targetType: "instance",
        loadBalancingAlgorithmType: "least_outstanding_requests",
        deregistrationDelay: a.deregistrationDelaySeconds,
        healthCheck: {
          protocol: "HTTP",
          path: a.healthCheckPath,
          port: "traffic-port",
          matcher: "200",
          interval: 15,
          timeout: 5,
          healthyThreshold: 2,
          unhealthyThreshold: 2,
        },
        tags: a.tags ?? {},
      },
      this.childOptions(),
    );
  }

  private declareListener(): aws.lb.Listener {
    return new aws.lb.Listener(
      `${this.name}-listener`,
      {
        loadBalancerArn: this.loadBalancer.arn,
        port: this.args.port,
        protocol: "HTTP",
        defaultActions: [{ type: "forward", targetGroupArn: this.targetGroup.arn }],
        tags: this.args.tags ?? {},
      },
      this.childOptions(),
    );
  }
}
