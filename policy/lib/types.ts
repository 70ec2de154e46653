/** Pulumi type tokens the rules match on; strings keep the pack free of @pulumi/aws. */
export const QUEUE = "aws:sqs/queue:Queue";
export const REDRIVE_ALLOW_POLICY = "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy";
export const EVENT_SOURCE_MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping";
export const FUNCTION = "aws:lambda/function:Function";
export const ROLE = "aws:iam/role:Role";
export const ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy";
export const ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment";
export const IAM_POLICY = "aws:iam/policy:Policy";
export const EC2_INSTANCE = "aws:ec2/instance:Instance";
export const METRIC_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm";
export const DYNAMODB_TABLE = "aws:dynamodb/table:Table";
export const SCHEDULE = "aws:scheduler/schedule:Schedule";
export const EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget";

/** AWS defaults, applied when an input is left unset. */
export const SQS_DEFAULT_RETENTION_SECONDS = 345600;
export const SQS_DEFAULT_VISIBILITY_SECONDS = 30;
export const LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3;

/** ECS: services, and the ECS targets of schedules and EventBridge rules, run tasks (parts 2 and 4). */
export const ECS_SERVICE = "aws:ecs/service:Service";

export const LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate";
/** Part 4: ECS task definitions, and the marker the QueueWorkerService sets on those whose containers hold task scale-in protection. */
export const ECS_TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition";

/** Issue 27, ingest's fleet capacity mode: an Auto Scaling group of GPU instances behind an internal load balancer. */
export const AUTOSCALING_GROUP = "aws:autoscaling/group:Group";
/** `aws.lb.LoadBalancer`, and its older alias `aws.alb.LoadBalancer` (a distinct type token for the same resource). */
export const LOAD_BALANCERS: readonly string[] = ["aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer"];
export const SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup";
/** A standalone ingress rule of a security group (the VPC module's, one source per rule). */
export const SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule";
/** The older standalone rule, ingress or egress by its `type`. */
export const SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule";
/** EC2 Auto Scaling's default for instancesDistribution.onDemandPercentageAboveBaseCapacity: all On-Demand. */
export const ASG_DEFAULT_ON_DEMAND_PERCENTAGE = 100;
