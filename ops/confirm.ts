/**
 * Whether a command that changes state may go ahead. On a terminal it asks, and the default answer
 * is no; anywhere else it needs `--yes`. A prod stack asks for its name typed out, so a reflexive
 * "y" in the wrong terminal changes nothing: prod never defaults to acting.
 */
export interface ConfirmInput {
  /** What will happen, in one line ("move 12 messages from worker-dlq back to worker"). */
  action: string;
  stack: string;
  yes: boolean;
  tty: boolean;
  /** Asks the question on the terminal and resolves to the answer. */
  ask: (question: string) => Promise<string>;
}

export type Confirmation = { go: true } | { go: false; why: string };

/** The stacks where a bare "y" is not enough. */
export function isProduction(stack: string): boolean {
  return /^prod/i.test(stack);
}

export async function confirm(i: ConfirmInput): Promise<Confirmation> {
  if (i.yes) return { go: true };
  if (!i.tty) {
    return { go: false, why: `not a terminal: ${i.action} needs --yes${isProduction(i.stack) ? " (prod never defaults to acting)" : ""}` };
  }
  if (isProduction(i.stack)) {
    const answer = (await i.ask(`${i.action} on ${i.stack}. Type the stack name to go ahead: `)).trim();
    return answer === i.stack ? { go: true } : { go: false, why: `not confirmed (typed ${JSON.stringify(answer)}, not ${i.stack})` };
  }
  const answer = (await i.ask(`${i.action} on ${i.stack}. Go ahead? [y/N] `)).trim().toLowerCase();
  return answer === "y" || answer === "yes" ? { go: true } : { go: false, why: "not confirmed" };
}
