/** Shared arrangement of the housekeeping task tests (test/functions/fleet/tasks/). */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import type { Instance } from "@aws-sdk/client-ec2";
import type { TimeBudget } from "../../../functions/fleet/budget";
import type { TaskDeps } from "../../../functions/fleet/tasks/types";
import type { HousekeepingConfig } from "../../../functions/fleet/config";
import { housekeepingConfig, mockedClients } from "./fleet-deps";

export const NOW = new Date("2025-11-25T12:00:00Z");
export const unlimited: TimeBudget = { exhausted: () => false };
/** A budget that runs out after `n` checks. */
export const budgetOf = (n: number): TimeBudget => {
  let left = n;
  return { exhausted: () => left-- <= 0 };
};

export function harness(config: Partial<HousekeepingConfig> = {}) {
  const t = mockedClients();
  const deps: TaskDeps = { ...t.clients, logger: t.logger, metrics: t.metrics, config: housekeepingConfig(config), now: () => NOW };
  return { ...t, deps };
}

export const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000);
export const hex = (n: number) => n.toString(16).padStart(17, "0");
export const id = (n: number) => `i-${hex(n)}`;

export function instance(n: number, launchedMinutesAgo: number, extra: Partial<Instance> = {}): Instance {
  return { InstanceId: id(n), LaunchTime: minutesAgo(launchedMinutesAgo), State: { Name: "running", Code: 16 }, InstanceType: "c7g.large", ...extra };
}

/** Active jobs by instance id, answered by Query on the instance index. */
/**
 * The jobs table's answers for `active` instances, by what is asked: the status/instance index
 * (the orphan sweep's paged read: each active instance has one running job) or one instance's jobs.
 */
export function activeJobs(t: ReturnType<typeof harness>, active: string[]): void {
  t.dynamodbMock.on(QueryCommand).callsFake((input: { IndexName?: string; ExpressionAttributeValues: Record<string, { S: string }> }) => {
    if (input.IndexName === "status-instance_id-index") {
      const status = input.ExpressionAttributeValues[":status"]!.S;
      return { Items: status === "running" ? active.map((i) => ({ instance_id: { S: i } })) : [] };
    }
    return { Count: active.includes(input.ExpressionAttributeValues[":instance_id"]!.S) ? 1 : 0, Items: [] };
  });
}
