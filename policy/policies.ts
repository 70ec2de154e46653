import type { Policies } from "@pulumi/policy";
import { ecsTaskDefinitionHardened } from "./rules/ecs-task-definition-hardened";
import { ecsTaskProtectionGranted } from "./rules/ecs-task-protection-granted";
import { dlqConsumerCanStartGpu } from "./rules/dlq-consumer-can-start-gpu";
import { dlqHasDepthAlarm } from "./rules/dlq-has-depth-alarm";
import { dynamodbTablePitr } from "./rules/dynamodb-table-pitr";
import { ecsCapacityProviderNoLaunchType } from "./rules/ecs-capacity-provider-no-launch-type";
import { ecsNoPublicIp } from "./rules/ecs-no-public-ip";
import { iamPassroleScoped } from "./rules/iam-passrole-scoped";
import { ec2TerminateTagCondition } from "./rules/ec2-terminate-tag-condition";
import { jobTableTtl } from "./rules/job-table-ttl";
import { dlqRetentionExceedsSource } from "./rules/dlq-retention-exceeds-source";
import { ec2InstanceHardened } from "./rules/ec2-instance-hardened";
import { noWildcardIamActions } from "./rules/no-wildcard-iam-actions";
import { queueHasDlq } from "./rules/queue-has-dlq";
import { scheduledTargetRetryAndDlq } from "./rules/scheduled-target-retry-and-dlq";
import { sqsMappingReportsBatchItemFailures } from "./rules/sqs-mapping-reports-batch-item-failures";
import { visibilityTimeoutCoversConsumer } from "./rules/visibility-timeout-covers-consumer";
import { launchTemplateHardened } from "./rules/launch-template-hardened";
import { ec2LaunchGrantsScoped } from "./rules/ec2-launch-grants-scoped";
import { documentsVisibleOnPreview } from "./rules/documents-visible-on-preview";
import { declaredDocumentsMatch } from "./rules/declared-documents-match";
import { trustPolicyConfusedDeputy } from "./rules/trust-policy-confused-deputy";
import { ec2RunInstancesViaLaunchTemplate } from "./rules/ec2-run-instances-via-launch-template";
import { iamArnsNameAccount } from "./rules/iam-arns-name-account";
import { instanceRoleNoManagedPolicies } from "./rules/instance-role-no-managed-policies";
import { ecsContainerLeastPrivilege } from "./rules/ecs-container-least-privilege";
import { sgEgressRestricted } from "./rules/sg-egress-restricted";
import { vpcDefaultSgClosed, vpcFlowLogs } from "./rules/vpc-baseline";
import { alarmsHaveActions } from "./rules/alarms-have-actions";
import { iamStarResourceUnscopableOnly } from "./rules/iam-star-resource-unscopable-only";
import { ec2StopScopedToStack } from "./rules/ec2-stop-scoped-to-stack";
import { terminalQueueUnconsumed } from "./rules/terminal-queue-unconsumed";
import { jobTableTagged } from "./rules/job-table-tagged";
import { roleInlinePoliciesKnown } from "./rules/role-inline-policies-known";
import { declaredDocumentsHaveInputs } from "./rules/declared-documents-have-inputs";
import { ec2InstanceDetailedMonitoringEnabled } from "./rules/ec2-instance-detailed-monitoring-enabled";
import { dynamodbTableEncryptionEnabled } from "./rules/dynamodb-table-encryption-enabled";
import { lbInternal } from "./rules/lb-internal";
import { lbSgAdmitsConsumersOnly } from "./rules/lb-sg-admits-consumers-only";
import { spotGroupCapacityRebalance } from "./rules/spot-group-capacity-rebalance";
import { warmPoolOnDemandOnly } from "./rules/warm-pool-on-demand-only";
import { gpuGroupTemplateHardened } from "./rules/gpu-group-template-hardened";
import { gpuPathsAdmitted } from "./rules/gpu-paths-admitted";

/** Shared by policy/index.ts (the real pack) and the offline plan; importing it starts nothing. */
export const policies: Policies = [
  ecsTaskProtectionGranted,
  ecsTaskDefinitionHardened,
  dlqConsumerCanStartGpu,
  queueHasDlq,
  dlqRetentionExceedsSource,
  visibilityTimeoutCoversConsumer,
  sqsMappingReportsBatchItemFailures,
  noWildcardIamActions,
  ec2InstanceHardened,
  dlqHasDepthAlarm,
  dynamodbTablePitr,
  scheduledTargetRetryAndDlq,
  ecsNoPublicIp,
  ecsCapacityProviderNoLaunchType,
  iamPassroleScoped,
  ec2TerminateTagCondition,
  jobTableTtl,
  launchTemplateHardened,
  ec2LaunchGrantsScoped,
  documentsVisibleOnPreview,
  declaredDocumentsMatch,
  trustPolicyConfusedDeputy,
  ec2RunInstancesViaLaunchTemplate,
  iamArnsNameAccount,
  instanceRoleNoManagedPolicies,
  ecsContainerLeastPrivilege,
  sgEgressRestricted,
  vpcFlowLogs,
  vpcDefaultSgClosed,
  alarmsHaveActions,
  iamStarResourceUnscopableOnly,
  ec2StopScopedToStack,
  terminalQueueUnconsumed,
  jobTableTagged,
  roleInlinePoliciesKnown,
  declaredDocumentsHaveInputs,
  ec2InstanceDetailedMonitoringEnabled,
  dynamodbTableEncryptionEnabled,
  lbInternal,
  lbSgAdmitsConsumersOnly,
  spotGroupCapacityRebalance,
  warmPoolOnDemandOnly,
  gpuGroupTemplateHardened,
  gpuPathsAdmitted,
];
