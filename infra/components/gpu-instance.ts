import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { Statement } from "../iam/document";
import { declareInstanceRole, HARDENED_METADATA } from "./hardened-instance";
import { ENVIRONMENT_TAG } from "../../policy/contract";
import { INSTANCE_TYPE_PATTERN } from "../../functions/shared/patterns";

export interface GpuInstanceArgs {
  /** EC2 instance type, e.g. `g5.xlarge`. */
  instanceType: string;
  /** Private subnet to launch into. */
  subnetId: pulumi.Input<string>;
  /** Security groups of the instance. */
  securityGroupIds: pulumi.Input<string>[];
  /**
   * The AMI: an id (`ami-…`), or an SSM parameter (public or the account's own) read with an invoke
   * at deploy time (resolveAmi).
   * @default "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
   */
  ami?: string;
  /**
   * Cloud-init user data (plain text) that boots the instance ready to serve. A change replaces the
   * instance (see declareInstance).
   * @default undefined (none)
   */
  userData?: pulumi.Input<string>;
  /**
   * The role's own statements beside Session Manager's (what the instance's services call), as the
   * `<name>-host` RolePolicy.
   * @default [] (no such policy)
   */
  statements?: Statement[];
  /**
   * Value of the `Name` tag; the auto-starter's tag scan and its StartInstances grant find the
   * instance by it. No default: two GPUs in one account must not share it (infra/stack-scope.ts).
   */
  nameTag: string;
  /**
   * Value of the `encache:environment` tag on the instance and its volumes, set here whatever
   * `tags` holds: StartInstances and StopInstances are granted on the Name tag AND this one, so the
   * grants find this stack's GPU only (and a GPU without it could not be started).
   */
  environment: string;
  /**
   * SSM parameter that publishes the instance id to the functions. No default: SSM names are
   * unique per account and region, so each stack needs its own.
   */
  instanceIdParameter: string;
  /**
   * Size of the encrypted gp3 root volume, in GiB.
   * @default 100
   */
  rootVolumeGiB?: number;
  /**
   * Refuse API termination (prod).
   * @default false
   */
  deletionProtection?: boolean;
  /**
   * Tags for every child.
   * @default {}
   */
  tags?: Record<string, string>;
}

export const gpuInstanceDefaults = {
  ami: "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
  rootVolumeGiB: 100,
  deletionProtection: false,
} as const;

/**
 * The AMI id, resolved at deploy time: an id as given, a parameter read with an invoke (public or
 * the account's own). Not `resolve:ssm:` at launch: the plan then shows a new AMI as a diff, and
 * Auto Scaling can roll an instance refresh back (it cannot when the template reads the AMI from
 * SSM at launch).
 */
export function resolveAmi(ami: string, parent: pulumi.Resource): pulumi.Input<string> {
  return ami.startsWith("ami-") ? ami : aws.ssm.getParameterOutput({ name: ami }, { parent }).value;
}

/** Families with NVIDIA GPUs or AWS ML accelerators; anything else can't run the GPU service. */
const ACCELERATED_FAMILY = /^(g[3-9][a-z]*|p[2-6][a-z]*|inf[12]|trn[12][a-z]*|dl[12][a-z]*)\./;

/** Fills defaults and checks the instance type is a well-formed accelerated type. Pure. */
export function resolveGpuInstanceArgs(
  args: Pick<GpuInstanceArgs, "instanceType" | "ami" | "nameTag" | "instanceIdParameter" | "rootVolumeGiB" | "deletionProtection">,
) {
  const r = {
    ...gpuInstanceDefaults,
    ...Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
  } as typeof gpuInstanceDefaults & { instanceType: string; nameTag: string; instanceIdParameter: string };
  const errors: string[] = [];
  if (!INSTANCE_TYPE_PATTERN.test(r.instanceType)) errors.push(`instanceType "${r.instanceType}" is not an EC2 instance type`);
  else if (!ACCELERATED_FAMILY.test(r.instanceType)) errors.push(`instanceType "${r.instanceType}" has no GPU or ML accelerator`);
  if (!r.instanceIdParameter.startsWith("/")) errors.push("instanceIdParameter must be an absolute SSM path");
  if (!Number.isInteger(r.rootVolumeGiB) || r.rootVolumeGiB < 30) errors.push("rootVolumeGiB must be an integer ≥ 30");
  if (r.nameTag.length === 0) errors.push("nameTag must not be empty");
  if (!/^(ami-[0-9a-f]{8,17}|\/.+)$/.test(r.ami)) errors.push(`ami "${r.ami}" is neither an AMI id nor an absolute SSM parameter name`);
  if (errors.length > 0) throw new Error(`GpuInstance: ${errors.join("; ")}`);
  return r;
}

/**
 * The GPU worker: private subnet, no public IP, IMDSv2 only, encrypted gp3 root, reachable by
 * SSM Session Manager (no key pair), and an SSM parameter that publishes its id.
 *
 * Its run state belongs to the platform, not to Pulumi: the DLQ consumer starts it and it is
 * stopped when idle. So this component declares no `aws.ec2.InstanceState`. What it boots is the
 * program's: the user data (the gateway, the model) and the AMI, resolved at deploy time, so a new
 * AMI or a new user data is a visible diff that replaces the instance (a new one boots ready; the
 * id parameter follows it).
 */
export class GpuInstance extends pulumi.ComponentResource {
  readonly instance: aws.ec2.Instance;
  readonly instanceIdParameter: aws.ssm.Parameter;
  readonly role: aws.iam.Role;

  private readonly tags: Record<string, string>;
  private readonly settings: ReturnType<typeof resolveGpuInstanceArgs>;

  constructor(
    private readonly name: string,
    private readonly args: GpuInstanceArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("encache:compute:GpuInstance", name, {}, opts);
    this.settings = resolveGpuInstanceArgs(args);
    this.tags = args.tags ?? {};

    // `<name>-role`, `-session-manager`, `-host` (the gateway, the image pulls, the log driver) and `-profile`.
    const { role, profile } = declareInstanceRole(name, { parent: this, tags: this.tags, ...(args.statements ? { statements: args.statements } : {}) });
    this.role = role;
    this.instance = this.declareInstance(profile);
    this.instanceIdParameter = this.declareInstanceIdParameter();

    this.registerOutputs({ instanceId: this.instance.id, instanceIdParameterName: this.instanceIdParameter.name });
  }

  /**
   * `<name>`: the instance, private, IMDSv2 only, on an encrypted gp3 root, its AMI resolved at deploy.
   *
   * A user-data change replaces the instance (`userDataReplaceOnChange`), delete before create. The
   * provider's default, stop, modify and start, would boot the same instance id, and cloud-init runs
   * its per-instance modules (write_files, runcmd) once per instance id: the new gateway environment
   * and units would never be written. Deleted first, since two instances with the same Name tag
   * would confuse the auto-starter's tag scan; dev's GPU is down for the replacement, which is the
   * deploy's own time.
   */
  private declareInstance(profile: aws.iam.InstanceProfile): aws.ec2.Instance {
    const { args, settings: r, tags } = this;
    return new aws.ec2.Instance(
      this.name,
      {
        instanceType: r.instanceType,
        ami: resolveAmi(r.ami, this),
        ...(args.userData !== undefined ? { userData: args.userData, userDataReplaceOnChange: true } : {}),
        subnetId: args.subnetId,
        vpcSecurityGroupIds: args.securityGroupIds,
        associatePublicIpAddress: false,
        iamInstanceProfile: profile.name,
        metadataOptions: { ...HARDENED_METADATA },
        rootBlockDevice: { volumeType: "gp3", volumeSize: r.rootVolumeGiB, encrypted: true, deleteOnTermination: true },
        disableApiTermination: r.deletionProtection,
        monitoring: true,
        tags: { ...tags, [ENVIRONMENT_TAG]: args.environment, Name: r.nameTag },
        volumeTags: { ...tags, [ENVIRONMENT_TAG]: args.environment, Name: r.nameTag },
      },
      // protect: the provider turns termination protection off before it deletes, so `disableApiTermination`
      // alone does not stop a `--replace`, a subnet change or `destroy` from terminating the GPU and its volume.
      { parent: this, protect: r.deletionProtection, deleteBeforeReplace: true },
    );
  }

  /** `<name>-instance-id`: the SSM parameter that publishes the instance's id. */
  private declareInstanceIdParameter(): aws.ssm.Parameter {
    const r = this.settings;
    return new aws.ssm.Parameter(
      `${this.name}-instance-id`,
      {
        name: r.instanceIdParameter,
        type: "String",
        value: this.instance.id,
        description: `Id of the ${r.nameTag} instance; the ingest functions read it (the sentinel "none" means: find it by tag).`,
        tags: this.tags,
      },
      { parent: this },
    );
  }
}
