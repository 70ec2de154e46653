/**
 * What `ops` knows of a stack: its outputs, as `pulumi stack output --json` prints them (a file
 * given with `--outputs`) or as Pulumi's Automation API reads them where the CLI is installed.
 * Validated with zod, so a file from another program, or from before the outputs `ops` needs
 * existed, fails with the missing output named rather than half-way through a command.
 */
import * as fs from "node:fs";
import { z } from "zod";

const queue = z.object({
  url: z.string().url(),
  arn: z.string().regex(/^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+$/, "an SQS queue ARN"),
  kind: z.enum(["source", "dlq", "quarantine", "schedule-dlq"]),
  source: z.string().optional(),
  dlq: z.string().optional(),
  consumed: z.boolean().optional(),
  advertClass: z.string().optional(),
});

export const stackOutputsSchema = z.object({
  opsQueues: z.record(z.string(), queue).refine((q) => Object.keys(q).length > 0, "names no queue"),
  clusterName: z.string().min(1),
  workerServiceName: z.string().min(1).optional(),
  /** Instance mode. */
  gpuInstanceId: z.string().min(1).optional(),
  /** Fleet mode. */
  gpuFleetGroupName: z.string().min(1).optional(),
  opsGpu: z.object({
    mode: z.enum(["instance", "fleet"]),
    holdTag: z.string().min(1),
    idleStopMinutes: z.number().int().min(0),
    /** Fleet mode with Spot: the Spot breaker's settings (`gpu.capacity.fleet.spotBreaker`). Absent without Spot. */
    spotBreaker: z
      .object({ interruptions: z.number().int().min(1), windowMinutes: z.number().int().min(1), cooldownMinutes: z.number().int().min(1) })
      .optional(),
  }),
  operatorPolicyArn: z.string().min(1),
});

export type StackOutputs = z.infer<typeof stackOutputsSchema>;
export type OpsQueue = z.infer<typeof queue> & { name: string };

export class OutputsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutputsError";
  }
}

/** Pure: outputs as JSON text → validated outputs, or an OutputsError naming what is wrong. */
export function parseOutputs(text: string, where: string): StackOutputs {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new OutputsError(`${where}: not JSON (${(err as Error).message}); save it with \`pulumi stack output --json -s <stack> > ${where}\``);
  }
  const parsed = stackOutputsSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(top)"}: ${i.message}`).join("; ");
    throw new OutputsError(`${where}: not the outputs ops needs (${problems}); was the stack deployed from this version of the program?`);
  }
  const { opsGpu, gpuInstanceId, gpuFleetGroupName } = parsed.data;
  if (opsGpu.mode === "instance" && !gpuInstanceId) throw new OutputsError(`${where}: instance mode, but no gpuInstanceId`);
  if (opsGpu.mode === "fleet" && !gpuFleetGroupName) throw new OutputsError(`${where}: fleet mode, but no gpuFleetGroupName`);
  return parsed.data;
}

/** The outputs from `--outputs <file>`, or from the stack through the Automation API. */
export async function loadOutputs(stack: string, file: string | undefined): Promise<StackOutputs> {
  if (file !== undefined) {
    if (!fs.existsSync(file)) throw new OutputsError(`--outputs ${file}: no such file`);
    return parseOutputs(fs.readFileSync(file, "utf8"), file);
  }
  return parseOutputs(JSON.stringify(await automationOutputs(stack)), `stack ${stack}`);
}

/**
 * The Automation API's view of the stack (needs the Pulumi CLI and the stack's backend; this is the
 * thin path, tested where the CLI exists). Loaded only here: it is not needed with --outputs.
 */
async function automationOutputs(stack: string): Promise<Record<string, unknown>> {
  const { LocalWorkspace } = (await import("@pulumi/pulumi")).automation;
  let outputs: Record<string, { value: unknown }>;
  try {
    const selected = await LocalWorkspace.selectStack({ stackName: stack, workDir: process.cwd() });
    outputs = await selected.outputs();
  } catch (err) {
    throw new OutputsError(
      `stack ${stack}: the Automation API could not read its outputs (${(err as Error).message.split("\n")[0]}; it needs the Pulumi CLI on PATH, logged in to the stack's backend); without it, pass --outputs <file> from \`pulumi stack output --json -s ${stack}\``,
    );
  }
  return Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, v.value]));
}

/** Every queue with its logical name, in the outputs' order. */
export function queuesOf(outputs: StackOutputs): OpsQueue[] {
  return Object.entries(outputs.opsQueues).map(([name, q]) => ({ name, ...q }));
}

/** The queue by logical name; an unknown name is refused with the names there are. */
export function queueNamed(outputs: StackOutputs, name: string, kinds?: ReadonlyArray<OpsQueue["kind"]>): OpsQueue {
  const all = queuesOf(outputs);
  const candidates = kinds ? all.filter((q) => kinds.includes(q.kind)) : all;
  const q = candidates.find((x) => x.name === name);
  if (!q) {
    const what = kinds ? kinds.join(" or ") : "queue";
    throw new OutputsError(`unknown ${what} ${name} (this stack has: ${candidates.map((x) => x.name).join(", ")})`);
  }
  return q;
}

/** `arn:aws:sqs:<region>:…`: the stack's region, from its queues (the outputs carry no region of their own). */
export function regionOf(outputs: StackOutputs): string {
  const first = queuesOf(outputs)[0];
  return first?.arn.split(":")[3] ?? "us-east-1";
}
