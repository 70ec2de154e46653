import * as pulumi from "@pulumi/pulumi";
import { DECLARED_DOCUMENT_TYPE, type DeclaredDocumentProps } from "../../policy/contract";

/**
 * A JSON document the policy pack must judge on a first preview, declared beside the resource
 * that takes it (policy/contract/declarations.ts says why). It creates nothing in AWS.
 */
export class DeclaredDocument extends pulumi.ComponentResource {
  constructor(name: string, args: { [K in keyof DeclaredDocumentProps]: pulumi.Input<DeclaredDocumentProps[K]> }, opts?: pulumi.ComponentResourceOptions) {
    super(DECLARED_DOCUMENT_TYPE, name, args, opts);
    // Its outputs are its inputs: the engine hands stack policies a component's registered outputs.
    this.registerOutputs(args);
  }
}

/**
 * Declares `document` as input `property` of the resource `resource` (of type `resourceType`)
 * that the caller is about to create under `parent`, and returns the document to give it.
 */
export function declare<T>(document: T, target: { resource: string; resourceType: string; property: string; parent: pulumi.Resource }): T {
  new DeclaredDocument(
    `${target.resource}-declared`,
    { resource: target.resource, resourceType: target.resourceType, property: target.property, document: document as pulumi.Input<unknown> },
    { parent: target.parent },
  );
  return document;
}
