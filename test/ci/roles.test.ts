/**
 * The CI roles (ci/aws): documents that live outside the program and that an administrator applies
 * once per account. Each trust policy admits exactly one GitHub OIDC subject of this repository
 * (StringEquals on `aud` and `sub`, no wildcard); the preview roles, which run a pull request's own
 * code, may only read, and read what the program looks up on a preview; the drift roles, which
 * refresh every deployed resource, may only read (Describe/Get/List) the services the stack's
 * deploy role manages.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { REPO_ROOT } from "../../infra/bundle";
import { DEFAULT_GPU_AMI } from "../../infra/parts/ingest.config";

const DIR = path.join(REPO_ROOT, "ci/aws");
const OIDC = "token.actions.githubusercontent.com";
const PLACEHOLDERS = ["AWS_ACCOUNT_ID", "AWS_REGION", "GITHUB_REPOSITORY"];

interface Statement {
  Sid?: string;
  Effect: string;
  Principal?: { Federated?: string };
  Action?: string | string[];
  NotAction?: unknown;
  Resource?: string | string[];
  NotResource?: unknown;
  Condition?: Record<string, Record<string, string | string[]>>;
}
interface PolicyDocument {
  Version: string;
  Statement: Statement[];
}

const read = (file: string) => JSON.parse(fs.readFileSync(path.join(DIR, file), "utf8")) as PolicyDocument;
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const clone = (d: PolicyDocument) => structuredClone(d);

/** Why `doc` is not a trust policy for exactly `repo:${GITHUB_REPOSITORY}:<subject>`; empty when it is. */
export function trustProblems(doc: PolicyDocument, subject: string): string[] {
  const problems: string[] = [];
  if (doc.Version !== "2012-10-17") problems.push(`Version ${doc.Version}`);
  if (doc.Statement.length !== 1) problems.push(`${doc.Statement.length} statements, want exactly one`);
  for (const s of doc.Statement) {
    if (s.Effect !== "Allow") problems.push(`Effect ${s.Effect}`);
    if (s.Principal?.Federated !== `arn:aws:iam::\${AWS_ACCOUNT_ID}:oidc-provider/${OIDC}`) problems.push(`Principal ${JSON.stringify(s.Principal)}`);
    if (JSON.stringify(list(s.Action)) !== JSON.stringify(["sts:AssumeRoleWithWebIdentity"])) problems.push(`Action ${JSON.stringify(s.Action)}`);
    const operators = Object.keys(s.Condition ?? {});
    if (JSON.stringify(operators) !== JSON.stringify(["StringEquals"]))
      problems.push(`condition operators ${operators.join(", ") || "none"}, want StringEquals only`);
    const eq = s.Condition?.StringEquals ?? {};
    if (JSON.stringify(Object.keys(eq).sort()) !== JSON.stringify([`${OIDC}:aud`, `${OIDC}:sub`]))
      problems.push(`StringEquals keys ${Object.keys(eq).join(", ")}`);
    if (JSON.stringify(eq[`${OIDC}:aud`]) !== JSON.stringify("sts.amazonaws.com")) problems.push(`aud ${JSON.stringify(eq[`${OIDC}:aud`])}`);
    const sub = eq[`${OIDC}:sub`];
    if (JSON.stringify(sub) !== JSON.stringify(`repo:\${GITHUB_REPOSITORY}:${subject}`))
      problems.push(`sub ${JSON.stringify(sub)}, want repo:\${GITHUB_REPOSITORY}:${subject}`);
    if (list(sub).some((v) => /[*?]/.test(v))) problems.push("sub has a wildcard");
  }
  return problems;
}

/**
 * Actions that read. Everything else (Put, Create, Delete, Update, Run, Start, Stop, Terminate,
 * Attach, Pass, Modify, Tag, Send, Invoke, …) is refused, and so is a wildcard, which would admit a
 * write added to the service later.
 */
const READ_VERB = /^(Get|Describe|List|BatchGet)[A-Z]/;
const WRITE_VERB =
  /^(Put|Create|Delete|Update|Run|Start|Stop|Terminate|Attach|Detach|Pass|Modify|Tag|Untag|Send|Invoke|Set|Associate|Disassociate|Add|Remove|Replace|Reboot|Import|Register|Deregister|Enable|Disable|Assume|Decrypt|Encrypt)/;

/** Why `doc` grants more than reads; empty when it grants only named read actions. */
export function readOnlyProblems(doc: PolicyDocument): string[] {
  const problems: string[] = [];
  for (const s of doc.Statement) {
    const where = s.Sid ?? JSON.stringify(s.Action);
    if (s.Effect !== "Allow") continue;
    if (s.NotAction !== undefined) problems.push(`${where}: NotAction grants everything not listed`);
    if (s.NotResource !== undefined) problems.push(`${where}: NotResource`);
    for (const action of list(s.Action)) {
      const [service, verb = ""] = action.split(":");
      if (action.includes("*") || action.includes("?")) problems.push(`${where}: wildcard action ${action}`);
      else if (!service || WRITE_VERB.test(verb) || !READ_VERB.test(verb)) problems.push(`${where}: ${action} is not a read`);
    }
  }
  return problems;
}

/** Whether `doc` allows `action`, on a resource matching `arn` when given (IAM globbing: `*` any run of characters). */
function allows(doc: PolicyDocument, action: string, arn?: string): boolean {
  const glob = (pattern: string) =>
    new RegExp(
      `^${pattern
        .split("*")
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*")}$`,
    );
  return doc.Statement.some(
    (s) => s.Effect === "Allow" && list(s.Action).includes(action) && (arn === undefined || list(s.Resource).some((r) => r === "*" || glob(r).test(arn))),
  );
}

/** The lookups (invokes) the program makes at preview time, and the IAM actions each needs. */
const INVOKE_ACTIONS: Record<string, string[]> = {
  getCallerIdentity: ["sts:GetCallerIdentity"],
  getAvailabilityZones: ["ec2:DescribeAvailabilityZones"],
  "ssm.getParameter": ["ssm:GetParameter"],
  // Answered from the provider's own configuration, without a call to AWS.
  getRegion: [],
  getPartition: [],
};

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

const ROLES = [
  { role: "preview-dev", subject: "pull_request" },
  { role: "preview-prod", subject: "pull_request" },
  { role: "deploy-dev", subject: "environment:dev" },
  { role: "deploy-prod", subject: "environment:prod" },
  { role: "drift-dev", subject: "environment:drift-dev" },
  { role: "drift-prod", subject: "environment:drift-prod" },
];

/**
 * Why `doc` grants more than a refresh's reads; empty when every action is a read: a named read
 * action, or a read verb's prefix (`Describe*`, `Get*`, `List*`, `BatchGet*`), which AWS names
 * only reads with. Regional services only in the stack's region, IAM only on the account's roles,
 * policies and instance profiles.
 */
export function driftProblems(doc: PolicyDocument): string[] {
  const problems: string[] = [];
  for (const s of doc.Statement) {
    const where = s.Sid ?? JSON.stringify(s.Action);
    if (s.Effect !== "Allow") continue;
    if (s.NotAction !== undefined) problems.push(`${where}: NotAction grants everything not listed`);
    if (s.NotResource !== undefined) problems.push(`${where}: NotResource`);
    const actions = list(s.Action);
    for (const action of actions) {
      const [service = "", verb = ""] = action.split(":");
      const prefix = /^(Describe|Get|List|BatchGet)\*$/.test(verb);
      if (!/^[a-z0-9-]+$/.test(service) || verb.includes("?") || (verb.includes("*") && !prefix)) problems.push(`${where}: wildcard action ${action}`);
      else if (!prefix && (WRITE_VERB.test(verb) || !READ_VERB.test(verb))) problems.push(`${where}: ${action} is not a read`);
      if (service === "kms") problems.push(`${where}: ${action}: no key use`);
    }
    const global = actions.every((a) => a.startsWith("iam:") || a === "sts:GetCallerIdentity");
    if (!global && s.Condition?.StringEquals?.["aws:RequestedRegion"] !== "${AWS_REGION}") problems.push(`${where}: not limited to the stack's region`);
    if (actions.some((a) => a.startsWith("iam:")))
      for (const r of list(s.Resource))
        if (!/^arn:aws:iam::\$\{AWS_ACCOUNT_ID\}:(role|policy|instance-profile)\/\*$/.test(r)) problems.push(`${where}: IAM on ${r}`);
  }
  return problems;
}

/** The services a permissions document grants any action of (`ec2` for `ec2:Describe*`). */
const services = (doc: PolicyDocument) => [...new Set(doc.Statement.flatMap((s) => list(s.Action).map((a) => a.split(":")[0]!)))].sort();

describe("CI roles (ci/aws)", () => {
  it("are exactly a trust and a permissions document for each stack's preview, deploy and drift role", () => {
    const want = ROLES.flatMap(({ role }) => [`${role}.permissions.json`, `${role}.trust.json`]).sort();
    expect(
      fs
        .readdirSync(DIR)
        .filter((f) => f.endsWith(".json"))
        .sort(),
    ).to.deep.equal(want);
  });

  it("name only the documented placeholders (the account, the region, owner/repo)", () => {
    for (const file of fs.readdirSync(DIR).filter((f) => f.endsWith(".json"))) {
      const used = [...fs.readFileSync(path.join(DIR, file), "utf8").matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1]!);
      expect(
        used.filter((p) => !PLACEHOLDERS.includes(p)),
        file,
      ).to.deep.equal([]);
    }
  });

  describe("trust", () => {
    for (const { role, subject } of ROLES) {
      it(`${role} admits only repo:<owner>/<repo>:${subject}, on GitHub's OIDC provider, for sts.amazonaws.com`, () => {
        expect(trustProblems(read(`${role}.trust.json`), subject)).to.deep.equal([]);
      });
    }

    // The check itself can fail: each mutation of a good document is one way a real one goes wrong.
    const good = read("deploy-prod.trust.json");
    const cond = (d: PolicyDocument) => d.Statement[0]!.Condition!;
    const mutations: { name: string; mutate: (d: PolicyDocument) => void; problem: RegExp }[] = [
      { name: "a wildcard subject", mutate: (d) => void (cond(d).StringEquals![`${OIDC}:sub`] = "repo:${GITHUB_REPOSITORY}:*"), problem: /wildcard/ },
      {
        name: "StringLike instead of StringEquals",
        mutate: (d) => void ((cond(d).StringLike = cond(d).StringEquals!), delete cond(d).StringEquals),
        problem: /StringEquals only/,
      },
      { name: "no audience", mutate: (d) => void delete cond(d).StringEquals![`${OIDC}:aud`], problem: /aud/ },
      {
        name: "another stack's environment",
        mutate: (d) => void (cond(d).StringEquals![`${OIDC}:sub`] = "repo:${GITHUB_REPOSITORY}:environment:dev"),
        problem: /sub/,
      },
      {
        name: "the pull_request subject on a deploy role",
        mutate: (d) => void (cond(d).StringEquals![`${OIDC}:sub`] = "repo:${GITHUB_REPOSITORY}:pull_request"),
        problem: /sub/,
      },
      { name: "a second statement", mutate: (d) => void d.Statement.push(d.Statement[0]!), problem: /exactly one/ },
      {
        name: "another identity provider",
        mutate: (d) => void (d.Statement[0]!.Principal = { Federated: "arn:aws:iam::${AWS_ACCOUNT_ID}:oidc-provider/example.com" }),
        problem: /Principal/,
      },
      { name: "AssumeRole instead of AssumeRoleWithWebIdentity", mutate: (d) => void (d.Statement[0]!.Action = "sts:AssumeRole"), problem: /Action/ },
    ];
    for (const { name, mutate, problem } of mutations) {
      it(`the check refuses ${name}`, () => {
        const doc = clone(good);
        mutate(doc);
        expect(trustProblems(doc, "environment:prod").join("\n")).to.match(problem);
      });
    }
  });

  describe("the preview roles' permissions", () => {
    for (const stack of ["dev", "prod"]) {
      it(`preview-${stack} allows reads only: named Get/Describe/List actions, no wildcard`, () => {
        expect(readOnlyProblems(read(`preview-${stack}.permissions.json`))).to.deep.equal([]);
      });
    }

    const good = read("preview-prod.permissions.json");
    const refused = [
      "ssm:PutParameter",
      "ec2:RunInstances",
      "ec2:StartInstances",
      "ec2:StopInstances",
      "ec2:TerminateInstances",
      "ec2:CreateTags",
      "iam:PassRole",
      "iam:AttachRolePolicy",
      "s3:DeleteObject",
      "dynamodb:UpdateItem",
      "kms:Decrypt",
      "ec2:*",
      "*",
      "ec2:Describe*",
    ];
    for (const action of refused) {
      it(`the check refuses ${action}`, () => {
        const doc = clone(good);
        doc.Statement.push({ Effect: "Allow", Action: [action], Resource: "*" });
        expect(readOnlyProblems(doc)).to.have.length(1);
      });
    }
    it("the check refuses NotAction", () => {
      const doc = clone(good);
      doc.Statement.push({ Effect: "Allow", NotAction: ["iam:*"], Resource: "*" });
      expect(readOnlyProblems(doc).join()).to.match(/NotAction/);
    });

    it("cover every lookup the program makes on a preview (infra/: aws.get…)", () => {
      const invokes = new Set<string>();
      for (const file of tsFiles(path.join(REPO_ROOT, "infra"))) {
        for (const m of fs.readFileSync(file, "utf8").matchAll(/\baws\.((?:[a-z0-9]+\.)?get[A-Z]\w*?)(?:Output)?\(/g)) invokes.add(m[1]!);
      }
      // Sanity: the scan sees the lookups the program is known to make.
      expect([...invokes]).to.include.members(["getCallerIdentity", "getAvailabilityZones", "ssm.getParameter"]);
      const unknown = [...invokes].filter((i) => !(i in INVOKE_ACTIONS));
      expect(unknown, "a new lookup: add its IAM actions to INVOKE_ACTIONS and to ci/aws/preview-*.permissions.json").to.deep.equal([]);
      for (const stack of ["dev", "prod"]) {
        const doc = read(`preview-${stack}.permissions.json`);
        for (const action of [...invokes].flatMap((i) => INVOKE_ACTIONS[i]!)) expect(allows(doc, action), `preview-${stack}: ${action}`).to.equal(true);
      }
    });

    it("may read each stack's GPU AMI parameter (the default or the stack's own), in the stack's region", () => {
      for (const stack of ["dev", "prod"]) {
        const config = (
          parse(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as { config: Record<string, { ami?: string; amiParameter?: string }> }
        ).config;
        const parameter = config["encache:gpu"]?.ami ?? config["encache:gpu"]?.amiParameter ?? DEFAULT_GPU_AMI;
        // An AMI id is read by nobody at deploy time; a parameter (public or the account's own) is.
        if (parameter.startsWith("ami-")) continue;
        // The document's region is a placeholder filled per stack, so the ARN is matched with it.
        const arn = `arn:aws:ssm:\${AWS_REGION}::parameter${parameter}`;
        expect(allows(read(`preview-${stack}.permissions.json`), "ssm:GetParameter", arn), `${stack}: ${arn}`).to.equal(true);
        expect(
          allows(
            read(`preview-${stack}.permissions.json`),
            "ssm:GetParameter",
            "arn:aws:ssm:${AWS_REGION}:${AWS_ACCOUNT_ID}:parameter/encache/prod/gpu/instance_id",
          ),
          "the stack's own parameters stay out of reach",
        ).to.equal(false);
      }
    });
  });

  describe("the deploy roles' permissions", () => {
    for (const stack of ["dev", "prod"]) {
      it(`deploy-${stack}: regional services only in the stack's region, IAM only in the account, never Action "*"`, () => {
        const doc = read(`deploy-${stack}.permissions.json`);
        for (const s of doc.Statement) {
          const actions = list(s.Action);
          expect(actions, s.Sid).to.not.include("*");
          const global = actions.every((a) => a.startsWith("iam:") || a === "sts:GetCallerIdentity");
          if (!global) expect(s.Condition?.StringEquals?.["aws:RequestedRegion"], s.Sid).to.equal("${AWS_REGION}");
          if (actions.some((a) => a.startsWith("iam:"))) {
            for (const r of list(s.Resource)) expect(r, s.Sid).to.match(/^arn:aws:iam::\$\{AWS_ACCOUNT_ID\}:(role|policy|instance-profile)\/\*$/);
          }
        }
      });
    }
  });

  describe("the drift roles' permissions", () => {
    for (const stack of ["dev", "prod"]) {
      it(`drift-${stack} reads only (Describe/Get/List), regional services in the stack's region, IAM in the account`, () => {
        expect(driftProblems(read(`drift-${stack}.permissions.json`))).to.deep.equal([]);
      });

      it(`drift-${stack} reads every service deploy-${stack} manages, so a refresh can read each deployed resource`, () => {
        // Prepare
        const deploy = services(read(`deploy-${stack}.permissions.json`));
        // Act
        const drift = services(read(`drift-${stack}.permissions.json`));
        // Assess
        expect(deploy, "sanity: the deploy role's services").to.include.members(["ec2", "iam", "lambda", "sqs"]);
        expect(drift).to.deep.equal(deploy);
        const granted = read(`drift-${stack}.permissions.json`).Statement.flatMap((s) => list(s.Action));
        for (const service of deploy.filter((s) => s !== "sts"))
          expect(granted, `${stack}: ${service}`).to.include.members(
            [`${service}:Describe*`, `${service}:Get*`, `${service}:List*`].slice(service === "iam" ? 1 : 0),
          );
      });
    }

    // The check itself can fail: each addition is one way a drift role could change the account.
    const good = read("drift-prod.permissions.json");
    const refused: { name: string; statement: Statement; problem: RegExp }[] = [
      { name: "a service wildcard", statement: { Effect: "Allow", Action: ["ec2:*"], Resource: "*" }, problem: /wildcard/ },
      { name: "Action *", statement: { Effect: "Allow", Action: ["*"], Resource: "*" }, problem: /wildcard/ },
      { name: "a write verb's prefix", statement: { Effect: "Allow", Action: ["ec2:Create*"], Resource: "*" }, problem: /wildcard/ },
      { name: "a named write", statement: { Effect: "Allow", Action: ["sqs:SendMessage"], Resource: "*" }, problem: /not a read/ },
      {
        name: "a receive (it hides the message from the consumers)",
        statement: { Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: "*" },
        problem: /not a read/,
      },
      {
        name: "iam:PassRole",
        statement: { Effect: "Allow", Action: ["iam:PassRole"], Resource: "arn:aws:iam::${AWS_ACCOUNT_ID}:role/*" },
        problem: /not a read/,
      },
      { name: "kms:Decrypt", statement: { Effect: "Allow", Action: ["kms:Decrypt"], Resource: "*" }, problem: /not a read/ },
      { name: "a read outside the stack's region", statement: { Effect: "Allow", Action: ["ec2:Describe*"], Resource: "*" }, problem: /region/ },
      { name: "IAM reads on every account", statement: { Effect: "Allow", Action: ["iam:Get*"], Resource: "*" }, problem: /IAM on \*/ },
      { name: "NotAction", statement: { Effect: "Allow", NotAction: ["iam:*"], Resource: "*" }, problem: /NotAction/ },
    ];
    for (const { name, statement, problem } of refused) {
      it(`the check refuses ${name}`, () => {
        // Prepare
        const doc = clone(good);
        doc.Statement.push(statement);
        // Act
        const problems = driftProblems(doc);
        // Assess
        expect(problems.join("\n")).to.match(problem);
      });
    }
  });
});
