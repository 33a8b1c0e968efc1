// Writes schema/massgen-rl.schema.json from the zod config schema (run by `npm run build`).
import fs from 'node:fs';
import { z } from 'zod';
import { configSchema } from '../dist/config/schema.js';

const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' });
schema.title = 'massgen-rl configuration';
const out = new URL('../schema/massgen-rl.schema.json', import.meta.url);
const text = `${JSON.stringify(schema, null, 2)}\n`;
if (!fs.existsSync(out) || fs.readFileSync(out, 'utf8') !== text) fs.writeFileSync(out, text);
