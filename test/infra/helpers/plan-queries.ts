import type { PlanDocument } from "../../../plan/render";

/** Lookups the mocks tests make on a `--json` plan document. */
export type PlanResource = PlanDocument["resources"][number];

export const ofType = (doc: PlanDocument, type: string): PlanResource[] => doc.resources.filter((r) => r.type === type);

/** The one resource of `type` with logical name `name`; throws so a renamed resource fails loudly. */
export function named(doc: PlanDocument, type: string, name: string): PlanResource {
  const r = doc.resources.find((x) => x.type === type && x.name === name);
  if (!r) throw new Error(`no ${type} named ${name}`);
  return r;
}
