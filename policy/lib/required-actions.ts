import type { PolicyConfigSchema } from "@pulumi/policy";
import { stringList } from "./props";

/**
 * The `requiredActions` option of a rule that demands a role be allowed some actions: its
 * config schema, and the list a stack's pack config resolves to.
 */
export function requiredActionsSchema(defaults: readonly string[], description: string): PolicyConfigSchema {
  return { properties: { requiredActions: { type: "array", items: { type: "string" }, default: [...defaults], description } } };
}

export function requiredActions(args: { getConfig<T extends object>(): T }, defaults: readonly string[]): string[] {
  const config = args.getConfig<{ requiredActions?: unknown }>();
  return config.requiredActions ? stringList(config.requiredActions) : [...defaults];
}
