import type { PolicyConfigSchema } from "@pulumi/policy";
import { stringList } from "./props";

/** One option of a config schema (@pulumi/policy does not export the type by name). */
type ConfigProperty = PolicyConfigSchema["properties"][string];

/** One config option holding a list of IAM actions, defaulting to `defaults`. */
export function actionListProperty(defaults: readonly string[], description: string): ConfigProperty {
  return { type: "array", items: { type: "string" }, default: [...defaults], description };
}

/**
 * The `requiredActions` option of a rule that demands a role be allowed some actions: its
 * config schema, and the list a stack's pack config resolves to.
 */
export function requiredActionsSchema(defaults: readonly string[], description: string): PolicyConfigSchema {
  return { properties: { requiredActions: actionListProperty(defaults, description) } };
}

/** The list of actions a stack's pack config gives under `key`, or `defaults` when it gives none. */
export function configuredActions(args: { getConfig<T extends object>(): T }, key: string, defaults: readonly string[]): string[] {
  const config = args.getConfig<Record<string, unknown>>();
  return config[key] ? stringList(config[key]) : [...defaults];
}

export function requiredActions(args: { getConfig<T extends object>(): T }, defaults: readonly string[]): string[] {
  return configuredActions(args, "requiredActions", defaults);
}
