/**
 * Types moto cannot act on: answered exactly as the offline plan's mocks answer them, recorded
 * and left uncreated. Lambda functions also have their bundle written to disk, where the local
 * runtime runs them.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Args, ProvisionContext, Provisioner, Provisioners, Result } from "./context";

/** The bundle path for a function, shared with the topology builder. */
export function codePathFor(codeDir: string, logicalName: string): string {
  return path.resolve(codeDir, logicalName, "index.js");
}

/** Recorded only: the offline plan's answer. Also the answer for any type no provisioner claims. */
export const recordOnly: Provisioner = async (ctx: ProvisionContext, args: Args) => (await ctx.planMocks.newResource(args)) as Result;

/** Lambda is not created in moto (it cannot run it): the bundle goes to disk for the local runtime. */
const lambdaFunction: Provisioner = async (ctx, args, outcome) => {
  const target = codePathFor(ctx.codeDir, args.name);
  const code = await archiveIndexJs(args.inputs.code);
  if (code === undefined) throw new Error("the code archive has no index.js");
  await fs.promises.mkdir(path.dirname(target), { recursive: true });
  await fs.promises.writeFile(target, code);
  outcome.notes.push(`bundle written to ${target}`);
  return ctx.planMocks.newResource(args) as Result;
};

/** The `index.js` text of a deserialized AssetArchive (whose `assets` and `text` are promises). */
async function archiveIndexJs(code: unknown): Promise<string | undefined> {
  const archive = code as { assets?: Promise<Record<string, unknown>> } | undefined;
  const assets = archive?.assets ? await archive.assets : undefined;
  const asset = assets?.["index.js"] as { text?: Promise<string>; path?: Promise<string> } | undefined;
  if (asset?.text) return asset.text;
  if (asset?.path) return fs.promises.readFile(await asset.path, "utf8");
  return undefined;
}

/** The types the program declares that stay uncreated, named here so the list is visible. */
export const recordedProvisioners: Provisioners = {
  "aws:lambda/function:Function": lambdaFunction,
  // moto cannot invoke Lambda: the local runtime's event sources and scheduler play these.
  "aws:lambda/eventSourceMapping:EventSourceMapping": recordOnly,
  "aws:scheduler/schedule:Schedule": recordOnly,
  "aws:cloudwatch/logGroup:LogGroup": recordOnly,
  // moto can't read a RedriveAllowPolicy back.
  "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy": recordOnly,
  "aws:ecr/repository:Repository": recordOnly,
  "aws:ecr/lifecyclePolicy:LifecyclePolicy": recordOnly,
  "awsx:ecr:Image": recordOnly,
  "aws:appautoscaling/target:Target": recordOnly,
  "aws:appautoscaling/policy:Policy": recordOnly,
};
