import { HARDENING_WAIVED_LABEL } from "../../policy/contract";

/**
 * Container hardening, written once for every task definition of the platform (the strategy task's
 * FargateTaskDefinition and the queue worker's): a read-only root with a scratch volume, a non-root
 * user, every Linux capability dropped, and a label naming whatever a stack turned off.
 */

export interface ContainerHardening {
  /** @default true */
  readOnlyRootFilesystem?: boolean;
  /** The user (and group) the container runs as; `null` leaves the image's own. @default "1000:1000" */
  user?: string | null;
  /** @default true */
  dropAllCapabilities?: boolean;
  /** Where the writable scratch volume is mounted when the root filesystem is read-only. @default "/tmp" */
  scratchPath?: string;
  /** Run an init process (reaps orphans, forwards SIGTERM). @default false */
  initProcess?: boolean;
}

export const containerHardeningDefaults = { readOnlyRootFilesystem: true, user: "1000:1000", dropAllCapabilities: true, scratchPath: "/tmp" } as const;

/** The task-scoped volume a read-only root filesystem writes to. */
export const SCRATCH_VOLUME = "scratch";

/**
 * The container-definition fields of a hardening, and the label naming what is waived. Pure.
 * A root user (`0`, `root`) or the image's own (`null`) counts as waived.
 */
export function hardenedContainerFields(h: ContainerHardening = {}): Record<string, unknown> {
  const r = { ...containerHardeningDefaults, ...Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) } as {
    readOnlyRootFilesystem: boolean;
    user: string | null;
    dropAllCapabilities: boolean;
    scratchPath: string;
    initProcess?: boolean;
  };
  const linuxParameters = {
    ...(r.initProcess ? { initProcessEnabled: true } : {}),
    ...(r.dropAllCapabilities ? { capabilities: { add: [], drop: ["ALL"] } } : {}),
  };
  const rootUser = r.user === null || /^(0|root)(:|$)/.test(r.user);
  const waived = [
    ...(r.readOnlyRootFilesystem ? [] : ["readonlyRootFilesystem"]),
    ...(rootUser ? ["user"] : []),
    ...(r.dropAllCapabilities ? [] : ["capabilities"]),
  ];
  return {
    readonlyRootFilesystem: r.readOnlyRootFilesystem,
    ...(r.user !== null ? { user: r.user } : {}),
    ...(Object.keys(linuxParameters).length > 0 ? { linuxParameters } : {}),
    ...(r.readOnlyRootFilesystem ? { mountPoints: [{ sourceVolume: SCRATCH_VOLUME, containerPath: r.scratchPath, readOnly: false }] } : {}),
    ...(waived.length > 0 ? { dockerLabels: { [HARDENING_WAIVED_LABEL]: waived.join(",") } } : {}),
  };
}
