/** Shared arrangement of the housekeeping task tests (test/functions/fleet/tasks/). */
import type { Instance } from "@aws-sdk/client-ec2";
import type { TimeBudget } from "../../../functions/fleet/budget";
import type { TaskDeps } from "../../../functions/fleet/tasks/types";
import type { HousekeepingConfig } from "../../../functions/fleet/config";
import { housekeepingConfig, mockedClients } from "./fleet-deps";
import { FakeJobsTable } from "./fleet-fakes";

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

/** The tags every instance of this stack's fleet carries (housekeepingConfig's names). */
export const FLEET_TAGS = [
  { Key: "runs-fleet:managed", Value: "true" },
  { Key: "encache:environment", Value: "dev" },
];

export function instance(n: number, launchedMinutesAgo: number, extra: Partial<Instance> = {}): Instance {
  return {
    InstanceId: id(n),
    LaunchTime: minutesAgo(launchedMinutesAgo),
    State: { Name: "running", Code: 16 },
    InstanceType: "c7g.large",
    Tags: FLEET_TAGS,
    ...extra,
  };
}

/**
 * The jobs table for the tasks' queries (a FakeJobsTable, so each query is answered by its index,
 * key condition and filter): each `active` instance has a running job; each `finished` instance
 * only a completed one, which must not count as active; `unreadable` indexes fail every Query.
 */
export function activeJobs(t: ReturnType<typeof harness>, active: string[], finished: string[] = [], unreadable: string[] = []): FakeJobsTable {
  return new FakeJobsTable(
    [
      ...active.map((instance_id, i) => ({ job_id: `running-${i}`, status: "running", instance_id })),
      ...finished.map((instance_id, i) => ({ job_id: `completed-${i}`, status: "completed", instance_id, completed_at: "2025-11-25T11:00:00Z" })),
    ],
    1000,
    unreadable,
  ).install(t.dynamodbMock);
}
