import { z } from 'zod';
import { filePath, name } from '../fields.js';

export const projectSchema = z.strictObject({
  name: name.default('massgen-rl'),
  data_dir: filePath().default('.massgen-rl').describe('relative to the config file'),
});
