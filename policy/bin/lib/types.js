"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.QUARANTINE = exports.QUEUE_ROLE_TAG = exports.LAMBDA_DEFAULT_TIMEOUT_SECONDS = exports.SQS_DEFAULT_VISIBILITY_SECONDS = exports.SQS_DEFAULT_RETENTION_SECONDS = exports.METRIC_ALARM = exports.EC2_INSTANCE = exports.IAM_POLICY = exports.ROLE_POLICY_ATTACHMENT = exports.ROLE_POLICY = exports.ROLE = exports.FUNCTION = exports.EVENT_SOURCE_MAPPING = exports.REDRIVE_ALLOW_POLICY = exports.QUEUE = void 0;
/** Pulumi type tokens the rules match on; strings keep the pack free of @pulumi/aws. */
exports.QUEUE = "aws:sqs/queue:Queue";
exports.REDRIVE_ALLOW_POLICY = "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy";
exports.EVENT_SOURCE_MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping";
exports.FUNCTION = "aws:lambda/function:Function";
exports.ROLE = "aws:iam/role:Role";
exports.ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy";
exports.ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment";
exports.IAM_POLICY = "aws:iam/policy:Policy";
exports.EC2_INSTANCE = "aws:ec2/instance:Instance";
exports.METRIC_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm";
/** AWS defaults, applied when an input is left unset. */
exports.SQS_DEFAULT_RETENTION_SECONDS = 345600;
exports.SQS_DEFAULT_VISIBILITY_SECONDS = 30;
exports.LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3;
/** The tag that marks a quarantine queue: a terminal sink nobody consumes. */
exports.QUEUE_ROLE_TAG = "encache:queue-role";
exports.QUARANTINE = "quarantine";
