import type { ResourceValidationPolicy } from "@pulumi/policy";
import { isRecord, numberOr } from "../lib/props";
import { ECS_TASK_DEFINITION } from "../lib/types";
import { DECLARED_DOCUMENT_TYPE } from "../contract";
import { judgedContainerDefinitions } from "../lib/documents";
import { containerLabel, readContainerDefinitions } from "../lib/ecs-container-definitions";

/**
 * Every container of an ECS task definition: not privileged (root on the host, and Fargate
 * refuses it anyway), a log configuration (a task without logs fails silently), and a
 * container-level hard memory limit (one runaway container can't starve the others, and moto's
 * RunTask needs it too).
 */
export const ecsTaskDefinitionHardened: ResourceValidationPolicy = {
  name: "ecs-task-definition-hardened",
  description: "ECS task definitions: no privileged container; every container has a logConfiguration with a logDriver and a container-level memory limit.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    const props: Record<string, unknown> = args.props;
    if (args.type !== ECS_TASK_DEFINITION && args.type !== DECLARED_DOCUMENT_TYPE)
      args.notApplicable(`applies to ${ECS_TASK_DEFINITION} and its declared container definitions`);
    // Unknown on a first preview (it holds the image URI and ARNs): its declaration is judged instead.
    const judged = judgedContainerDefinitions(args.type, args.name, props);
    if (!judged) return;
    const { name } = judged;
    const containers = readContainerDefinitions(judged.value, `Task definition '${name}'`);
    if (containers.length === 0) reportViolation(`Task definition '${name}' has no container definitions.`);
    containers.forEach((c, i) => {
      const label = `Task definition '${name}' container ${containerLabel(c, i)}`;
      if (c.privileged === true) reportViolation(`${label} must not be privileged.`);
      const logs = c.logConfiguration;
      if (!isRecord(logs) || typeof logs.logDriver !== "string" || logs.logDriver === "") {
        reportViolation(`${label} has no logConfiguration (set a logDriver, e.g. awslogs).`);
      }
      if (!(numberOr(c.memory, 0) > 0)) reportViolation(`${label} has no container-level memory limit (set memory in MiB).`);
    });
  },
};
