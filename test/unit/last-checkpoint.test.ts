import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastCheckpoint } from '../../src/trainers/resume.js';
import { tempDir } from '../helpers.js';

describe('lastCheckpoint', () => {
  it('passes over a checkpoint whose trainer state a full disk or a kill cut short, to the newest whole one', () => {
    const out = tempDir({
      'checkpoint-1/trainer_state.json': '{"global_step": 1}',
      'checkpoint-2/trainer_state.json': '{"global_step": 2, "log_history": []}',
      'checkpoint-3/trainer_state.json': '',
      'checkpoint-4/trainer_state.json': '{"global_step": 4, "log_hi',
      'checkpoint-5/adapter_model.safetensors': 'x',
      'checkpoint-x/trainer_state.json': '{"global_step": 9}',
    });
    expect(lastCheckpoint(out)).toBe(path.join(out, 'checkpoint-2'));
    fs.writeFileSync(path.join(out, 'checkpoint-4', 'trainer_state.json'), '{"global_step": 4}');
    expect(lastCheckpoint(out)).toBe(path.join(out, 'checkpoint-4'));
  });

  it('finds none in a folder without a whole one, or no folder', () => {
    const out = tempDir({ 'checkpoint-1/trainer_state.json': '{}' });
    expect(lastCheckpoint(out)).toBeUndefined();
    expect(lastCheckpoint(path.join(out, 'missing'))).toBeUndefined();
  });
});
