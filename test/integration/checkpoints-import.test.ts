import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { Store } from '../../src/store/index.js';
import { hasStack, runCli, tempDir } from '../helpers.js';

/** A safetensors file holding zero-filled float32 tensors of these shapes. */
function safetensors(file: string, shapes: Record<string, number[]>): void {
  let offset = 0;
  const header: Record<string, unknown> = {};
  for (const [name, shape] of Object.entries(shapes)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.concat([len, json, Buffer.alloc(offset)]));
}

const BASE = { model_type: 'llama', hidden_size: 8, intermediate_size: 16, num_hidden_layers: 2, vocab_size: 32 };

/** An adapter whose LoRA A matrices read `width` inputs (8 fits the base; anything else does not). */
function adapter(dir: string, width = 8): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 2 }));
  const pre = 'base_model.model.model.layers.0';
  safetensors(path.join(dir, 'adapter_model.safetensors'), {
    [`${pre}.self_attn.q_proj.lora_A.weight`]: [2, width],
    [`${pre}.self_attn.q_proj.lora_B.weight`]: [8, 2],
    [`${pre}.mlp.down_proj.lora_A.weight`]: [2, 16],
  });
  return dir;
}

/** A project whose production serves a base model `smol`, with one trained checkpoint on it. */
function project() {
  const dir = tempDir({ 'massgen-rl.yaml': 'project: { name: import-test }\n' });
  const data = path.join(dir, '.massgen-rl');
  const baseDir = path.join(dir, 'base-model');
  fs.mkdirSync(baseDir);
  fs.writeFileSync(path.join(baseDir, 'config.json'), JSON.stringify(BASE));
  const store = Store.open({ path: path.join(data, 'store.sqlite') });
  const base = store.resources.add({ kind: 'weight', name: 'smol', path: baseDir });
  store.resources.setProduction(base, 'deploy', 'base');
  const trained = registerCheckpoint(store, {
    path: adapter(path.join(data, 'checkpoints', 'c1')),
    algo: 'sft',
    adapter: true,
    baseModel: 'resource:smol',
    baseResourceId: base.id,
  });
  store.close();
  const cli = (...args: string[]) => runCli(args, { cwd: dir });
  const stored = () => {
    const s = Store.open({ path: path.join(data, 'store.sqlite') });
    try {
      return { checkpoints: s.checkpoints.list({ limit: 50 }), weights: s.resources.list('weight') };
    } finally {
      s.close();
    }
  };
  return { dir, data, baseDir, parent: trained.checkpoint.id, cli, stored };
}

describe('massgen-rl checkpoints import', () => {
  it("registers an adapter trained elsewhere as the next version of production's line, on a copy of its files", async () => {
    const p = project();
    const elsewhere = adapter(path.join(p.dir, 'from-gpu', 'final'));
    const r = await p.cli('--json', 'checkpoints', 'import', elsewhere, '--algo', 'sft');
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      checkpoint: { id: string; algo: string; parentId: string | null; baseModel: string; path: string };
      resource: { name: string; version: number; path: string; metadata: Record<string, unknown> };
    };
    expect(out.resource).toMatchObject({ name: 'smol', version: 3 });
    expect(out.resource.metadata).toMatchObject({ adapter: true, base_path: p.baseDir, imported_from: elsewhere });
    expect(out.checkpoint).toMatchObject({ algo: 'sft', parentId: null, baseModel: 'resource:smol@1' });
    expect(out.checkpoint.path.startsWith(path.join(p.data, 'imports'))).toBe(true);
    fs.rmSync(elsewhere, { recursive: true });
    expect(fs.readdirSync(out.checkpoint.path).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const shown = await p.cli('checkpoints', 'show', out.checkpoint.id);
    expect(shown.stdout).toContain(`imported     ${elsewhere}`);
  });

  it('continues a checkpoint named with --from: the parent is recorded and the base is its base', async () => {
    const p = project();
    const r = await p.cli('checkpoints', 'import', adapter(path.join(p.dir, 'next')), '--from', p.parent);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/as checkpoint ck_\w+: smol v3 \(adapter, copied to /);
    expect(r.stdout).toMatch(/next: massgen-rl eval --candidate ck_\w+/);
    const ck = p.stored().checkpoints[0]!;
    expect(ck).toMatchObject({ parentId: p.parent, algo: 'imported', baseModel: p.parent });
  });

  it('refuses what does not fit its base, or is no model, with exit 2 and nothing stored', async () => {
    const p = project();
    const before = p.stored();
    const cases: [string[], RegExp][] = [
      [
        [adapter(path.join(p.dir, 'wide'), 12)],
        /does not fit its base model: .*q_proj\.lora_A\.weight reads 12 inputs/,
      ],
      [[path.join(p.dir, 'nowhere')], /no folder at/],
      [[p.baseDir, '--from', 'resource:other'], /--from: unknown weight resource "other"/],
      [[p.baseDir, '--from', 'ck_zz9'], /--from ck_zz9: no checkpoint with this id/],
      [[p.dir], /holds neither adapter_config.json \(a LoRA adapter\) nor config.json/],
    ];
    fs.mkdirSync(path.join(p.dir, 'model'));
    fs.writeFileSync(path.join(p.dir, 'model', 'config.json'), JSON.stringify({ ...BASE, hidden_size: 4 }));
    safetensors(path.join(p.dir, 'model', 'model.safetensors'), { w: [4, 4] });
    cases.push([[path.join(p.dir, 'model')], /not its base's architecture: hidden_size 4, the base's 8/]);
    for (const [args, message] of cases) {
      const r = await p.cli('checkpoints', 'import', ...args);
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(p.stored()).toEqual(before);
    expect(fs.existsSync(path.join(p.data, 'imports'))).toBe(false);
  });
});
