import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";

/** Value the plan gives a `secure:` config value: the real one needs the stack's secrets provider. */
export const SECRET_PLACEHOLDER = "[secret placeholder]";

export interface StackFiles {
  project: string;
  /** Program entry from Pulumi.yaml's `main`, relative to the repository root. */
  main: string;
  /** Fully-qualified config, as Pulumi hands it to a program: every value a string. */
  config: Record<string, string>;
  secretKeys: string[];
}

/** Fails with exit code 2 (program or config failure), naming the file and the key. */
export class PlanInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PlanInputError";
  }
}

/** Reads Pulumi.yaml and Pulumi.<stack>.yaml the way the Pulumi CLI does, without the CLI. */
export function readStackFiles(root: string, stack: string): StackFiles {
  const projectFile = path.join(root, "Pulumi.yaml");
  const project = readYaml(projectFile) as { name?: unknown; main?: unknown } | null;
  if (!project || typeof project.name !== "string") throw new PlanInputError(`${projectFile}: "name" is required`);
  const stackFile = path.join(root, `Pulumi.${stack}.yaml`);
  if (!fs.existsSync(stackFile)) {
    const known = fs.readdirSync(root).flatMap((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1] ?? []);
    throw new PlanInputError(`no stack "${stack}": ${path.basename(stackFile)} does not exist (stacks: ${known.join(", ") || "none"})`);
  }
  const doc = (readYaml(stackFile) ?? {}) as { config?: Record<string, unknown> };
  const config: Record<string, string> = {};
  const secretKeys: string[] = [];
  for (const [rawKey, value] of Object.entries(doc.config ?? {})) {
    // An unqualified key belongs to the project, as in the CLI.
    const key = rawKey.includes(":") ? rawKey : `${project.name}:${rawKey}`;
    if (isSecure(value)) {
      config[key] = SECRET_PLACEHOLDER;
      secretKeys.push(key);
    } else {
      config[key] = typeof value === "string" ? value : JSON.stringify(value);
    }
  }
  return { project: project.name, main: typeof project.main === "string" ? project.main : "index.ts", config, secretKeys };
}

/** `--program` takes any TypeScript program inside the checkout (`root`), and nothing outside it. */
export function resolveProgram(root: string, file: string): string {
  const abs = path.resolve(process.cwd(), file);
  if (!fs.existsSync(abs)) throw new PlanInputError(`--program ${file}: no such file`);
  const real = fs.realpathSync(abs);
  const rel = path.relative(fs.realpathSync(root), real);
  if (rel.startsWith("..") || path.isAbsolute(rel)) throw new PlanInputError(`--program ${file}: must be inside the checkout (${root})`);
  if (!/\.(ts|mts|cts)$/.test(real)) throw new PlanInputError(`--program ${file}: must be a TypeScript file`);
  return real;
}

function isSecure(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 1 && "secure" in value;
}

function readYaml(file: string): unknown {
  try {
    return parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    throw new PlanInputError(`${file}: ${(err as Error).message}`);
  }
}
