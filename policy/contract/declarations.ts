import { PRODUCT } from "./product";

/**
 * Declared documents. On a first preview the engine hands the pack every JSON-document input
 * (IAM policies, container definitions) as one unknown string: the provider's Check stringifies it,
 * and anything unknown inside (every ARN) makes the whole string unknown. So each document the rules
 * judge is also declared beside its resource, as the input of a component resource of this type.
 * A component's inputs are not checked by any provider: the engine keeps them as objects, and only
 * the leaves built from unknown outputs are unknown. The rules read the declaration when the
 * resource's own document is unknown; `declared-documents-match` holds the two equal once both are
 * known (a later preview, and `up`).
 */
export const DECLARED_DOCUMENT_TYPE = `${PRODUCT}:policy:DeclaredDocument`;

/** The inputs of a DeclaredDocument component. */
export interface DeclaredDocumentProps {
  /** Logical name of the resource whose input is declared; a sibling (same parent). */
  resource: string;
  /** Its Pulumi type token. */
  resourceType: string;
  /** The input declared: `policy`, `assumeRolePolicy` or `containerDefinitions`. */
  property: string;
  /** The document as the program builds it (an object; the resource gets the same value). */
  document: unknown;
}
