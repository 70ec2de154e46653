/**
 * The ESC environments (esc/encache-<stack>.yaml, docs/deploy.md "Credentials from Pulumi ESC"): one
 * per stack, each held to ESC's documented schema. Top-level keys are `imports` and `values` only
 * (ESC syntax, "Top-level keys"); `fn::open::aws-login` takes `oidc` or `static`, and `oidc` takes
 * `roleArn` and `sessionName` (required), `duration`, `policyArns`, `subjectAttributes` (ESC
 * providers, "aws-login"); the AWS credentials reach the CLI as `environmentVariables` from the
 * login's outputs; `pulumiConfig` sets only keys the stack reads, agreeing with its stack file.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";

const DIR = path.join(REPO_ROOT, "esc");
const LOGIN = "fn::open::aws-login";
const OIDC_KEYS = ["roleArn", "sessionName", "duration", "policyArns", "subjectAttributes"];
/** The variables the AWS provider and SDKs read, each from the login output of the same meaning. */
const CREDENTIALS: Record<string, string> = {
  AWS_ACCESS_KEY_ID: "accessKeyId",
  AWS_SECRET_ACCESS_KEY: "secretAccessKey",
  AWS_SESSION_TOKEN: "sessionToken",
};
/** An IAM role ARN in the commercial partition: a 12-digit account and a role name (with its path). */
const ROLE_ARN = /^arn:aws:iam::(\d{12}):role\/[\w+=,.@/-]{1,512}$/;
/** AWS RoleSessionName: 2 to 64 of [\w+=,.@-]; an ESC interpolation counts as one such character. */
const SESSION_NAME = /^[\w+=,.@-]{2,64}$/;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Doc = { [key: string]: Json };

const isObject = (v: Json | undefined): v is Doc => typeof v === "object" && v !== null && !Array.isArray(v);

/** The stack file's config (Pulumi.<stack>.yaml). */
function stackConfig(stack: string): Doc {
  const file = parse(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as Doc;
  return isObject(file.config) ? file.config : {};
}

/** The stacks with a stack file in the repository. */
function stacks(): string[] {
  return fs
    .readdirSync(REPO_ROOT)
    .map((f) => /^Pulumi\.([a-z][a-z0-9-]*)\.yaml$/.exec(f)?.[1])
    .filter((s): s is string => s !== undefined)
    .sort();
}

/** Seconds of an ESC/Go duration (`1h`, `45m`, `1h30m`), or undefined when it is not one. */
export function durationSeconds(text: string): number | undefined {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === "") return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

/** Every `fn::open::aws-login` under `values`, with the dotted path ESC's `${…}` names it by. */
function logins(values: Json, at: string[] = []): { path: string; input: Json }[] {
  if (!isObject(values)) return [];
  return Object.entries(values).flatMap(([k, v]) => (k === LOGIN ? [{ path: at.join("."), input: v }] : logins(v, [...at, k])));
}

/** Why `doc` is not a valid ESC environment for the stack whose config is `config`; empty when it is. */
export function escProblems(doc: Doc, config: Doc): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(doc)) if (!["imports", "values"].includes(key)) problems.push(`top-level key ${key}: ESC has only imports and values`);
  if (doc.imports !== undefined && !(Array.isArray(doc.imports) && doc.imports.every((i) => typeof i === "string" || isObject(i))))
    problems.push("imports is not a list of environment names");
  const values = doc.values;
  if (!isObject(values)) return [...problems, "no values"];

  const found = logins(values);
  if (found.length !== 1) problems.push(`${found.length} ${LOGIN} blocks, want one`);
  const login = found[0];
  if (login) {
    const input = login.input;
    const keys = isObject(input) ? Object.keys(input) : [];
    if (!isObject(input) || keys.some((k) => !["oidc", "static"].includes(k))) problems.push(`${LOGIN} takes oidc or static, got ${keys.join(", ")}`);
    const oidc = isObject(input) ? input.oidc : undefined;
    if (!isObject(oidc)) problems.push(`${LOGIN}: no oidc (short-lived credentials, no stored keys)`);
    else {
      for (const k of Object.keys(oidc)) if (!OIDC_KEYS.includes(k)) problems.push(`oidc.${k} is not an input of aws-login`);
      const arn = typeof oidc.roleArn === "string" ? ROLE_ARN.exec(oidc.roleArn) : null;
      if (!arn) problems.push(`oidc.roleArn ${JSON.stringify(oidc.roleArn)} is not arn:aws:iam::<12-digit account>:role/<name>`);
      const allowed = Array.isArray(config["aws:allowedAccountIds"]) ? config["aws:allowedAccountIds"].map(String) : [];
      if (arn && !allowed.includes(arn[1]!))
        problems.push(`oidc.roleArn's account ${arn[1]} is not one of the stack's aws:allowedAccountIds (${allowed.join(", ")})`);
      const session = typeof oidc.sessionName === "string" ? oidc.sessionName.replace(/\$\{[^}]*\}/g, "x") : "";
      if (!SESSION_NAME.test(session)) problems.push(`oidc.sessionName ${JSON.stringify(oidc.sessionName)} is not a role session name`);
      if (oidc.duration !== undefined) {
        const seconds = typeof oidc.duration === "string" ? durationSeconds(oidc.duration) : undefined;
        if (seconds === undefined) problems.push(`oidc.duration ${JSON.stringify(oidc.duration)} is not a duration like 1h or 45m`);
        // AWS: at least 15 minutes; a role's MaxSessionDuration defaults to 1 hour, 12 hours at most.
        else if (seconds < 900 || seconds > 3600) problems.push(`oidc.duration ${oidc.duration} is outside 15m..1h (the role's default maximum)`);
      }
    }
  }

  const env = values.environmentVariables;
  for (const [name, output] of Object.entries(CREDENTIALS)) {
    const want = `\${${login?.path ?? "aws.login"}.${output}}`;
    if (!isObject(env) || env[name] !== want) problems.push(`environmentVariables.${name} is not ${want}`);
  }

  const pulumiConfig = values.pulumiConfig;
  if (!isObject(pulumiConfig)) problems.push("no pulumiConfig");
  else
    for (const [key, value] of Object.entries(pulumiConfig)) {
      if (!/^[a-zA-Z][\w-]*:[a-zA-Z][\w.-]*$/.test(key)) problems.push(`pulumiConfig.${key} is not namespaced (<namespace>:<key>)`);
      else if (!(key in config)) problems.push(`pulumiConfig.${key} is not a key the stack reads`);
      else if (JSON.stringify(value) !== JSON.stringify(config[key])) problems.push(`pulumiConfig.${key} disagrees with the stack file`);
    }
  return problems;
}

const read = (stack: string) => parse(fs.readFileSync(path.join(DIR, `encache-${stack}.yaml`), "utf8")) as Doc;

describe("ESC environments (esc/)", () => {
  it("are exactly one environment per stack file", () => {
    // Prepare
    const want = stacks().map((s) => `encache-${s}.yaml`);
    // Act
    const files = fs.readdirSync(DIR).sort();
    // Assess
    expect(want).to.include.members(["encache-dev.yaml", "encache-prod.yaml"]);
    expect(files).to.deep.equal(want);
  });

  for (const stack of ["dev", "prod"]) {
    it(`encache-${stack}: ESC's schema, an OIDC aws-login into ${stack}'s account, its credentials as environment variables, ${stack}'s config keys`, () => {
      // Prepare
      const doc = read(stack);
      // Act
      const problems = escProblems(doc, stackConfig(stack));
      // Assess
      expect(problems).to.deep.equal([]);
    });
  }

  it("the stack files import no environment: the local tools (plan, local run) read them without ESC", () => {
    for (const stack of stacks()) {
      // Act
      const file = parse(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as Doc;
      // Assess
      expect(file, stack).to.not.have.property("environment");
    }
  });

  describe("durations", () => {
    const cases: { text: string; seconds: number | undefined }[] = [
      { text: "1h", seconds: 3600 },
      { text: "45m", seconds: 2700 },
      { text: "1h30m", seconds: 5400 },
      { text: "900s", seconds: 900 },
      { text: "", seconds: undefined },
      { text: "1 hour", seconds: undefined },
      { text: "3600", seconds: undefined },
      { text: "PT1H", seconds: undefined },
    ];
    for (const { text, seconds } of cases) {
      it(`${JSON.stringify(text)} is ${seconds === undefined ? "not a duration" : `${seconds} s`}`, () => {
        expect(durationSeconds(text)).to.equal(seconds);
      });
    }
  });

  // The check itself can fail: each mutation of a good environment is one way a real one goes wrong.
  describe("the check refuses", () => {
    const oidc = (d: Doc) => ((((d.values as Doc).aws as Doc).login as Doc)[LOGIN] as Doc).oidc as Doc;
    const values = (d: Doc) => d.values as Doc;
    const mutations: { name: string; mutate: (d: Doc) => void; problem: RegExp }[] = [
      { name: "a top-level key ESC does not have", mutate: (d) => void (d.environmentVariables = {}), problem: /top-level key environmentVariables/ },
      { name: "imports that are not a list", mutate: (d) => void (d.imports = "encache/common"), problem: /imports/ },
      { name: "no roleArn", mutate: (d) => void delete oidc(d).roleArn, problem: /roleArn/ },
      { name: "a role ARN without a 12-digit account", mutate: (d) => void (oidc(d).roleArn = "arn:aws:iam::1234:role/r"), problem: /roleArn/ },
      { name: "a user ARN", mutate: (d) => void (oidc(d).roleArn = "arn:aws:iam::123456789012:user/u"), problem: /roleArn/ },
      {
        name: "a role in an account the stack may not deploy to",
        mutate: (d) => void (oidc(d).roleArn = "arn:aws:iam::210987654321:role/encache-esc-dev"),
        problem: /allowedAccountIds/,
      },
      { name: "no sessionName", mutate: (d) => void delete oidc(d).sessionName, problem: /sessionName/ },
      { name: "a session name with a space", mutate: (d) => void (oidc(d).sessionName = "encache dev"), problem: /sessionName/ },
      { name: "a duration in seconds without a unit", mutate: (d) => void (oidc(d).duration = "3600"), problem: /duration/ },
      { name: "a duration past the role's default maximum", mutate: (d) => void (oidc(d).duration = "2h"), problem: /outside/ },
      { name: "an input aws-login does not take", mutate: (d) => void (oidc(d).region = "us-east-1"), problem: /oidc\.region/ },
      { name: "static keys instead of OIDC", mutate: (d) => void ((d.values as Doc).aws = { login: { [LOGIN]: { static: {} } } }), problem: /no oidc/ },
      {
        name: "a credential from the wrong output",
        mutate: (d) => void ((values(d).environmentVariables as Doc).AWS_SESSION_TOKEN = "${aws.login.accessKeyId}"),
        problem: /AWS_SESSION_TOKEN/,
      },
      { name: "no session token", mutate: (d) => void delete (values(d).environmentVariables as Doc).AWS_SESSION_TOKEN, problem: /AWS_SESSION_TOKEN/ },
      { name: "no pulumiConfig", mutate: (d) => void delete values(d).pulumiConfig, problem: /no pulumiConfig/ },
      { name: "a config key without its namespace", mutate: (d) => void ((values(d).pulumiConfig as Doc).region = "us-east-1"), problem: /not namespaced/ },
      {
        name: "a config key the stack does not read",
        mutate: (d) => void ((values(d).pulumiConfig as Doc)["encache:nonesuch"] = 1),
        problem: /encache:nonesuch is not a key the stack reads/,
      },
      { name: "a region other than the stack file's", mutate: (d) => void ((values(d).pulumiConfig as Doc)["aws:region"] = "eu-west-1"), problem: /disagrees/ },
    ];
    for (const { name, mutate, problem } of mutations) {
      it(name, () => {
        // Prepare
        const doc = structuredClone(read("dev"));
        mutate(doc);
        // Act
        const problems = escProblems(doc, stackConfig("dev"));
        // Assess
        expect(problems.join("\n")).to.match(problem);
      });
    }
  });
});
