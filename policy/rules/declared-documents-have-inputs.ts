import type { ResourceValidationPolicy } from "@pulumi/policy";
import { DECLARED_DOCUMENT_TYPE } from "../contract";
import { isUnknown } from "../lib/documents";

const FIELDS = ["resource", "resourceType", "property", "document"] as const;

/**
 * Resource rules judge a declaration from the DeclaredDocument component's inputs. With
 * PULUMI_NODEJS_SKIP_COMPONENT_INPUTS set, the Node.js SDK registers every local component with `{}`
 * as its inputs (@pulumi/pulumi resource.js, ComponentResource), and every rule that judges a
 * declaration then finds nothing to judge and says nothing. Fail closed instead.
 */
export const declaredDocumentsHaveInputs: ResourceValidationPolicy = {
  name: "declared-documents-have-inputs",
  description:
    "Each DeclaredDocument reaches the pack with its inputs (resource, resourceType, property, document), so the resource rules can judge what it declares.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== DECLARED_DOCUMENT_TYPE) args.notApplicable(`applies to ${DECLARED_DOCUMENT_TYPE}`);
    // An unknown leaf is still an input (the document of a first preview); only a missing one is not.
    const missing = FIELDS.filter((f) => !isUnknown(() => args.props[f]) && (args.props[f] === undefined || args.props[f] === null));
    if (missing.length > 0) {
      reportViolation(
        `DeclaredDocument '${args.name}' reached the pack without ${missing.join(", ")}, so no resource rule judges the document it declares. ` +
          "Is PULUMI_NODEJS_SKIP_COMPONENT_INPUTS set? Unset it: the Node.js SDK then sends no inputs for local components.",
      );
    }
  },
};
