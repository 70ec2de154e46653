import type { PlanDocument } from "../../../plan/render";
import { named, type PlanResource } from "./plan-queries";

/**
 * A stack's GPU user data as the plan records it, and the instance role's host policy: dev's single
 * instance (`userData`, plain text) or prod's fleet template (`userData`, base64), by the resources
 * the plan declares.
 */
export function gpuBoot(doc: PlanDocument): { mode: "instance" | "fleet"; userData: string; hostPolicy: PlanResource } {
  const lt = doc.resources.find((r) => r.type === "aws:ec2/launchTemplate:LaunchTemplate" && r.name === "ingest-gpu-fleet-lt");
  if (lt) {
    return {
      mode: "fleet",
      userData: Buffer.from(String(lt.inputs.userData), "base64").toString("utf8"),
      hostPolicy: named(doc, "aws:iam/rolePolicy:RolePolicy", "ingest-gpu-fleet-host"),
    };
  }
  return {
    mode: "instance",
    userData: String(named(doc, "aws:ec2/instance:Instance", "ingest-gpu").inputs.userData),
    hostPolicy: named(doc, "aws:iam/rolePolicy:RolePolicy", "ingest-gpu-host"),
  };
}
