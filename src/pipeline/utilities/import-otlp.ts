import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { ingestSpans, type IngestResult } from '../../telemetry/otlp-ingest.js';
import { OtlpRequestError, readTraceRequest, type OtlpSpan } from '../../telemetry/otlp-read.js';

/** The largest export file read (a larger one is refused before it is read). */
export const MAX_OTLP_FILE_BYTES = 64 * 1024 * 1024;
const PROTOBUF = /\.(pb|binpb|protobuf)$/i;
const JSON_FILE = /\.(json|jsonl|ndjson)$/i;

/** The export files of `--otlp PATH`: the file itself, or a directory's OTLP files in name order. */
function exportFiles(p: string): string[] {
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch {
    throw new UserError(`--otlp ${p}: no such file or directory`);
  }
  if (st.isFile()) return [p];
  if (!st.isDirectory()) throw new UserError(`--otlp ${p}: not a regular file or a directory`);
  const files = fs
    .readdirSync(p)
    .filter((f) => PROTOBUF.test(f) || JSON_FILE.test(f))
    .sort()
    .map((f) => path.join(p, f))
    .filter((f) => fs.statSync(f).isFile());
  if (!files.length) throw new UserError(`--otlp ${p}: no OTLP export files (*.json, *.jsonl, *.pb, *.binpb) in it`);
  return files;
}

/** One file's spans: a protobuf request, an OTLP/JSON request, or JSON lines of requests (the Collector's file exporter). */
function readExportFile(file: string): OtlpSpan[] {
  const st = fs.statSync(file);
  if (!st.isFile()) throw new UserError(`--otlp ${file}: not a regular file`);
  if (st.size > MAX_OTLP_FILE_BYTES)
    throw new UserError(
      `--otlp ${file}: ${st.size} bytes, over the limit of ${MAX_OTLP_FILE_BYTES} bytes`,
      'split the export into smaller files',
    );
  const body = fs.readFileSync(file);
  const where = (line?: number) => `${file}${line === undefined ? '' : `:${line}`}`;
  try {
    if (PROTOBUF.test(file)) return readTraceRequest(body, 'application/x-protobuf');
    const text = body.toString('utf8').trim();
    if (!text.includes('\n')) return readTraceRequest(Buffer.from(text), 'application/json');
    return text.split('\n').flatMap((line, i) => {
      if (!line.trim()) return [];
      try {
        return readTraceRequest(Buffer.from(line), 'application/json');
      } catch (err) {
        throw new UserError(`${where(i + 1)}: ${(err as Error).message}`);
      }
    });
  } catch (err) {
    if (err instanceof OtlpRequestError) throw new UserError(`${where()}: ${err.message}`);
    throw err;
  }
}

/**
 * `traces import --otlp FILE|DIR`: exported OTLP spans (any instrumented agent's) as rollouts of captured traffic,
 * as the gateway's POST /v1/traces stores them. Every file is read and checked first; a bad one stores nothing.
 */
export async function importOtlp(rt: Runtime, p: string): Promise<IngestResult & { files: number; received: number }> {
  const files = exportFiles(p);
  const spans = files.flatMap(readExportFile);
  const store = rt.store();
  try {
    return { files: files.length, received: spans.length, ...(await ingestSpans(store, spans)) };
  } catch (err) {
    if (err instanceof OtlpRequestError) throw new UserError(`--otlp ${p}: ${err.message}`);
    throw err;
  }
}
