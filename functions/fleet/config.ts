import { HOUSEKEEPING_ENV, TERMINATION_ENV } from "./env";

export interface TerminationConfig {
  jobsTable: string;
  retentionDays: number;
  queueUrl: string;
  quarantineQueueUrl: string;
  runnerParameterPath: string;
}

export interface HousekeepingConfig {
  jobsTable: string;
  retentionDays: number;
  queueUrl: string;
  quarantineQueueUrl: string;
  maxRuntimeMinutes: number;
  ssmMinAgeMinutes: number;
  pools: string[];
  instancePrices: Record<string, number>;
  timeMarginMs: number;
  runnerParameterPath: string;
  managedTag: { key: string; value: string };
  /** The stack's environment tag (`encache:environment=<the stack's>`): the second tag every swept instance must carry. */
  environmentTag: { key: string; value: string };
  poolTagKey: string;
}

export function parseTerminationConfig(env: NodeJS.ProcessEnv): TerminationConfig {
  return TERMINATION_ENV.parse(env);
}

export function parseHousekeepingConfig(env: NodeJS.ProcessEnv): HousekeepingConfig {
  const { managedTagKey, managedTagValue, environmentTagKey, environment, ...e } = HOUSEKEEPING_ENV.parse(env);
  return { ...e, managedTag: { key: managedTagKey, value: managedTagValue }, environmentTag: { key: environmentTagKey, value: environment } };
}
