/**
 * The pool's claim workers under faults: a few workflows claim warm instances with the claim
 * library itself (as the pool scenario does), through their own fault-proxy port, round after
 * round while the rest of the traffic flows. Each round every workflow asks at once, the holders
 * are written down (two holders of one instance in a round is a duplicate), then each releases
 * its own claim. What a leak is, is decided at the end against the claim table (ledger.ts).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EC2Client } from "@aws-sdk/client-ec2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { type ClaimDeps, claimInstance, type ClaimRequest, releaseClaim } from "../../functions/pool/claim";
import { parseRefillConfig, type PoolClassConfig } from "../../functions/pool/config";
import type { LocalPlatform } from "../platform";
import { claimSettings, StepRecorder } from "../scenarios/pool";

/** How long one claim may keep asking, in simulated time (the library's deadline). */
const CLAIM_DEADLINE_SIM_MS = 60_000;
/** A release that throws (faults beyond the SDK's retries) is tried again this often before it counts as still held. */
const RELEASE_ATTEMPTS = 5;

export interface ClaimRoundHolder {
  workflowId: string;
  instanceId: string;
}

export class PoolClaimers {
  readonly steps = new StepRecorder();
  readonly rounds: ClaimRoundHolder[][] = [];
  /** `workflow/instance` pairs whose release never got through: still held, not leaked. */
  readonly live = new Set<string>();
  readonly claimTableName: string;
  readonly cls: PoolClassConfig;
  readonly workflowPrefix: string;
  errors = 0;
  exhausted = 0;
  private readonly deps: ClaimDeps;
  /** Every claim's request but its workflow and deadline. */
  private readonly request: Omit<ClaimRequest, "workflowId" | "deadline">;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly platform: LocalPlatform,
    /** The claimers' own fault-proxy port (every service). */
    endpoint: string,
    private readonly workflows: number,
    runTag: string,
  ) {
    const config = parseRefillConfig(platform.fn("pool-refill").environment);
    const cls = config.classes.find((c) => c.size > 0);
    if (!cls) throw new Error("no pool class has a size above 0");
    this.cls = cls;
    this.claimTableName = config.claimTableName;
    this.workflowPrefix = `wf-${runTag}-`;
    const region = platform.topology.region;
    this.deps = {
      sqs: new SQSClient({ region, endpoint }),
      dynamodb: new DynamoDBClient({ region, endpoint }),
      ec2: new EC2Client({ region, endpoint }),
      clock: () => platform.clock.now(),
      logger: this.steps,
      metrics: { addMetric: () => undefined, publishStoredMetrics: () => undefined },
    };
    this.request = {
      // The class queue's URL names the SQS clock proxy; SDK v3 sends to the QueueUrl's origin, so it moves to the claimers' port.
      queueUrl: `${new URL(endpoint).origin}${new URL(cls.queueUrl).pathname}`,
      resourceClass: { name: cls.name, instanceTypes: cls.instanceTypes, cpu: cls.cpu, memoryMib: cls.memoryMib, usageClass: cls.usageClass },
      requirements: { minCpu: cls.cpu, minMemoryMib: cls.memoryMib },
      claimTableName: this.claimTableName,
      poolTag: config.poolTag,
      ...claimSettings(platform.topology),
    };
  }

  /** Claim rounds until stop(), one every `everyMs` (a refill runs in between). */
  start(everyMs: number): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.round();
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async round(): Promise<void> {
    const ids = Array.from({ length: this.workflows }, (_, i) => `${this.workflowPrefix}${this.rounds.length}-${i}`);
    const results = await Promise.all(
      ids.map(async (workflowId) => {
        try {
          const deadline = this.platform.clock.now() + CLAIM_DEADLINE_SIM_MS;
          const result = await claimInstance(this.deps, { ...this.request, workflowId, deadline });
          if (result.outcome === "claimed") return { workflowId, instanceId: result.instanceId };
          this.exhausted += 1;
        } catch {
          // Faults beyond the SDK's retries: the library released what it had taken, or the ledger will find it.
          this.errors += 1;
        }
        return undefined;
      }),
    );
    const holders = results.filter((r): r is ClaimRoundHolder => r !== undefined);
    this.rounds.push(holders);
    await Promise.all(holders.map((h) => this.release(h)));
  }

  private async release(h: ClaimRoundHolder): Promise<void> {
    for (let attempt = 1; attempt <= RELEASE_ATTEMPTS; attempt++) {
      try {
        // false: the lock is not this workflow's (any more); a retried delete whose first try
        // succeeded answers that too. Either way the workflow holds nothing now.
        await releaseClaim(this.deps, this.claimTableName, h.instanceId, h.workflowId);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
    this.live.add(`${h.workflowId}/${h.instanceId}`);
  }
}
