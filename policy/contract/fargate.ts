/**
 * Fargate's valid task sizes: CPU units → memory (MiB), as AWS's table lists them. 256 CPU takes
 * exactly 512, 1024 or 2048; every other size a range in steps.
 */
export const FARGATE_SIZES: Readonly<Record<number, { readonly min: number; readonly max: number; readonly step: number; readonly only?: readonly number[] }>> = {
  256: { min: 512, max: 2048, step: 512, only: [512, 1024, 2048] },
  512: { min: 1024, max: 4096, step: 1024 },
  1024: { min: 2048, max: 8192, step: 1024 },
  2048: { min: 4096, max: 16_384, step: 1024 },
  4096: { min: 8192, max: 30_720, step: 1024 },
  8192: { min: 16_384, max: 61_440, step: 4096 },
  16_384: { min: 32_768, max: 122_880, step: 8192 },
};

/** The CPU units Fargate accepts, smallest first. */
export const FARGATE_CPU_UNITS: readonly number[] = Object.keys(FARGATE_SIZES).map(Number);

/** Why a CPU/memory pair is not a Fargate size, or undefined when it is. Pure. */
export function fargateSizeProblem(cpu: number, memoryMb: number): string | undefined {
  const size = FARGATE_SIZES[cpu];
  if (!size) return `cpu ${cpu} is not a Fargate size (${FARGATE_CPU_UNITS.join(", ")})`;
  if (size.only) return size.only.includes(memoryMb) ? undefined : `memory ${memoryMb} MiB does not fit cpu ${cpu}: one of ${size.only.join(", ")} MiB`;
  const ok = memoryMb >= size.min && memoryMb <= size.max && (memoryMb - size.min) % size.step === 0;
  return ok ? undefined : `memory ${memoryMb} MiB does not fit cpu ${cpu}: ${size.min}..${size.max} MiB in steps of ${size.step}`;
}
