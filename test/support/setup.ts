import { afterEach } from 'vitest';
import { removeTempDirs } from './temp-dirs.js';

// A setup file runs for each test file, also where the unit tier reuses one process for many (isolate: false).
afterEach(removeTempDirs);
