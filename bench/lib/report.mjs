import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const MB = 1024 * 1024;

/** One line of the human summary: a figure, its unit, and optionally the ceiling it should stay under. */
export function headline(label, value, unit, maxTarget) {
  const line = { label, value, unit };
  if (maxTarget !== undefined) Object.assign(line, { target: `<= ${maxTarget}`, ok: value <= maxTarget });
  return line;
}

export function environment() {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemMb: Math.round(os.totalmem() / MB),
    tmpdir: os.tmpdir(),
  };
}

/** Peak resident set size of this process so far, in MB (kernel high-water mark). */
export function peakRssMb() {
  return process.resourceUsage().maxRSS / 1024;
}

export function writeResult(outFile, result) {
  const body = { ...result, environment: environment(), peakRssMb: peakRssMb() };
  if (outFile) {
    fs.mkdirSync(path.dirname(outFile), { recursive: true });
    fs.writeFileSync(outFile, `${JSON.stringify(body, null, 2)}\n`);
  } else {
    process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
  }
}

/** Progress goes to stderr so stdout stays free for machine output. */
export function progress(message) {
  process.stderr.write(`  ${message}\n`);
}
