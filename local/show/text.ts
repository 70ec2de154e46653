/**
 * Styled text for the terminal (local/show/view.ts, summary.ts): runs of text with one style each,
 * cut to a width without cutting an escape, painted only when asked, and a caller's strings cleaned
 * of escapes and control characters.
 */

export type Style = "red" | "green" | "yellow" | "bold" | "dim";

const SGR: Record<Style, string> = { red: "31", green: "32", yellow: "33", bold: "1", dim: "2" };

/** A run of text with one style; lines are built from these so truncation never cuts an escape. */
export interface Seg {
  text: string;
  style?: Style;
}

// CSI sequences (colours, cursor moves) and OSC sequences (titles, links) a caller might pass in.
// eslint-disable-next-line no-control-regex
export const ESCAPES = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x1f\x7f]/g;

/**
 * Strips escapes and turns control characters (newlines, tabs) into spaces: a caller's string must
 * not add a line to the block (the redraw would then move up too little) nor colour a plain log.
 */
export function clean(text: string): string {
  return text.replace(ESCAPES, "").replace(CONTROLS, " ");
}

/** Visible width in columns. Counts code points: every glyph used here is one column wide. */
export function widthOf(text: string): number {
  return [...text].length;
}

export function padEnd(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - widthOf(text)));
}

export function padStart(text: string, width: number): string {
  return " ".repeat(Math.max(0, width - widthOf(text))) + text;
}

/** Cuts segments to `width` columns, marking the cut with an ellipsis, so a line never wraps. */
export function fit(segs: Seg[], width: number): Seg[] {
  const total = segs.reduce((n, s) => n + widthOf(s.text), 0);
  if (total <= width) return segs;
  if (width <= 0) return [];
  const out: Seg[] = [];
  let room = width - 1;
  for (const seg of segs) {
    if (room <= 0) break;
    const chars = [...seg.text];
    out.push({ ...seg, text: chars.slice(0, room).join("") });
    room -= Math.min(room, chars.length);
  }
  out.push({ text: "…" });
  return out;
}

export function paint(segs: Seg[], color: boolean): string {
  return segs.map((s) => (color && s.style && s.text ? `\x1b[${SGR[s.style]}m${s.text}\x1b[0m` : s.text)).join("");
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
