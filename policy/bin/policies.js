"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.policies = void 0;
const dlq_consumer_can_start_gpu_1 = require("./rules/dlq-consumer-can-start-gpu");
const dlq_has_depth_alarm_1 = require("./rules/dlq-has-depth-alarm");
const dlq_retention_exceeds_source_1 = require("./rules/dlq-retention-exceeds-source");
const ec2_instance_hardened_1 = require("./rules/ec2-instance-hardened");
const no_wildcard_iam_actions_1 = require("./rules/no-wildcard-iam-actions");
const queue_has_dlq_1 = require("./rules/queue-has-dlq");
const sqs_mapping_reports_batch_item_failures_1 = require("./rules/sqs-mapping-reports-batch-item-failures");
const visibility_timeout_covers_consumer_1 = require("./rules/visibility-timeout-covers-consumer");
/** Shared by policy/index.ts (the real pack) and the offline plan; importing it starts nothing. */
exports.policies = [
    dlq_consumer_can_start_gpu_1.dlqConsumerCanStartGpu,
    queue_has_dlq_1.queueHasDlq,
    dlq_retention_exceeds_source_1.dlqRetentionExceedsSource,
    visibility_timeout_covers_consumer_1.visibilityTimeoutCoversConsumer,
    sqs_mapping_reports_batch_item_failures_1.sqsMappingReportsBatchItemFailures,
    no_wildcard_iam_actions_1.noWildcardIamActions,
    ec2_instance_hardened_1.ec2InstanceHardened,
    dlq_has_depth_alarm_1.dlqHasDepthAlarm,
];
