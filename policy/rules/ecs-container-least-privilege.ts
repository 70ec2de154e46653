import type { ResourceValidationPolicy } from "@pulumi/policy";
import { DECLARED_DOCUMENT_TYPE, HARDENING_WAIVED_LABEL } from "../contract";
import { containerLabel, readContainerDefinitions } from "../lib/ecs-container-definitions";
import { judgedContainerDefinitions } from "../lib/documents";
import { isRecord, readIfKnown, stringList } from "../lib/props";
import { ECS_TASK_DEFINITION } from "../lib/types";

/** What the container's `encache.hardening-waived` label turns off: the stack config did, on purpose. */
function waived(container: Record<string, unknown>): string[] {
  const labels = readIfKnown(() => container.dockerLabels);
  const value = isRecord(labels) ? readIfKnown(() => labels[HARDENING_WAIVED_LABEL]) : undefined;
  return typeof value === "string" ? value.split(",").map((v) => v.trim()) : [];
}

const ROOT = /^(0|root)(:|$)/;

/**
 * A container holds the least it needs: a read-only root filesystem (a compromise can't plant
 * anything that survives in the image's paths), a non-root user, no Linux capabilities. A check
 * the stack config turned off is named in the container's waiver label and not reported.
 */
export const ecsContainerLeastPrivilege: ResourceValidationPolicy = {
  name: "ecs-container-least-privilege",
  description:
    "Every ECS container runs with readonlyRootFilesystem, a non-root user and linuxParameters.capabilities.drop [ALL], unless its encache.hardening-waived label names the check.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    const props: Record<string, unknown> = args.props;
    if (args.type !== ECS_TASK_DEFINITION && args.type !== DECLARED_DOCUMENT_TYPE)
      args.notApplicable(`applies to ${ECS_TASK_DEFINITION} and its declared container definitions`);
    const judged = judgedContainerDefinitions(args.type, args.name, props);
    if (!judged) return;
    const { name } = judged;
    readContainerDefinitions(judged.value, `Task definition '${name}'`).forEach((c, i) => {
      const label = `Task definition '${name}' container ${containerLabel(c, i)}`;
      const off = waived(c);
      if (!off.includes("readonlyRootFilesystem") && c.readonlyRootFilesystem !== true)
        reportViolation(`${label} has a writable root filesystem: set readonlyRootFilesystem with a scratch volume.`);
      const user = readIfKnown(() => c.user);
      if (!off.includes("user") && (typeof user !== "string" || ROOT.test(user)))
        reportViolation(`${label} runs as ${typeof user === "string" ? user : "the image's user (root by default)"}: set a non-root user.`);
      const caps = readIfKnown(() =>
        isRecord(c.linuxParameters) && isRecord(c.linuxParameters.capabilities) ? c.linuxParameters.capabilities.drop : undefined,
      );
      if (!off.includes("capabilities") && !stringList(caps).includes("ALL"))
        reportViolation(`${label} keeps its Linux capabilities: drop ALL (linuxParameters.capabilities.drop).`);
    });
  },
};
