/**
 * `tsx scripts/stack-region.ts <stack>` prints `region=<aws:region>` from Pulumi.<stack>.yaml, for
 * a workflow step's $GITHUB_OUTPUT. Every workflow that configures AWS credentials takes the region
 * from here, so the credentials, the STS endpoint and the program all use the region the stack
 * deploys to: moving a stack is a config change, not a workflow edit (a hard-coded `us-east-1`
 * would silently keep the role session in the old region).
 *
 * Exits 2 naming the file when the stack file or its `aws:region` is missing, so the job fails
 * before it assumes a role rather than with a region error deep inside `pulumi`.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";

const ROOT = path.resolve(__dirname, "..");
/** Stack names as the workflows use them; anything else could name a file outside the repository. */
const STACK_NAME = /^[a-z][a-z0-9-]*$/;
/** The shape of an AWS region name (us-east-1, ap-southeast-2, us-gov-west-1). */
const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

export class StackRegionError extends Error {
  override name = "StackRegionError";
}

/** `aws:region` of the stack's config file under `root`; throws StackRegionError naming what is missing. */
export function stackRegion(stack: string, root: string = ROOT): string {
  if (!STACK_NAME.test(stack)) throw new StackRegionError(`not a stack name: ${JSON.stringify(stack)}`);
  const file = `Pulumi.${stack}.yaml`;
  const full = path.join(root, file);
  if (!fs.existsSync(full)) throw new StackRegionError(`${file}: no such stack file`);
  const doc = parse(fs.readFileSync(full, "utf8")) as { config?: Record<string, unknown> } | null;
  const region = doc?.config?.["aws:region"];
  if (typeof region !== "string" || !REGION.test(region)) {
    throw new StackRegionError(`${file}: config "aws:region" must be a region name such as us-east-1, got ${JSON.stringify(region)}`);
  }
  return region;
}

if (require.main === module) {
  try {
    const [stack] = process.argv.slice(2);
    process.stdout.write(`region=${stackRegion(stack ?? "")}\n`);
  } catch (err) {
    if (!(err instanceof StackRegionError)) throw err;
    process.stderr.write(`stack-region: ${err.message}\n`);
    process.exitCode = 2;
  }
}
