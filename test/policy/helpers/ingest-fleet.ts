/**
 * A GOOD recording of ingest in fleet capacity mode (issue 27), shaped like what the offline plan
 * would record for it: the platform recording (ingest plus the network) with the single GPU
 * instance and its EC2 grant replaced by an Auto Scaling group of Spot GPU instances launched from
 * a hardened template, behind an internal Application Load Balancer whose security group admits
 * the ingest consumers' group only. The DLQ consumer may raise the group's desired capacity (the
 * fleet form of dlq-consumer-can-start-gpu). The GPUs' group admits the service port from the load
 * balancer's group and from the consumers' group, where the scaler runs and GETs each instance's
 * status (gpu-paths-admitted; issue 35 adds that second admission to the program, which today's
 * prod plan lacks). `ingestFleetRecording()` returns a fresh deep copy.
 *
 * The program side of fleet mode is written in parallel; these shapes follow the resource inputs
 * of @pulumi/aws (autoscaling.Group, lb.LoadBalancer, lb.TargetGroup, lb.Listener).
 */
import type { RecordedResource } from "../../../policy/testing/types";
import { U } from "./ingest";
import { CONSUMER_VPC, GPU_PORT, X, platformRecording } from "./platform";
import { ACCOUNT, REGION, T, add, arnOf, editInput, find, fn, remove, resource, urnOf } from "./recording";

const TYPES = {
  group: "aws:autoscaling/group:Group",
  loadBalancer: "aws:lb/loadBalancer:LoadBalancer",
  targetGroup: "aws:lb/targetGroup:TargetGroup",
  listener: "aws:lb/listener:Listener",
  securityGroup: "aws:ec2/securityGroup:SecurityGroup",
  ingressRule: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
} as const;

/** Type tokens of the fleet resources, for tests that add more of them. */
export const FT = TYPES;

/** URNs of the fleet-mode resources tests mutate or expect in violations. */
export const F = {
  launchTemplate: urnOf(T.launchTemplate, "ingest-gpu-lt"),
  group: urnOf(TYPES.group, "ingest-gpu"),
  loadBalancer: urnOf(TYPES.loadBalancer, "ingest-gpu-lb"),
  targetGroup: urnOf(TYPES.targetGroup, "ingest-gpu-tg"),
  listener: urnOf(TYPES.listener, "ingest-gpu-http"),
  lbSg: urnOf(TYPES.securityGroup, "ingest-gpu-lb-sg"),
  gpuSg: urnOf(TYPES.securityGroup, "ingest-gpu-sg"),
  gpuFromLb: urnOf(TYPES.ingressRule, "ingest-gpu-from-lb"),
  /** The consumers' group admitted to the GPUs' port: the scaler GETs each instance's status from it (issue 35). */
  gpuFromConsumers: urnOf(TYPES.ingressRule, "ingest-gpu-from-consumers"),
  scalerFn: urnOf(T.fn, "ingest-gpu-scaler"),
  consumersSg: X.consumersSg,
} as const;

const groupArn = `arn:aws:autoscaling:${REGION}:${ACCOUNT}:autoScalingGroup:*:autoScalingGroupName/ingest-gpu`;
const lbArn = arnOf("elasticloadbalancing", "loadbalancer/app/ingest-gpu-lb/0123456789abcdef");
const tgArn = arnOf("elasticloadbalancing", "targetgroup/ingest-gpu-tg/0123456789abcdef");
const subnets = ["subnet-0a11", "subnet-0b22"];

/** The capacity grants of the DLQ consumer in fleet mode (functions/ingest/iam.ts FLEET_CAPACITY_GRANTS). */
export const FLEET_CAPACITY_STATEMENTS: Record<string, unknown>[] = [
  {
    Sid: "RaiseGpuGroupCapacity",
    Effect: "Allow",
    Action: ["autoscaling:SetDesiredCapacity"],
    Resource: groupArn,
    Condition: { StringEquals: { "aws:ResourceTag/encache:environment": "dev" } },
  },
  { Sid: "DescribeGpuGroup", Effect: "Allow", Action: ["autoscaling:DescribeAutoScalingGroups"], Resource: "*" },
];

function fleet(): RecordedResource[] {
  return [
    resource(
      TYPES.securityGroup,
      "ingest-gpu-lb-sg",
      {
        vpcId: "vpc-0123",
        description: "The GPU fleet's load balancer: the ingest consumers in, the GPU port out",
        ingress: [{ protocol: "tcp", fromPort: GPU_PORT, toPort: GPU_PORT, securityGroups: ["sg-0consumers"], description: "ingest consumers" }],
        egress: [{ protocol: "tcp", fromPort: 8080, toPort: 8080, securityGroups: ["sg-0gpu"], description: "the GPU service" }],
      },
      { deps: { vpcId: [X.vpc], ingress: [X.consumersSg], egress: [F.gpuSg] }, state: { id: "sg-0lb" } },
    ),
    resource(
      TYPES.securityGroup,
      "ingest-gpu-sg",
      {
        vpcId: "vpc-0123",
        description: "The GPU instances: the load balancer in (a standalone rule), AWS APIs out",
        egress: [{ protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], description: "AWS APIs" }],
      },
      { deps: { vpcId: [X.vpc] }, state: { id: "sg-0gpu" } },
    ),
    resource(
      TYPES.ingressRule,
      "ingest-gpu-from-lb",
      { securityGroupId: "sg-0gpu", referencedSecurityGroupId: "sg-0lb", ipProtocol: "tcp", fromPort: 8080, toPort: 8080 },
      { deps: { securityGroupId: [F.gpuSg], referencedSecurityGroupId: [F.lbSg] } },
    ),
    resource(
      TYPES.ingressRule,
      "ingest-gpu-from-consumers",
      { securityGroupId: "sg-0gpu", referencedSecurityGroupId: "sg-0consumers", ipProtocol: "tcp", fromPort: GPU_PORT, toPort: GPU_PORT },
      { deps: { securityGroupId: [F.gpuSg], referencedSecurityGroupId: [X.consumersSg] } },
    ),
    resource(
      T.launchTemplate,
      "ingest-gpu-lt",
      {
        imageId: "ami-0abcdef1234567890",
        instanceType: "g5.xlarge",
        metadataOptions: { httpTokens: "required", httpEndpoint: "enabled", httpPutResponseHopLimit: 1 },
        networkInterfaces: [{ deviceIndex: 0, securityGroups: ["sg-0gpu"], associatePublicIpAddress: "false", deleteOnTermination: "true" }],
        blockDeviceMappings: [{ deviceName: "/dev/sda1", ebs: { volumeType: "gp3", volumeSize: 200, encrypted: "true", deleteOnTermination: "true" } }],
        monitoring: { enabled: true },
        tagSpecifications: [{ resourceType: "instance", tags: { Name: "encache-gpu", "encache:role": "gpu" } }],
      },
      { deps: { networkInterfaces: [F.gpuSg] }, state: { id: "lt-0fleet0123456789", arn: arnOf("ec2", "launch-template/lt-0fleet0123456789") } },
    ),
    resource(
      TYPES.loadBalancer,
      "ingest-gpu-lb",
      { internal: true, loadBalancerType: "application", subnets, securityGroups: ["sg-0lb"], dropInvalidHeaderFields: true },
      { deps: { subnets: [X.vpc], securityGroups: [F.lbSg] }, state: { arn: lbArn, dnsName: "internal-ingest-gpu-lb-0123.eu-west-1.elb.amazonaws.com" } },
    ),
    resource(
      TYPES.targetGroup,
      "ingest-gpu-tg",
      {
        port: 8080,
        protocol: "HTTP",
        targetType: "instance",
        vpcId: "vpc-0123",
        deregistrationDelay: 60,
        healthCheck: { path: "/health", matcher: "200", interval: 15, healthyThreshold: 2 },
      },
      { deps: { vpcId: [X.vpc] }, state: { arn: tgArn } },
    ),
    resource(
      TYPES.listener,
      "ingest-gpu-http",
      { loadBalancerArn: lbArn, port: GPU_PORT, protocol: "HTTP", defaultActions: [{ type: "forward", targetGroupArn: tgArn }] },
      { deps: { loadBalancerArn: [F.loadBalancer], defaultActions: [F.targetGroup] } },
    ),
    resource(
      TYPES.group,
      "ingest-gpu",
      {
        minSize: 0,
        maxSize: 2,
        vpcZoneIdentifiers: subnets,
        capacityRebalance: true,
        mixedInstancesPolicy: {
          instancesDistribution: { onDemandBaseCapacity: 0, onDemandPercentageAboveBaseCapacity: 0, spotAllocationStrategy: "price-capacity-optimized" },
          launchTemplate: {
            launchTemplateSpecification: { launchTemplateId: "lt-0fleet0123456789", version: "$Latest" },
            overrides: [{ instanceType: "g5.xlarge" }, { instanceType: "g6.xlarge" }],
          },
        },
        targetGroupArns: [tgArn],
        healthCheckType: "ELB",
        healthCheckGracePeriod: 300,
        enabledMetrics: ["GroupDesiredCapacity", "GroupInServiceInstances"],
        initialLifecycleHooks: [
          { name: "drain", lifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING", heartbeatTimeout: 300, defaultResult: "CONTINUE" },
        ],
        tags: [
          { key: "Name", value: "encache-gpu", propagateAtLaunch: true },
          { key: "encache:role", value: "gpu", propagateAtLaunch: true },
          { key: "encache:environment", value: "dev", propagateAtLaunch: true },
        ],
      },
      { deps: { mixedInstancesPolicy: [F.launchTemplate], targetGroupArns: [F.targetGroup], vpcZoneIdentifiers: [X.vpc] }, state: { arn: groupArn } },
    ),
  ];
}

/**
 * Fleet mode's GPU paths: the window and DLQ consumers POST to the load balancer (its DNS name in
 * GPU_FLEET_SERVICE_HOST), and the scaler GETs each instance's status, from the consumers' group.
 */
function gpuPaths(rs: RecordedResource[]): void {
  for (const urn of [U.windowFn, U.dlqFn]) {
    editInput<{ variables: Record<string, string> }>(rs, urn, "environment", (e) =>
      Object.assign(e.variables, { GPU_FLEET_GROUP_NAME: "ingest-gpu", GPU_FLEET_SERVICE_HOST: "internal-ingest-gpu-lb-0123.eu-west-1.elb.amazonaws.com" }),
    );
    const r = find(rs, urn);
    r.propertyDependencies.environment = [...(r.propertyDependencies.environment ?? []), F.group, F.loadBalancer];
    r.dependencies.push(F.group, F.loadBalancer);
  }
  // The idle check of the single GPU gives way to the scaler.
  remove(rs, X.idleFn);
  add(
    rs,
    fn(
      "ingest-gpu-scaler",
      {
        runtime: "nodejs22.x",
        handler: "index.handler",
        timeout: 60,
        environment: { variables: { GPU_FLEET_GROUP_NAME: "ingest-gpu", GPU_SERVICE_PORT: String(GPU_PORT), GPU_STATUS_PATH: "/status" } },
        vpcConfig: CONSUMER_VPC,
      },
      { deps: { environment: [F.group], vpcConfig: [X.vpc, X.consumersSg] } },
    ),
  );
}

function build(): RecordedResource[] {
  const rs = platformRecording();
  // Instance mode's GPU, its group, its id parameter and its EC2 grant make way for the group.
  remove(rs, urnOf(T.parameter, "gpu-instance-id"));
  remove(rs, U.gpuAttachment);
  remove(rs, U.gpuPolicy);
  remove(rs, U.gpu);
  remove(rs, X.gpuSg);
  add(rs, ...fleet());
  gpuPaths(rs);
  // The DLQ consumer: no instance id to read; the group's capacity to raise instead.
  editInput<{ Statement: Record<string, unknown>[] }>(rs, U.dlqPolicy, "policy", (d) => {
    d.Statement = [...d.Statement.filter((s) => s.Sid !== "ReadInstanceId"), ...FLEET_CAPACITY_STATEMENTS];
  });
  find(rs, U.dlqPolicy).propertyDependencies.policy!.push(F.group);
  find(rs, U.dlqPolicy).dependencies.push(F.group);
  return rs;
}

export function ingestFleetRecording(): RecordedResource[] {
  return structuredClone(build());
}
